"""WAL objects in a real S3-compatible server (s3s-fs): the client tests, restart durability,
a killed, failing or stalling S3 server, multipart uploads, garbage collection."""

import json
import os
import subprocess
import sys
import time

from confluent_kafka import Producer

from conftest import S3_BUCKET
from fault_proxy import FaultProxy
from test_clients import consume_all, create_topic
from test_coordinator import read_all
from test_durability import PRODUCER_SCRIPT, consume_everything, read_acks

RESILIENT_PRODUCER = """
import json, sys, time
from confluent_kafka import Producer
bootstrap, topic, seconds, out_path = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
out = open(out_path, "w", buffering=1)
def on_delivery(err, msg):
    out.write(json.dumps([msg.value().decode(), None if err else [msg.partition(), msg.offset()],
                          err.name() if err else None]) + "\\n")
p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5, "retries": 0,
              "message.timeout.ms": 30000})
deadline, i = time.time() + seconds, 0
while time.time() < deadline:
    try:
        p.produce(topic, value=f"r{i}".encode(), on_delivery=on_delivery)
        i += 1
    except BufferError:
        pass
    p.poll(0.002)
p.flush(60)
out.write("DONE\\n")
"""

FAST_FAILING_S3 = """
first_byte_timeout_ms = 1000
request_timeout_ms = 2000
connect_timeout_ms = 500
"""


def test_clients_produce_and_consume_through_s3(make_broker, s3_server):
    broker = make_broker("s3", s3_server.broker_config()).start()
    create_topic(broker.bootstrap, "orders", 4)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 5})
    reports = {}
    for i in range(5000):
        producer.produce("orders", key=f"k{i}".encode(), value=f"v{i}".encode() * 3,
                         headers=[("seq", str(i).encode())], partition=i % 4,
                         timestamp=1_700_000_000_000 + i,
                         on_delivery=lambda err, msg: reports.__setitem__(
                             msg.key(), (err, msg.partition(), msg.offset())))
    assert producer.flush(60) == 0
    assert all(err is None for err, _, _ in reports.values())
    got = consume_all(broker.bootstrap, "orders", 4, 5000)
    assert len(got) == 5000
    for m in got:
        i = int(m.key()[1:])
        assert m.value() == f"v{i}".encode() * 3
        assert m.headers() == [("seq", str(i).encode())]
        assert (m.partition(), m.offset()) == reports[m.key()][1:]
    assert s3_server.objects(), "the WAL objects are in the bucket"
    assert not (broker.data_dir / "objects").exists(), "nothing is stored locally"


def test_restart_after_kill_9_with_s3_loses_no_acknowledged_record(make_broker, s3_server, tmp_path):
    broker = make_broker("s3-durable", s3_server.broker_config()).start()
    create_topic(broker.bootstrap, "durable", 2)
    acks_path = tmp_path / "acks.jsonl"
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER_SCRIPT, broker.bootstrap, "durable", str(acks_path)])
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(read_acks(acks_path)) < 3000:
            time.sleep(0.05)
        broker.kill()
    finally:
        producer.kill()
        producer.wait()
    acked = read_acks(acks_path)
    assert len(acked) >= 3000
    broker.start()
    stored, highs = consume_everything(broker.bootstrap, "durable", 2)
    for partition, offset, value in acked:
        assert stored.get((partition, offset)) == value


def run_producer_through(broker, topic, seconds, out_path, during):
    """Runs the resilient producer for `seconds`, calling `during()` meanwhile; returns the
    delivery reports as (value, position or None, error or None)."""
    producer = subprocess.Popen(
        [sys.executable, "-c", RESILIENT_PRODUCER, broker.bootstrap, topic, str(seconds),
         str(out_path)])
    try:
        during()
        assert producer.wait(timeout=seconds + 90) == 0
    finally:
        if producer.poll() is None:
            producer.kill()
    lines = out_path.read_text().splitlines()
    assert lines[-1] == "DONE"
    return [json.loads(line) for line in lines[:-1]]


def assert_acked_records_stored(broker, topic, partitions, reports):
    got, _ = read_all(broker.bootstrap, topic, partitions)
    stored = {(p, o): v for p, o, v in got}
    acked = [(value, tuple(pos)) for value, pos, err in reports if err is None]
    for value, position in acked:
        assert stored.get(position) == value, f"{value} acked at {position} but not stored"
    return acked


