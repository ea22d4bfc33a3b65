"""A connection's produce requests land in each partition in the order they were sent, even
when they queue behind full buffers, a tiny upload budget and full queues between shards, or
while the broker asks what a record's schema id stands for."""

import json
import struct
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from registry_helpers import start_registry_broker

# Small buffers rotate on size while a request waits for the one upload slot; a slow commit
# interval keeps buffers open so later requests could slip into them; two-slot queues between
# shards fill up, so forwarded requests wait for room too.
STRESS_CONFIG = """
[shards]
queue_depth = 2
[produce]
commit_interval_ms = 100
buffer_max_bytes = 16384
uploads_in_flight_max = 1
"""
PARTITIONS = 4
RECORDS = 20_000
SCHEMAS = 50


def produce_numbered(bootstrap, topic, records, partitions, prefix=lambda i: b""):
    """Many small requests in flight on one connection per broker, no retries, acks=all; value
    `i` is `prefix(i)`, then `i`."""
    producer = Producer({
        "bootstrap.servers": bootstrap,
        "acks": "all",
        "enable.idempotence": False,
        "retries": 0,
        "max.in.flight.requests.per.connection": 1000,
        "linger.ms": 0,
        "batch.num.messages": 20,
        "queue.buffering.max.messages": records + 1,
    })
    errors = []

    def on_delivery(err, msg):
        if err is not None:
            errors.append(err)

    for i in range(records):
        producer.produce(topic, value=prefix(i) + b"%09d" % i + b"x" * 200,
                         partition=i % partitions, on_delivery=on_delivery)
        producer.poll(0)
    assert producer.flush(60) == 0
    return errors


def read_partitions(bootstrap, topic, partitions, expected, timeout_s=60, prefix_len=0):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "order-check",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    by_partition = {p: [] for p in range(partitions)}
    got = 0
    deadline = time.time() + timeout_s
    while got < expected and time.time() < deadline:
        for m in consumer.consume(1000, 0.5):
            assert m.error() is None, m.error()
            number = m.value()[prefix_len:prefix_len + 9]
            by_partition[m.partition()].append((m.offset(), int(number)))
            got += 1
    consumer.close()
    return by_partition


def order_breaks(records):
    """Offsets whose record was sent before the record at the previous offset."""
    return [(offset, number) for (_, before), (offset, number) in zip(records, records[1:])
            if number < before]


@pytest.mark.parametrize("config", [STRESS_CONFIG, ""], ids=["stressed", "defaults"])
def test_pipelined_requests_keep_their_order_in_every_partition(make_broker, config):
    broker = make_broker(extra_config=config).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for f in admin.create_topics([NewTopic("ordered", num_partitions=PARTITIONS)]).values():
        f.result(timeout=15)

    errors = produce_numbered(broker.bootstrap, "ordered", RECORDS, PARTITIONS)
    assert errors == []
    assert_in_send_order(read_partitions(broker.bootstrap, "ordered", PARTITIONS, RECORDS))


def test_requests_checked_against_the_schema_registry_keep_their_order(make_broker):
    """Records name a new schema id every few hundred: the first requests with each id ask the
    coordinator what it stands for, and those sent after them must not pass them once the
    answer is remembered."""
    broker = start_registry_broker(make_broker)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = NewTopic("ordered", num_partitions=PARTITIONS,
                     config={"confluent.value.schema.validation": "true"})
    admin.create_topics([topic])["ordered"].result(timeout=15)
    registry = SchemaRegistryClient({"url": broker.registry_url})
    registry.set_compatibility("ordered-value", "NONE")
    ids = [registry.register_schema("ordered-value", Schema(json.dumps(
        {"type": "record", "name": f"R{n}", "fields": []}), "AVRO")) for n in range(SCHEMAS)]
    assert len(set(ids)) == SCHEMAS

    def prefix(i):
        # Confluent's wire format: magic byte 0, then the id (the data is not decoded here).
        return b"\0" + struct.pack(">i", ids[i * SCHEMAS // RECORDS])

    errors = produce_numbered(broker.bootstrap, "ordered", RECORDS, PARTITIONS, prefix)
    assert errors == []
    assert_in_send_order(read_partitions(broker.bootstrap, "ordered", PARTITIONS, RECORDS,
                                         prefix_len=5))


def assert_in_send_order(by_partition):
    for p, records in by_partition.items():
        assert len(records) == RECORDS // PARTITIONS, p
        assert [o for o, _ in records] == list(range(len(records))), p
        assert order_breaks(records) == [], f"partition {p} out of order"
        assert [n for _, n in records] == list(range(p, RECORDS, PARTITIONS)), p
