"""Share groups (KIP-932) with librdkafka's share consumer (confluent-kafka's ShareConsumer):
members of one group split a partition's records, a record not acknowledged within its lock
goes to another member, and what was accepted is never delivered again after the broker is
killed with kill -9 (the share-partition state is in the coordinator's log). The Java
KafkaShareConsumer's tests (tests/java, ShareGroupTest) run on Apache Kafka too."""

import time

from kafka_wire import TAGS, Connection, compact_array, compact_string, flexible_response, request

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)

from test_groups import create_topic, produce

# Kafka's shortest record lock (group.share.min.record.lock.duration.ms).
SHORTEST_LOCK_MS = 15_000


def configure(bootstrap, group, **configs):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = [ConfigEntry(name.replace("_", "."), str(value),
                           incremental_operation=AlterConfigOpType.SET)
               for name, value in configs.items()]
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(10)


def share_consumer(bootstrap, group, topic, explicit=False, **config):
    """Subscribed to `topic`; `config` adds settings (client_id="..." for client.id)."""
    consumer = ShareConsumer({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "share.acknowledgement.mode": "explicit" if explicit else "implicit",
        **{name.replace("_", "."): value for name, value in config.items()},
    })
    consumer.subscribe([topic])
    return consumer


def listed_groups(bootstrap):
    """ListGroups v5 (no Python client here lists share groups): {group id: (type, state)}."""
    connection = Connection(bootstrap)
    connection.send(request(16, 5, 1, TAGS + compact_array([]) + compact_array([]) + TAGS))
    _, r = flexible_response(connection)
    connection.close()
    r.int("i")
    assert r.int("h") == 0

    def group(r):
        group_id, _protocol, state, kind = r.string(), r.string(), r.string(), r.string()
        r.tags()
        return group_id, (kind, state)

    return dict(r.array(group))


def described_share_group(bootstrap, group):
    """ShareGroupDescribe v1 of one group: (error code, state, member count)."""
    connection = Connection(bootstrap)
    body = compact_array([compact_string(group)]) + b"\x00" + TAGS
    connection.send(request(77, 1, 1, TAGS + body))
    _, r = flexible_response(connection)
    connection.close()
    r.int("i")
    assert r.uvarint() - 1 == 1
    error, _message, _group_id, state = r.int("h"), r.string(), r.string(), r.string()
    r.int("i"), r.int("i"), r.string()
    return error, state, r.uvarint() - 1


def poll_values(consumer, timeout=1.0):
    return [m for m in consumer.poll(timeout) if m.error() is None]


def test_two_share_consumers_split_one_partitions_records(make_broker):
    broker = make_broker().start()
    topic, group = "tasks", "workers"
    create_topic(broker.bootstrap, topic, 1)
    configure(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, 600, 1)
    consumers = [share_consumer(broker.bootstrap, group, topic) for _ in range(2)]
    got = [[], []]
    deadline = time.time() + 60
    while sum(map(len, got)) < 600 and time.time() < deadline:
        for i, consumer in enumerate(consumers):
            got[i].extend(m.value() for m in poll_values(consumer, 0.5))
    for consumer in consumers:
        consumer.close()
    assert not set(got[0]) & set(got[1]), "a record went to both members"
    assert sorted(got[0] + got[1]) == sorted(f"v{i}".encode() for i in range(600))