def produce_one(broker, topic):
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    result = []
    p.produce(topic, value=b"after", on_delivery=lambda err, msg: result.append(err))
    p.flush(30)
    return result


def test_s3_server_killed_during_load_then_back(make_broker, s3_server, tmp_path):
    broker = make_broker("s3-down", s3_server.broker_config(extra=FAST_FAILING_S3)).start()
    create_topic(broker.bootstrap, "outage", 2)

    def outage():
        time.sleep(1.5)
        s3_server.kill()
        time.sleep(3)
        s3_server.start()

    reports = run_producer_through(broker, "outage", 8, tmp_path / "out.jsonl", outage)
    failed = [err for _, _, err in reports if err]
    assert failed, "requests made while S3 was down got an error"
    assert set(failed) <= {"KAFKA_STORAGE_ERROR", "_MSG_TIMED_OUT"}, set(failed)
    acked = assert_acked_records_stored(broker, "outage", 2, reports)
    assert len(acked) > 100
    assert broker.process.poll() is None, "the broker kept running"
    assert produce_one(broker, "outage") == [None], "producing works again without a restart"


def test_s3_answering_500_or_stalling_is_survived(make_broker, s3_server, tmp_path):
    proxy = FaultProxy(s3_server.port)
    config = s3_server.broker_config(endpoint=proxy.endpoint, extra=FAST_FAILING_S3)
    broker = make_broker("s3-faults", config).start()
    create_topic(broker.bootstrap, "faults", 2)

    def faults():
        time.sleep(1.5)
        proxy.mode = FaultProxy.ERROR_500
        time.sleep(2)
        proxy.mode = FaultProxy.PASS
        time.sleep(1.5)
        proxy.mode = FaultProxy.STALL
        time.sleep(2.5)
        proxy.mode = FaultProxy.PASS

    try:
        reports = run_producer_through(broker, "faults", 10, tmp_path / "out.jsonl", faults)
    finally:
        proxy.mode = FaultProxy.PASS
    failed = [err for _, _, err in reports if err]
    assert failed, "requests made during the faults got an error"
    acked = assert_acked_records_stored(broker, "faults", 2, reports)
    assert len(acked) > 100
    assert "HTTP 500" in broker.log() and "did not answer in time" in broker.log()
    assert produce_one(broker, "faults") == [None]
    proxy.close()


def test_a_start_waits_out_resets_and_503s_and_stops_at_once_on_a_missing_bucket(
        make_broker, s3_server):
    """The start-up check of the store is tried again, with backoff, on a reset connection or a
    503; only a definitive answer stops the broker at once (before, one reset stopped it)."""
    proxy = FaultProxy(s3_server.port)
    proxy.fail_next(FaultProxy.RESET, FaultProxy.SLOW_DOWN_503, FaultProxy.RESET)
    broker = make_broker("flaky", s3_server.broker_config(endpoint=proxy.endpoint)).start()
    assert proxy.faulted == 3
    log = broker.log()
    assert log.count("a start-up step failed for a passing reason") == 3, log
    assert "HTTP 503" in log
    assert produce_one(broker, "after-resets") == [None]

    missing = s3_server.broker_config(endpoint=proxy.endpoint).replace(
        f'bucket = "{S3_BUCKET}"', 'bucket = "no-such-bucket"')
    refused = make_broker("missing", missing)
    started = time.time()
    try:
        refused.start()
        raise AssertionError("a broker started on a bucket that does not exist")
    except RuntimeError as exited:
        assert "bucket no-such-bucket does not exist (HTTP 404)" in str(exited), str(exited)
    assert time.time() - started < 10, "a definitive answer is not tried again"
    assert "passing reason" not in refused.log()
    proxy.close()


