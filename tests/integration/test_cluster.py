"""Three brokers, one cluster: stateless brokers sharing one PostgreSQL database (the
coordinator's log and the membership table) and one S3 store (s3s-fs), both started by the
tests. Clients are steered to a broker with `shoal_az=<rack>` in their client.id, so a
producer writes through one broker while consumers read through the others."""

import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
import pytest

RACKS = ("a", "b", "c")


@pytest.fixture
def cluster(make_broker, postgres, s3_server):
    """Starts brokers 1..n in racks a, b, c on one database and one bucket."""
    database = postgres.new_database_config()

    def start(count=3):
        brokers = []
        for index in range(count):
            config = (f"node_id = {index + 1}\n"
                      f"{s3_server.broker_config()}{database}"
                      "[cluster]\nenabled = true\n"
                      f'rack = "{RACKS[index]}"\nheartbeat_ms = 200\nlease_ms = 1500\n')
            brokers.append(make_broker(f"node{index + 1}", extra_config=config).start())
        for broker in brokers:
            wait_for_brokers(broker.bootstrap, list(range(1, count + 1)), within=2)
        return brokers

    return start


def metadata_brokers(bootstrap, client_id="probe"):
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": client_id})
    return admin.list_topics(timeout=10)


def wait_for_brokers(bootstrap, node_ids, within):
    """Metadata lists exactly `node_ids` within `within` seconds (brokers read who is alive
    every heartbeat)."""
    deadline = time.time() + within
    while sorted(metadata_brokers(bootstrap).brokers) != node_ids:
        assert time.time() < deadline, f"{bootstrap} does not list {node_ids}"
        time.sleep(0.05)
    return time.time()


def produce(bootstrap, topic, count, zone):
    producer = Producer({"bootstrap.servers": bootstrap, "client.id": f"shoal_az={zone}",
                         "acks": "all", "enable.idempotence": True, "linger.ms": 5})
    acked = []

    def on_delivery(err, msg):
        assert err is None, err
        acked.append((msg.partition(), msg.offset(), msg.value()))

    for i in range(count):
        producer.produce(topic, value=f"v{i}".encode(), key=str(i).encode(),
                         on_delivery=on_delivery)
        if i % 500 == 0:
            producer.poll(0)
    assert producer.flush(30) == 0
    return acked


def consume(bootstrap, topic, partitions, zone, expected):
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": f"shoal_az={zone}",
                         "group.id": f"reader-{zone}", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = {}
    deadline = time.time() + 60
    while len(seen) < expected and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        seen[(m.partition(), m.offset())] = m.value()
    consumer.close()
    return seen


def test_metadata_lists_every_live_broker_with_its_rack_and_leads_a_zone_from_it(cluster):
    a, b, c = cluster()
    meta = metadata_brokers(a.bootstrap)
    assert sorted(meta.brokers) == [1, 2, 3]
    assert {meta.brokers[n].port for n in (1, 2, 3)} == {a.port, b.port, c.port}
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic("zoned", num_partitions=12)])["zoned"].result(10)
    # A client in zone b is sent to broker 2 for every partition, whichever broker it asks.
    for broker in (a, c):
        zoned = metadata_brokers(broker.bootstrap, "app,shoal_az=b").topics["zoned"]
        assert {p.leader for p in zoned.partitions.values()} == {2}
    # Without a zone, partitions are spread over all three.
    spread = metadata_brokers(a.bootstrap).topics["zoned"]
    assert {p.leader for p in spread.partitions.values()} == {1, 2, 3}


def test_records_produced_through_one_broker_are_read_identically_through_the_others(cluster):
    a, b, c = cluster()
    topic, partitions = "shared", 4
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    acked = produce(a.bootstrap, topic, 3000, zone="a")
    assert len(acked) == 3000
    expected = {(p, o): v for p, o, v in acked}
    through_b = consume(b.bootstrap, topic, partitions, "b", len(expected))
    through_c = consume(c.bootstrap, topic, partitions, "c", len(expected))
    assert through_b == expected
    assert through_c == expected


def test_a_topic_created_on_one_broker_takes_records_through_another_at_once(cluster):
    a, _, c = cluster()
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    started = time.time()
    admin.create_topics([NewTopic("fresh", num_partitions=2)])["fresh"].result(10)
    acked = produce(c.bootstrap, "fresh", 10, zone="c")
    assert len(acked) == 10
    assert time.time() - started < 10
    # Broker 3 wrote them: broker 1 serves them too.
    assert len(consume(a.bootstrap, "fresh", 2, "a", 10)) == 10


def test_a_broker_killed_is_gone_from_metadata_within_its_lease(cluster):
    a, _, c = cluster()
    c.kill()
    killed = time.time()
    # The lease (1.5 s) lapses, and the next heartbeat (0.2 s) reads it.
    gone = wait_for_brokers(a.bootstrap, [1, 2], within=1.5 + 0.2 + 1)
    print(f"broker 3 gone from Metadata {gone - killed:.2f} s after kill -9")
    # Restarted under its node id, it is listed again.
    c.start()
    wait_for_brokers(a.bootstrap, [1, 2, 3], within=2)
