"""Real Kafka clients (confluent-kafka, kafka-python, kcat) against the real broker."""

import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

BASE_TS = 1_700_000_000_000


@pytest.fixture(params=["local", "s3"])
def broker(request, tmp_path):
    """Every client test runs against the local store and against a real S3 server."""
    from conftest import Broker, S3Server

    s3 = None
    extra = ""
    if request.param == "s3":
        s3 = S3Server(tmp_path).start()
        extra = s3.broker_config()
    b = Broker(tmp_path / "broker", extra).start()
    yield b
    b.stop()
    if s3:
        s3.kill()
    assert "panicked" not in b.log(), b.log()


def create_topic(bootstrap, name, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, num_partitions=partitions)]).values():
        future.result(timeout=15)


def consume_all(bootstrap, topic, partitions, expected, timeout_s=30):
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.time() + timeout_s
    while len(got) < expected and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        got.append(m)
    consumer.close()
    return got


def test_confluent_produce_and_consume_10k_keyed_records_with_headers(broker):
    create_topic(broker.bootstrap, "orders", 4)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    reports = {}

    def on_delivery(err, msg):
        assert err is None, err
        reports[msg.key()] = (msg.partition(), msg.offset())

    sent = {}
    for i in range(10_000):
        key = f"key-{i}".encode()
        value = f"value-{i}".encode() * (1 + i % 7)
        headers = [("seq", str(i).encode()), ("kind", b"test")]
        sent[key] = (value, headers, BASE_TS + i)
        producer.produce(
            "orders",
            key=key,
            value=value,
            headers=headers,
            timestamp=BASE_TS + i,
            partition=i % 4,
            on_delivery=on_delivery,
        )
        if i % 1000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    assert len(reports) == 10_000

    for p in range(4):
        offsets = sorted(o for (part, o) in reports.values() if part == p)
        assert offsets == list(range(len(offsets))), f"partition {p} offsets are not 0..n-1"

    got = consume_all(broker.bootstrap, "orders", 4, 10_000)
    assert len(got) == 10_000
    for m in got:
        value, headers, ts = sent[m.key()]
        assert m.value() == value
        assert m.headers() == headers
        assert m.timestamp()[1] == ts
        assert (m.partition(), m.offset()) == reports[m.key()]


def test_kafka_python_round_trip(broker):
    # kafka-python 3 is an idempotent producer by default (InitProducerId + sequences).
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all")
    metas = [
        producer.send("kp-topic", key=f"k{i}".encode(), value=f"v{i}".encode(),
                      headers=[("h", b"1")], timestamp_ms=BASE_TS + i).get(timeout=15)
        for i in range(200)
    ]
    producer.close()
    assert [m.offset for m in metas] == list(range(200))

    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             consumer_timeout_ms=5000)
    tp = KpTopicPartition("kp-topic", 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    records = list(consumer)
    consumer.close()
    assert [(r.offset, r.key, r.value, r.timestamp) for r in records] == [
        (i, f"k{i}".encode(), f"v{i}".encode(), BASE_TS + i) for i in range(200)
    ]
    assert all(r.headers == [("h", b"1")] for r in records)


def test_kcat_produce_and_consume(broker):
    lines = "".join(f"k{i}:line {i}\n" for i in range(100))
    subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-P", "-t", "kcat-topic", "-K:", "-X", "acks=all"],
        input=lines.encode(), check=True, timeout=30,
    )
    out = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-C", "-t", "kcat-topic", "-o", "beginning", "-e",
         "-f", "%o %k %s\n"],
        check=True, capture_output=True, timeout=30,
    ).stdout.decode()
    assert out.splitlines() == [f"{i} k{i} line {i}" for i in range(100)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_each_compression_codec_round_trips(broker, codec):
    topic = f"compressed-{codec}"
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                         "compression.type": codec, "linger.ms": 20})
    values = [(f"record {i} " * 20).encode() for i in range(500)]
    for v in values:
        producer.produce(topic, value=v)
    assert producer.flush(30) == 0
    got = consume_all(broker.bootstrap, topic, 1, len(values))
    assert [m.value() for m in got] == values
    assert [m.offset() for m in got] == list(range(len(values)))
    # kcat (Debian's librdkafka) decodes the same stored batches.
    out = subprocess.run(
        ["kcat", "-b", broker.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-f", "%o\n"],
        check=True, capture_output=True, timeout=30,
    ).stdout.decode()
    assert out.split() == [str(i) for i in range(len(values))]


def test_a_waiting_consumer_gets_a_new_record_well_before_max_wait(broker):
    create_topic(broker.bootstrap, "tail", 1)
    max_wait_ms = 5000
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False,
                             fetch_max_wait_ms=max_wait_ms)
    tp = KpTopicPartition("tail", 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    consumer.poll(timeout_ms=1000)  # the consumer is now parked at the end of the partition
    arrived = {}

    def wait_for_record():
        deadline = time.time() + 20
        while time.time() < deadline and "at" not in arrived:
            for records in consumer.poll(timeout_ms=200).values():
                if records:
                    arrived["at"] = time.time()

    waiter = threading.Thread(target=wait_for_record)
    waiter.start()
    time.sleep(1.0)  # let the next fetch start long-polling
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    producer.produce("tail", value=b"wake up")
    sent_at = time.time()
    producer.flush(10)
    waiter.join()
    consumer.close()
    assert "at" in arrived, "the record never arrived"
    latency_ms = (arrived["at"] - sent_at) * 1000
    assert latency_ms < max_wait_ms / 2, f"record arrived after {latency_ms:.0f} ms"


def test_lone_messages_are_answered_and_delivered_without_waiting_for_the_interval(make_broker):
    """One message at a time with idle gaps, as librdkafka's test 0055 sends them: an idle broker
    writes each at once (group commit) rather than at the end of the commit interval, and a
    consumer long-polling partitions of every shard is woken by it, whichever shard wrote it."""
    interval_ms = 3000
    broker = make_broker("gaps", f"[produce]\ncommit_interval_ms = {interval_ms}\n").start()
    create_topic(broker.bootstrap, "gaps", 4)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "gaps",
                         "fetch.wait.max.ms": 10000, "enable.auto.commit": False})
    consumer.assign([TopicPartition("gaps", p, 0) for p in range(4)])
    consumer.poll(1.0)  # parked at the end of every partition
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(12):
        time.sleep(0.05)
        sent = time.time()
        producer.produce("gaps", value=f"m{i}".encode(), partition=i % 4)
        assert producer.flush(10) == 0
        answered_ms = (time.time() - sent) * 1000
        message = None
        while message is None and time.time() < sent + 12:
            message = consumer.poll(0.1)
        delivered_ms = (time.time() - sent) * 1000
        assert message is not None and message.value() == f"m{i}".encode()
        # Both far below the 3 s interval and the 10 s long poll, with room for a slow VM.
        assert answered_ms < interval_ms / 3, f"message {i} answered after {answered_ms:.0f} ms"
        assert delivered_ms < interval_ms / 3, f"message {i} delivered after {delivered_ms:.0f} ms"
    consumer.close()


