"""Transactions with real clients: confluent-kafka's transactional producer (commit, abort,
consume-transform-produce with send_offsets_to_transaction), read_committed consumers in
confluent-kafka and kafka-python, timeouts, fencing, and kill -9 mid-transaction."""

import subprocess
import threading
import time

import pytest
from confluent_kafka import (
    Consumer,
    KafkaError,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer
from kafka import TopicPartition as KpTopicPartition

from conftest import SHOAL_BIN


def create_topics(bootstrap, *names, partitions=3):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(n, num_partitions=partitions) for n in names])
    for future in futures.values():
        future.result(timeout=15)


def transactional_producer(bootstrap, transactional_id, **extra):
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": transactional_id,
            "linger.ms": 5,
            **extra,
        }
    )
    producer.init_transactions(15)
    return producer


def read(bootstrap, topic, partitions, isolation, expect, timeout_s=20, settle_s=1.5):
    """Every record a consumer with `isolation` sees from offset 0, as (partition, value);
    reads until `expect` arrived and then `settle_s` more, so extra records are caught."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}-{time.time()}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got = []
    deadline = time.time() + timeout_s
    settle_at = None
    while time.time() < deadline:
        if settle_at is None and len(got) >= expect:
            settle_at = time.time() + settle_s
        if settle_at is not None and time.time() > settle_at:
            break
        m = consumer.poll(0.2)
        if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
            continue
        assert m.error() is None, m.error()
        got.append((m.partition(), m.value().decode()))
    consumer.close()
    return got


def test_committed_records_are_read_and_aborted_ones_are_not(broker):
    create_topics(broker.bootstrap, "payments")
    producer = transactional_producer(broker.bootstrap, "payments-writer")
    producer.begin_transaction()
    for i in range(30):
        producer.produce("payments", value=f"committed-{i}", partition=i % 3)
    producer.commit_transaction(15)
    producer.begin_transaction()
    for i in range(20):
        producer.produce("payments", value=f"aborted-{i}", partition=i % 3)
    producer.flush(15)
    producer.abort_transaction(15)
    producer.begin_transaction()
    for i in range(10):
        producer.produce("payments", value=f"later-{i}", partition=i % 3)
    producer.commit_transaction(15)

    committed = read(broker.bootstrap, "payments", 3, "read_committed", 40)
    values = sorted(v for _, v in committed)
    assert values == sorted([f"committed-{i}" for i in range(30)] + [f"later-{i}" for i in range(10)])
    # read_uncommitted sees the aborted records too (never the markers).
    everything = read(broker.bootstrap, "payments", 3, "read_uncommitted", 60)
    assert len(everything) == 60
    assert sum(v.startswith("aborted-") for _, v in everything) == 20


def test_consume_transform_produce_commits_offsets_only_with_the_transaction(broker):
    create_topics(broker.bootstrap, "raw", "clean")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(90):
        plain.produce("raw", value=f"{i}", partition=i % 3)
    assert plain.flush(15) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "etl",
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe(["raw"])
    producer = transactional_producer(broker.bootstrap, "etl-writer")
    done = 0
    rounds = 0
    deadline = time.time() + 60
    while done < 90 and time.time() < deadline:
        messages = [m for m in consumer.consume(30, 1.0) if m.error() is None]
        if not messages:
            continue
        producer.begin_transaction()
        for m in messages:
            producer.produce("clean", value=f"clean-{m.value().decode()}", partition=m.partition())
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 15
        )
        rounds += 1
        if rounds == 1:
            # The first round is aborted: its output vanishes and its offsets are not
            # committed, so the same records are consumed again.
            producer.abort_transaction(15)
            firsts = {}
            for m in messages:
                firsts.setdefault(m.partition(), m.offset())
            for partition, offset in firsts.items():
                consumer.seek(TopicPartition("raw", partition, offset))
            continue
        producer.commit_transaction(15)
        done += len(messages)
    consumer.close()
    assert done == 90
    out = read(broker.bootstrap, "clean", 3, "read_committed", 90)
    assert sorted(v for _, v in out) == sorted(f"clean-{i}" for i in range(90))
    # The group's committed offsets are the ends of the input, committed by the transactions.
    check = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "etl"})
    committed = check.committed([TopicPartition("raw", p) for p in range(3)], timeout=10)
    check.close()
    assert [tp.offset for tp in committed] == [30, 30, 30]


def test_kafka_python_read_committed_stops_at_an_open_transaction(broker):
    create_topics(broker.bootstrap, "ledger", partitions=1)
    producer = transactional_producer(broker.bootstrap, "ledger-writer")
    producer.begin_transaction()
    for i in range(5):
        producer.produce("ledger", value=f"t{i}", partition=0)
    producer.flush(15)
    # Plain records after the open transaction's first offset wait behind it.
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(3):
        plain.produce("ledger", value=f"p{i}", partition=0)
    assert plain.flush(15) == 0

    def kp_read(isolation):
        c = KafkaConsumer(
            bootstrap_servers=broker.bootstrap,
            isolation_level=isolation,
            auto_offset_reset="earliest",
            consumer_timeout_ms=2000,
        )
        tp = KpTopicPartition("ledger", 0)
        c.assign([tp])
        values = [m.value.decode() for m in c]
        end = c.end_offsets([tp])[tp]
        c.close()
        return values, end

    assert kp_read("read_committed") == ([], 0)
    values, end = kp_read("read_uncommitted")
    assert (sorted(values), end) == (sorted(["t0", "t1", "t2", "t3", "t4", "p0", "p1", "p2"]), 8)
    producer.commit_transaction(15)
    values, end = kp_read("read_committed")
    assert (sorted(values), end) == (sorted(["t0", "t1", "t2", "t3", "t4", "p0", "p1", "p2"]), 9)


def test_a_second_producer_with_the_same_id_fences_the_first_and_aborts_its_transaction(broker):
    create_topics(broker.bootstrap, "fenced")
    first = transactional_producer(broker.bootstrap, "shared-id")
    first.begin_transaction()
    for i in range(10):
        first.produce("fenced", value=f"zombie-{i}", partition=i % 3)
    first.flush(15)
    second = transactional_producer(broker.bootstrap, "shared-id")
    second.begin_transaction()
    second.produce("fenced", value="live", partition=0)
    second.commit_transaction(15)
    with pytest.raises(KafkaException) as refused:
        first.commit_transaction(15)
    assert refused.value.args[0].fatal(), refused.value
    got = read(broker.bootstrap, "fenced", 3, "read_committed", 1)
    assert got == [(0, "live")]


def test_a_transaction_past_its_timeout_is_aborted_and_bad_timeouts_are_refused(broker):
    create_topics(broker.bootstrap, "slow")
    producer = transactional_producer(
        broker.bootstrap, "slow-writer", **{"transaction.timeout.ms": 2000}
    )
    producer.begin_transaction()
    for i in range(6):
        producer.produce("slow", value=f"late-{i}", partition=i % 3)
    producer.flush(15)
    time.sleep(4)
    with pytest.raises(KafkaException):
        producer.commit_transaction(15)
    assert read(broker.bootstrap, "slow", 3, "read_committed", 0) == []
    listed = subprocess.run(
        [SHOAL_BIN, "transactions", "--bootstrap", broker.bootstrap, "list"],
        capture_output=True, text=True, timeout=30,
    )
    assert "slow-writer" in listed.stdout and "CompleteAbort" in listed.stdout, listed
    # Longer than transaction.max.timeout.ms (15 minutes): refused at init.
    too_long = Producer(
        {
            "bootstrap.servers": broker.bootstrap,
            "transactional.id": "patient",
            "transaction.timeout.ms": 1_000_000,
        }
    )
    with pytest.raises(KafkaException) as refused:
        too_long.init_transactions(10)
    assert refused.value.args[0].code() == KafkaError.INVALID_TRANSACTION_TIMEOUT


def test_describe_and_list_show_an_open_transaction(broker):
    create_topics(broker.bootstrap, "shown")
    producer = transactional_producer(broker.bootstrap, "shown-writer")
    producer.begin_transaction()
    producer.produce("shown", value="x", partition=2)
    producer.flush(15)

    def cli(*args):
        result = subprocess.run(
            [SHOAL_BIN, "transactions", "--bootstrap", broker.bootstrap, *args],
            capture_output=True, text=True, timeout=30,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout

    assert "Ongoing" in cli("list")
    # DescribeProducers shows where the open transaction starts (what finds hanging ones).
    from kafka import KafkaAdminClient

    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    states = kp.describe_producers([KpTopicPartition("shown", 2)])
    kp.close()
    text = str(list(states.values())[0]).replace(" ", "")
    assert "current_transaction_start_offset=0" in text, text
    described = cli("describe", "shown-writer", "nobody")
    assert "state Ongoing" in described and "partitions [shown-2]" in described, described
    assert "nobody: error 105" in described  # TRANSACTIONAL_ID_NOT_FOUND
    producer.commit_transaction(15)
    assert "CompleteCommit" in cli("describe", "shown-writer")


def kp_end_offsets(bootstrap, topic, partitions, isolation):
    c = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level=isolation)
    tps = [KpTopicPartition(topic, p) for p in range(partitions)]
    ends = c.end_offsets(tps)
    c.close()
    return [ends[tp] for tp in tps]


def test_an_open_transaction_survives_kill_9_and_commits_after_the_restart(broker):
    create_topics(broker.bootstrap, "durable")
    producer = transactional_producer(broker.bootstrap, "durable-writer")
    producer.begin_transaction()
    for i in range(30):
        producer.produce("durable", value=f"kept-{i}", partition=i % 3)
    producer.flush(15)  # acknowledged: on disk, in an open transaction
    broker.kill()
    broker.start()
    producer.commit_transaction(30)
    got = read(broker.bootstrap, "durable", 3, "read_committed", 30)
    assert sorted(v for _, v in got) == sorted(f"kept-{i}" for i in range(30))


def test_kill_9_mid_transactions_leaves_each_whole_or_gone(broker):
    """Transactions of one record per partition run in a loop while the broker is killed -9
    and restarted: afterwards every transaction is all there or not there at all, every
    commit the client saw succeed is there, and the last stable offset catches up (the open
    one is aborted when its 3 s timeout passes, or committed if the client finished it)."""
    create_topics(broker.bootstrap, "atomic")
    producer = transactional_producer(
        broker.bootstrap, "atomic-writer", **{"transaction.timeout.ms": 3000}
    )
    committed = []
    stop = threading.Event()

    def loop():
        n = 0
        while not stop.is_set():
            try:
                producer.begin_transaction()
                for p in range(3):
                    producer.produce("atomic", value=f"{n}-{p}", partition=p)
                producer.commit_transaction(10)
                committed.append(n)
            except KafkaException as e:
                if e.args[0].fatal():
                    return
                try:
                    producer.abort_transaction(10)
                except KafkaException:
                    return
            n += 1

    writer = threading.Thread(target=loop)
    writer.start()
    time.sleep(2)
    broker.kill()
    broker.start()
    time.sleep(3)
    stop.set()
    writer.join(60)
    assert committed, "some transactions committed before the kill"

    def settled():
        return kp_end_offsets(broker.bootstrap, "atomic", 3, "read_committed") == kp_end_offsets(
            broker.bootstrap, "atomic", 3, "read_uncommitted"
        )

    deadline = time.time() + 20
    while not settled():
        assert time.time() < deadline, "the last stable offset never caught up"
        time.sleep(0.5)
    got = read(broker.bootstrap, "atomic", 3, "read_committed", len(committed) * 3, settle_s=2)
    by_transaction = {}
    for partition, value in got:
        n, p = value.split("-")
        assert int(p) == partition
        by_transaction.setdefault(int(n), set()).add(partition)
    assert all(parts == {0, 1, 2} for parts in by_transaction.values()), by_transaction
    assert set(committed) <= set(by_transaction), set(committed) - set(by_transaction)
    assert "panicked" not in broker.log()
    print(f"{len(committed)} commits acknowledged, {len(by_transaction)} transactions visible")


def test_offsets_pending_in_a_transaction_are_unstable_for_read_committed_consumers(broker):
    """KIP-447: a read_committed consumer asks for stable offsets and is told to wait while a
    transaction holds offsets for its group; a read_uncommitted one sees the last commit."""
    create_topics(broker.bootstrap, "in", partitions=1)
    producer = transactional_producer(broker.bootstrap, "pending-offsets")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "stable",
                         "isolation.level": "read_committed"})
    producer.begin_transaction()
    producer.send_offsets_to_transaction(
        [TopicPartition("in", 0, 42)], consumer.consumer_group_metadata(), 15)
    with pytest.raises(KafkaException) as waited:
        consumer.committed([TopicPartition("in", 0)], timeout=3)
    assert waited.value.args[0].code() in (
        KafkaError.UNSTABLE_OFFSET_COMMIT, KafkaError._TIMED_OUT), waited.value
    loose = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "stable",
                      "isolation.level": "read_uncommitted"})
    assert loose.committed([TopicPartition("in", 0)], timeout=10)[0].offset < 0
    producer.commit_transaction(15)
    assert consumer.committed([TopicPartition("in", 0)], timeout=10)[0].offset == 42
    consumer.close()
    loose.close()


def test_kafka_pythons_transactional_producer_commits_and_aborts(broker):
    from kafka import KafkaProducer

    create_topics(broker.bootstrap, "kp-tx")
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, transactional_id="kp-writer")
    producer.init_transactions()
    producer.begin_transaction()
    for i in range(12):
        producer.send("kp-tx", value=f"kept-{i}".encode(), partition=i % 3)
    producer.commit_transaction()
    producer.begin_transaction()
    for i in range(6):
        producer.send("kp-tx", value=f"dropped-{i}".encode(), partition=i % 3)
    producer.flush()
    producer.abort_transaction()
    producer.close()
    got = read(broker.bootstrap, "kp-tx", 3, "read_committed", 12)
    assert sorted(v for _, v in got) == sorted(f"kept-{i}" for i in range(12))