def test_puts_are_bounded_by_the_commit_interval_whatever_the_shards(make_broker, s3_server):
    """On a store that bills each request nothing is written because the store is idle, and
    the broker's shards share one uploader: at low load, one PUT per commit interval at most,
    however many connections and shards the writes arrive on."""
    interval_ms = 500
    config = s3_server.broker_config() + f"[produce]\ncommit_interval_ms = {interval_ms}\n"
    broker = make_broker("s3-puts", config).start()
    create_topic(broker.bootstrap, "trickle", 4)
    producers = [Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                           "linger.ms": 0}) for _ in range(4)]
    for p in producers:  # connected before the count starts
        p.produce("trickle", value=b"warm-up", partition=0)
        assert p.flush(10) == 0
    before = len(s3_server.objects())
    started = time.time()
    sent = 0
    while time.time() - started < 3:
        for i, p in enumerate(producers):
            p.produce("trickle", value=f"r{sent}".encode(), partition=(sent + i) % 4)
            p.poll(0)
        sent += len(producers)
        time.sleep(0.01)  # some 300 records a second over four connections
    for p in producers:
        assert p.flush(30) == 0
    elapsed = time.time() - started
    objects = len(s3_server.objects()) - before
    assert objects <= elapsed * 1000 / interval_ms + 2, f"{objects} PUTs in {elapsed:.1f} s"
    assert len(consume_all(broker.bootstrap, "trickle", 4, sent + 4)) == sent + 4


def test_large_objects_are_uploaded_in_parts(make_broker, s3_server):
    config = s3_server.broker_config(extra="multipart_threshold_bytes = 1048576\n"
                                           "part_size_bytes = 5242880")
    config += "[produce]\ncommit_interval_ms = 1000\nrotate_when_idle = false\n"
    broker = make_broker("s3-multipart", config).start()
    create_topic(broker.bootstrap, "big", 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                         "linger.ms": 50, "message.max.bytes": 2_000_000})
    payload = os.urandom(100_000)
    for i in range(70):  # ~7 MB inside one commit interval: one object of two parts
        producer.produce("big", value=payload + i.to_bytes(4, "big"))
    assert producer.flush(60) == 0
    assert any(os.path.getsize(s3_server.root / "shoal" / "shoal-test" / "wal" / name) > 5 << 20
               for name in s3_server.objects()), "an object above the part size was written"
    got = consume_all(broker.bootstrap, "big", 1, 70)
    assert [m.value()[-4:] for m in got] == [i.to_bytes(4, "big") for i in range(70)]


def test_garbage_collection_and_orphans_in_s3(make_broker, s3_server):
    config = s3_server.broker_config() + (
        "[coordinator]\nretention_check_interval_ms = 200\nfile_cleaner_interval_ms = 200\n"
        "file_cleaner_grace_ms = 300\norphan_scan_interval_ms = 300\norphan_grace_ms = 1000\n")
    broker = make_broker("s3-gc", config).start()
    create_topic(broker.bootstrap, "trimmed", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(4):
        p.produce("trimmed", value=f"x{i}".encode())
        p.flush(10)
    before = s3_server.objects()
    assert len(before) >= 4
    from confluent_kafka import TopicPartition
    from confluent_kafka.admin import AdminClient
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.delete_records([TopicPartition("trimmed", 0, 4)]).values():
        assert f.result(10).low_watermark == 4
    orphan = s3_server.root / "shoal" / "shoal-test" / "wal" / "orphan-never-committed"
    orphan.write_bytes(b"left by a crash between upload and commit")
    old = time.time() - 3600
    os.utime(orphan, (old, old))
    deadline = time.time() + 20
    while time.time() < deadline and (set(before) & set(s3_server.objects()) or orphan.exists()):
        time.sleep(0.2)
    assert not set(before) & set(s3_server.objects()), "unreferenced objects were not deleted"
    assert not orphan.exists(), "the orphan was not collected"


def test_a_missing_object_fails_only_its_partition(make_broker, s3_server):
    broker = make_broker("s3-missing", s3_server.broker_config()).start()
    create_topic(broker.bootstrap, "holes", 2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    for partition in (0, 1):
        p.produce("holes", value=f"p{partition}".encode(), partition=partition)
        p.flush(10)
    # Restart so nothing is cached, then lose partition 0's object from the bucket.
    broker.stop()
    objects = s3_server.objects()
    assert len(objects) == 2
    broker.start()
    wal = s3_server.root / "shoal" / "shoal-test" / "wal"
    first = min(objects, key=lambda name: (wal / name).stat().st_mtime)
    (wal / first).unlink()
    got = consume_all(broker.bootstrap, "holes", 2, 1, timeout_s=10)
    assert [(m.partition(), m.value()) for m in got] == [(1, b"p1")]
    assert "cannot be served" in broker.log() and first in broker.log()
    assert broker.process.poll() is None