def test_list_offsets_earliest_latest_and_by_timestamp(broker):
    create_topic(broker.bootstrap, "times", 1)
    # One batch of ten records: the lookup must find the record, not just its batch.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 200})
    for i in range(10):
        producer.produce("times", value=f"v{i}".encode(), timestamp=BASE_TS + 1000 * i)
    producer.flush(10)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lo"})
    low, high = consumer.get_watermark_offsets(TopicPartition("times", 0), timeout=10)
    assert (low, high) == (0, 10)
    wanted = [TopicPartition("times", 0, BASE_TS + 1000 * 4),
              TopicPartition("times", 0, BASE_TS + 1000 * 4 - 1),
              TopicPartition("times", 0, BASE_TS + 1000 * 100)]
    found = [consumer.offsets_for_times([tp], timeout=10)[0].offset for tp in wanted]
    consumer.close()
    assert found == [4, 4, -1]


@pytest.mark.parametrize("acks", ["0", "1"])
def test_acks_0_and_1_store_every_record(broker, acks):
    topic = f"acks-{acks}"
    create_topic(broker.bootstrap, topic, 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": acks})
    errors = []
    for i in range(300):
        producer.produce(topic, value=f"a{i}".encode(), partition=i % 2,
                         on_delivery=lambda err, msg: errors.append(err))
    assert producer.flush(15) == 0
    assert errors == [None] * 300
    got = consume_all(broker.bootstrap, topic, 2, 300)
    assert sorted(m.value() for m in got) == sorted(f"a{i}".encode() for i in range(300))


def test_the_default_relative_data_directory_works(tmp_path):
    """The README's front door: no config file, data in ./data under the working directory."""
    from conftest import SHOAL_BIN, free_port

    port = free_port()
    process = subprocess.Popen([SHOAL_BIN, "--listen", f"127.0.0.1:{port}"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        bootstrap = f"127.0.0.1:{port}"
        deadline = time.time() + 30
        while time.time() < deadline:
            produced = subprocess.run(["kcat", "-b", bootstrap, "-t", "front", "-P"],
                                      input=b"hello\n", capture_output=True, timeout=30)
            if produced.returncode == 0:
                break
            time.sleep(0.2)
        out = subprocess.run(["kcat", "-b", bootstrap, "-t", "front", "-C", "-e", "-q", "-o",
                              "beginning"], capture_output=True, timeout=30, check=True)
        assert out.stdout == b"hello\n"
        assert (tmp_path / "data" / "coordinator").is_dir()
    finally:
        process.terminate()
        output = process.communicate(timeout=30)[0].decode(errors="replace")
    assert process.returncode == 0, output
