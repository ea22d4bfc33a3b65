"""Transactions with real clients: confluent-kafka's transactional producer (commit, abort,
consume-transform-produce with send_offsets_to_transaction), read_committed consumers in
confluent-kafka and kafka-python, timeouts, fencing, and kill -9 mid-transaction."""

import signal
import time

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
