"""A consumer catching up reads what is no longer in the shard's cache of recent objects from
the store, and each fetch's next batches are read and laid out ahead of it (fetch read-ahead).
Every record must arrive once, in order, with its offset, on both local layouts; a
read_committed consumer must still skip aborted transactions."""

import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import free_port, metric_value, scrape_metrics

PARTITIONS = 4
RECORDS = 24_000


def read_ahead_hits(metrics_port):
    hits = metric_value(scrape_metrics(metrics_port), "shoal_fetch_read_ahead_hits_total")
    assert hits is not None, "shoal_fetch_read_ahead_hits_total is not exported"
    return int(hits)


def catching_up_broker(make_broker, layout):
    metrics_port = free_port()
    # A cache of recent objects far smaller than what is produced: the consumer reads the
    # store, as one reading days-old data would.
    config = (f'metrics_listen = "127.0.0.1:{metrics_port}"\n'
              f'[object_store]\nlocal_layout = "{layout}"\n'
              f"[fetch]\ncache_max_bytes = 262144\n")
    return make_broker(layout, config).start(), metrics_port


def create_topic(bootstrap, name):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, num_partitions=PARTITIONS)]).values():
        future.result(timeout=15)


def read_everything(bootstrap, topic, expected, isolation="read_uncommitted", timeout_s=60):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"catch-up-{isolation}",
                         "enable.auto.commit": False, "isolation.level": isolation,
                         # Small fetches: many of them, each read ahead of the one after.
                         "max.partition.fetch.bytes": 65536, "fetch.max.bytes": 262144,
                         "message.max.bytes": 262144})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = {p: [] for p in range(PARTITIONS)}
    count = 0
    deadline = time.time() + timeout_s
    while count < expected and time.time() < deadline:
        for m in consumer.consume(1000, 0.5):
            assert m.error() is None, m.error()
            got[m.partition()].append((m.offset(), m.value()))
            count += 1
    # Nothing more than expected arrives.
    extra = consumer.consume(1000, 1.0)
    consumer.close()
    assert not [m for m in extra if m.error() is None], "records past the expected ones"
    return got


@pytest.mark.parametrize("layout", ["files", "segments"])
def test_a_consumer_catching_up_reads_every_record_once_in_order(make_broker, layout):
    broker, metrics_port = catching_up_broker(make_broker, layout)
    create_topic(broker.bootstrap, "backlog")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all",
                         "linger.ms": 5, "batch.size": 32768})
    sent = {p: [] for p in range(PARTITIONS)}
    for i in range(RECORDS):
        value = f"{i:08d}".encode() * 128  # 1 KiB, every record its own
        p = i % PARTITIONS
        producer.produce("backlog", value=value, partition=p)
        sent[p].append(value)
        if i % 2000 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    got = read_everything(broker.bootstrap, "backlog", RECORDS)
    for p in range(PARTITIONS):
        offsets = [offset for offset, _ in got[p]]
        assert offsets == list(range(len(sent[p]))), f"partition {p}: offsets out of order"
        assert [value for _, value in got[p]] == sent[p], f"partition {p}: records differ"
    hits = read_ahead_hits(metrics_port)
    print(f"{layout}: {hits} partitions found laid out ahead")
    assert hits > 0


def test_read_ahead_keeps_aborted_transactions_out_of_read_committed(make_broker):
    broker, metrics_port = catching_up_broker(make_broker, "segments")
    create_topic(broker.bootstrap, "txn-backlog")
    producer = Producer({"bootstrap.servers": broker.bootstrap,
                         "transactional.id": "catch-up", "linger.ms": 5})
    producer.init_transactions(15)
    committed = {p: [] for p in range(PARTITIONS)}
    for round_ in range(12):
        producer.begin_transaction()
        keep = round_ % 3 != 1
        for i in range(1000):
            value = f"{round_:02d}-{i:06d}".encode() * 100
            p = i % PARTITIONS
            producer.produce("txn-backlog", value=value, partition=p)
            if keep:
                committed[p].append(value)
        producer.flush(30)
        if keep:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
    expected = sum(len(v) for v in committed.values())
    got = read_everything(broker.bootstrap, "txn-backlog", expected, "read_committed")
    for p in range(PARTITIONS):
        assert [value for _, value in got[p]] == committed[p], f"partition {p}"
    assert read_ahead_hits(metrics_port) > 0