def test_a_record_not_acknowledged_in_time_goes_to_another_member(make_broker):
    broker = make_broker().start()
    topic, group = "jobs", "slow-and-fast"
    create_topic(broker.bootstrap, topic, 1)
    configure(broker.bootstrap, group, share_auto_offset_reset="earliest",
              share_record_lock_duration_ms=SHORTEST_LOCK_MS)
    produce(broker.bootstrap, topic, 5, 1)
    stuck = share_consumer(broker.bootstrap, group, topic, explicit=True)
    held = []
    deadline = time.time() + 30
    while len(held) < 5 and time.time() < deadline:
        held.extend(poll_values(stuck))
    assert len(held) == 5
    # `stuck` stays in the group (its client heartbeats) but never acknowledges.
    other = share_consumer(broker.bootstrap, group, topic, explicit=True)
    started = time.time()
    late = []
    while len(late) < 5 and time.time() < started + SHORTEST_LOCK_MS / 1000 + 30:
        for m in poll_values(other):
            late.append(m)
            other.acknowledge(m, AcknowledgeType.ACCEPT)
    waited = time.time() - started
    assert sorted(m.offset() for m in late) == [0, 1, 2, 3, 4]
    assert waited >= SHORTEST_LOCK_MS / 1000 - 1, f"handed over after {waited:.1f}s"
    other.commit_sync()
    other.close()
    stuck.close()


def test_accepted_records_are_not_delivered_again_after_kill_9(make_broker):
    broker = make_broker().start()
    topic, group = "orders", "fulfilment"
    create_topic(broker.bootstrap, topic, 1)
    configure(broker.bootstrap, group, share_auto_offset_reset="earliest")
    produce(broker.bootstrap, topic, 100, 1)
    first = share_consumer(broker.bootstrap, group, topic, explicit=True)
    got = []
    deadline = time.time() + 30
    while len(got) < 100 and time.time() < deadline:
        batch = poll_values(first)
        for m in batch:
            # Offsets below 40 are accepted, the others released: the released ones come
            # back, so polling goes on until each of the first 40 was accepted once.
            kind = AcknowledgeType.ACCEPT if m.offset() < 40 else AcknowledgeType.RELEASE
            first.acknowledge(m, kind)
        got.extend(m.offset() for m in batch if m.offset() < 40)
        if len(set(got)) == 40:
            break
    results = first.commit_sync()
    assert all(error is None for error in results.values()), results
    assert sorted(set(got)) == list(range(40))
    first.close()
    broker.kill()
    broker.start()
    # Listed and described from the log before any member is back, as Kafka lists it.
    assert listed_groups(broker.bootstrap).get(group) == ("share", "Empty")
    assert described_share_group(broker.bootstrap, group) == (0, "Empty", 0)
    second = share_consumer(broker.bootstrap, group, topic)
    after = []
    deadline = time.time() + 30
    while len(after) < 60 and time.time() < deadline:
        after.extend(m.offset() for m in poll_values(second))
    second.close()
    assert not [o for o in after if o < 40], "accepted records delivered after the restart"
    assert sorted(set(after)) == list(range(40, 100))


def test_read_committed_share_groups_never_deliver_aborted_records(make_broker):
    """The broker archives the aborted transactions' records as it hands them out (ShareFetch
    carries no list of aborted transactions). librdkafka also drops them itself when the abort
    marker comes in the same answer, so this checks what a member gets, not who dropped them;
    the archiving is checked in shards' share group tests."""
    broker = make_broker().start()
    topic, group = "payments", "settlers"
    create_topic(broker.bootstrap, topic, 1)
    configure(broker.bootstrap, group, share_auto_offset_reset="earliest",
              share_isolation_level="read_committed")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "payer"})
    producer.init_transactions(30)
    committed = set()
    for n, outcome in enumerate(["commit", "abort", "commit"]):
        producer.begin_transaction()
        for i in range(5):
            value = f"{outcome}-{n}-{i}".encode()
            producer.produce(topic, value=value, partition=0)
            if outcome == "commit":
                committed.add(value)
        if outcome == "commit":
            producer.commit_transaction(30)
        else:
            producer.abort_transaction(30)
    consumer = share_consumer(broker.bootstrap, group, topic)
    got = set()
    deadline = time.time() + 30
    while len(got) < 10 and time.time() < deadline:
        got.update(m.value() for m in poll_values(consumer))
    for _ in range(4):
        got.update(m.value() for m in poll_values(consumer, 0.5))
    consumer.close()
    assert got == committed
