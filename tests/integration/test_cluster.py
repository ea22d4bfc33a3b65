"""Three brokers, one cluster: stateless brokers sharing one PostgreSQL database (the
coordinator's log and the membership table) and one S3 store (s3s-fs), both started by the
tests. Clients are steered to a broker with `shoal_az=<rack>` in their client.id, so a
producer writes through one broker while consumers read through the others."""

import re
import subprocess
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
import pytest

from conftest import SHOAL_BIN, free_port
from kafka_wire import Connection, parse_produce_v3_error, produce_v3, record_batch, request
from test_durability import PRODUCER_SCRIPT, read_acks
from test_client_quotas import EXACT, Quotas
from test_dynamic_configs import DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, alter, described
from test_dynamic_configs import connections_admitted
from test_postgres_coordinator import assert_all_acknowledged_stored, wait_for_acks
from test_quota_enforcement import QUOTA, run_producers

RACKS = ("a", "b", "c")


@pytest.fixture
def cluster(make_broker, postgres, s3_server):
    """Starts brokers 1..n in racks a, b, c on one database and one bucket; `coordinator`
    adds keys to their [coordinator] sections, `sections` whole sections."""
    database = postgres.new_database_config()
    started = []

    def start(count=3, coordinator="", registry=False, sections=""):
        brokers = started
        for index in range(count):
            config = (f"node_id = {index + 1}\n"
                      f"{s3_server.broker_config()}{database}{coordinator}\n"
                      "[cluster]\nenabled = true\n"
                      f'rack = "{RACKS[index]}"\nheartbeat_ms = 200\nlease_ms = 1500\n'
                      f"{sections}")
            registry_port = free_port()
            if registry:
                config += f'[schema_registry]\nlisten = "127.0.0.1:{registry_port}"\n'
            broker = make_broker(f"node{index + 1}", extra_config=config)
            broker.registry_url = f"http://127.0.0.1:{registry_port}"
            brokers.append(broker.start())
        for broker in brokers:
            wait_for_brokers(broker.bootstrap, list(range(1, count + 1)), within=2)
        return brokers

    yield start
    # Before PostgreSQL and the S3 server go.
    for broker in started:
        broker.stop()


def metadata_brokers(bootstrap, client_id="probe"):
    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": client_id})
    return admin.list_topics(timeout=10)


def metadata_listing(bootstrap, node_ids, within):
    """The first Metadata answer that lists exactly `node_ids`, within `within` seconds
    (brokers read who is alive every heartbeat)."""
    deadline = time.time() + within
    while sorted((meta := metadata_brokers(bootstrap)).brokers) != node_ids:
        assert time.time() < deadline, f"{bootstrap} does not list {node_ids}"
        time.sleep(0.05)
    return meta


def wait_for_brokers(bootstrap, node_ids, within):
    """When Metadata first lists exactly `node_ids`, within `within` seconds."""
    metadata_listing(bootstrap, node_ids, within)
    return time.time()


def leaders_within(bootstrap, client_id, topic, within):
    """The leaders Metadata names for `topic`'s partitions once all three brokers are in the
    view it was answered from (or as they are after `within` seconds)."""
    deadline = time.time() + within
    while True:
        meta = metadata_brokers(bootstrap, client_id)
        leaders = {p.leader for p in meta.topics[topic].partitions.values()}
        if sorted(meta.brokers) == [1, 2, 3] or time.time() > deadline:
            return leaders
        time.sleep(0.05)


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
    # On a loaded 2-core machine a broker's 1.5 s lease can lapse for a moment (a slow
    # PostgreSQL commit): each view below is looked for again within 5 s before it fails.
    meta = metadata_listing(a.bootstrap, [1, 2, 3], within=5)
    assert {meta.brokers[n].port for n in (1, 2, 3)} == {a.port, b.port, c.port}
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    # Enough partitions that each of three brokers wins some whatever the topic's random id
    # (all but one: odds 3 x (2/3)^60, about 1e-10).
    admin.create_topics([NewTopic("zoned", num_partitions=60)])["zoned"].result(10)
    # A client in zone b is sent to broker 2 for every partition, whichever broker it asks.
    for broker in (a, c):
        assert leaders_within(broker.bootstrap, "app,shoal_az=b", "zoned", 5) == {2}
    # Without a zone, partitions are spread over all three.
    assert leaders_within(a.bootstrap, "probe", "zoned", 5) == {1, 2, 3}
    # The operator's view: every live broker with its address and rack.
    expected = [("1", a.bootstrap, "a"), ("2", b.bootstrap, "b"), ("3", c.bootstrap, "c")]
    deadline = time.time() + 5
    while True:
        status = subprocess.run([SHOAL_BIN, "cluster", "--bootstrap", b.bootstrap, "status"],
                                capture_output=True, text=True, timeout=30)
        assert status.returncode == 0, status.stderr
        rows = [line.split() for line in status.stdout.splitlines()[2:]]
        if [(r[0], r[1], r[2]) for r in rows] == expected or time.time() > deadline:
            break
        time.sleep(0.2)
    assert [(r[0], r[1], r[2]) for r in rows] == expected


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


def test_an_idempotent_retry_reaching_another_broker_is_recognised_as_a_duplicate(cluster):
    a, b, _ = cluster()
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic("once", num_partitions=1)])["once"].result(10)
    batch = record_batch([b"x", b"y", b"z"], producer=(4242, 0, 0))
    answers = []
    for broker in (a, b):
        connection = Connection(broker.bootstrap)
        connection.send(request(0, 3, 1, produce_v3("once", 0, batch)))
        _, body = connection.recv_response()
        answers.append(parse_produce_v3_error(body))
        connection.close()
    assert answers[0] == (0, 0, 0)
    assert answers[1] == (0, 0, 0), "the retry through B is answered with the first offset"
    assert len(consume(b.bootstrap, "once", 1, "b", 3)) == 3
    low, high = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "w"}) \
        .get_watermark_offsets(TopicPartition("once", 0), timeout=10)
    assert (low, high) == (0, 3), "written once"


def test_a_broker_killed_under_acks_all_load_loses_nothing_and_reuses_no_offset(cluster, tmp_path):
    brokers = cluster()
    everyone = ",".join(b.bootstrap for b in brokers)
    topic, partitions = "survive", 6
    admin = AdminClient({"bootstrap.servers": everyone})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    acks_path = tmp_path / "acks.jsonl"
    producer = subprocess.Popen([sys.executable, "-c", PRODUCER_SCRIPT, everyone, topic,
                                 str(acks_path)])
    try:
        wait_for_acks(acks_path, 3000)
        brokers[1].kill()
        killed = time.time()
        before = len(read_acks(acks_path))
        # Partitions broker 2 led move once its lease lapses: every partition takes records
        # again.
        deadline = killed + 60
        while {p for p, _, _ in read_acks(acks_path)[before:]} != set(range(partitions)):
            assert time.time() < deadline, "some partitions take no records after the kill"
            time.sleep(0.05)
        print(f"every partition acknowledged again {time.time() - killed:.2f} s after kill -9")
        wait_for_acks(acks_path, len(read_acks(acks_path)) + 2000)
    finally:
        producer.kill()
        producer.wait()
    wait_for_brokers(brokers[0].bootstrap, [1, 3], within=5)
    acked = read_acks(acks_path)
    assert_all_acknowledged_stored(brokers[0], topic, partitions, acked)
    assert len({(p, o) for p, o, _ in acked}) == len(acked), "an offset was acknowledged twice"


def test_a_group_whose_coordinator_is_killed_goes_on_elsewhere_with_its_offsets(cluster):
    brokers = cluster()
    everyone = ",".join(b.bootstrap for b in brokers)
    topic, partitions, group = "work", 6, "workers"
    admin = AdminClient({"bootstrap.servers": everyone})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    produce(everyone, topic, 600, zone="a")
    members = [Consumer({"bootstrap.servers": everyone, "group.id": group,
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "session.timeout.ms": 6000, "heartbeat.interval.ms": 500})
               for _ in range(3)]
    for member in members:
        member.subscribe([topic])
    consumed = {}

    def poll_all(until, stop):
        deadline = time.time() + until
        while time.time() < deadline and not stop():
            for member in members:
                m = member.poll(0.1)
                if m is None or m.error():
                    continue
                consumed[(m.partition(), m.offset())] = m.value()
                try:
                    member.commit(message=m, asynchronous=False)
                except KafkaException:
                    pass  # a rebalance took the partition: its next owner commits it

    def commit_positions():
        """Each member commits where it stands, until the group's offsets reach the end."""
        deadline = time.time() + 30
        while time.time() < deadline:
            for member in members:
                member.poll(0.1)
                try:
                    member.commit(asynchronous=False)
                except KafkaException:
                    pass
            committed = members[0].committed(
                [TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            if sum(max(tp.offset, 0) for tp in committed) == 600:
                return

    poll_all(60, lambda: len(consumed) >= 300)
    assert len(consumed) >= 300
    description = admin.describe_consumer_groups([group])[group].result(10)
    coordinator = description.coordinator.id
    committed_before = {tp.partition: tp.offset for tp in members[0].committed(
        [TopicPartition(topic, p) for p in range(partitions)], timeout=10)}
    brokers[coordinator - 1].kill()  # node ids are 1, 2, 3 in order
    poll_all(90, lambda: len(consumed) >= 600)
    assert len(consumed) == 600, f"consumed {len(consumed)} of 600 after the coordinator died"
    commit_positions()
    survivor = next(b for b in brokers if b.process.poll() is None)
    checker = Consumer({"bootstrap.servers": survivor.bootstrap, "group.id": group})
    committed_after = {tp.partition: tp.offset for tp in checker.committed(
        [TopicPartition(topic, p) for p in range(partitions)], timeout=10)}
    for p, offset in committed_before.items():
        assert committed_after[p] >= offset, f"partition {p}'s committed offset went back"
    assert sum(committed_after.values()) == 600, committed_after
    for member in members:
        member.close()


def test_a_consumer_protocol_group_whose_coordinator_is_killed_goes_on_without_a_rebalance(
        cluster):
    """The group's epochs, targets and members are in the shared log: the broker that takes
    the group over reads them back, so no member loses or gives up a partition."""
    from test_consumer_groups import assignment_changes, balanced, owned_sets
    from test_groups import Member, all_reads, wait_for

    # A section after the [coordinator] keys: members heartbeat every 500 ms.
    brokers = cluster(coordinator="\n[groups]\nconsumer_heartbeat_interval_ms = 500\n")
    everyone = ",".join(b.bootstrap for b in brokers)
    topic, partitions, group = "tasks", 6, "runners"
    admin = AdminClient({"bootstrap.servers": everyone})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    members = [Member(everyone, group, topic, strategy="consumer") for _ in range(3)]
    try:
        wait_for(lambda: balanced(members, partitions), 60, "three members with two each")
        before = owned_sets(members)
        coordinator = admin.describe_consumer_groups([group])[group].result(10).coordinator.id
        time.sleep(2)
        brokers[coordinator - 1].kill()  # node ids are 1, 2, 3 in order
        killed_at = time.time()
        produce(everyone, topic, 60, zone="a")
        wait_for(lambda: len(set(all_reads(members))) >= 60, 90, "the records after the kill")
        survivor = next(b for b in brokers if b.process.poll() is None)
        survivors = AdminClient({"bootstrap.servers": survivor.bootstrap})
        moved = survivors.describe_consumer_groups([group])[group].result(10)
        assert moved.coordinator.id != coordinator
        assert len(moved.members) == 3
        time.sleep(3)
        assert owned_sets(members) == before
        changes = [assignment_changes(m, killed_at) for m in members]
        assert changes == [[], [], []], f"rebalanced after the coordinator died: {changes}"
        reads = all_reads(members)
        assert len(reads) == len(set(reads)), "a record was read twice"
    finally:
        for m in members:
            if m.process.poll() is None:
                m.kill()


def test_a_streams_group_whose_coordinator_is_killed_goes_on_at_its_epoch_elsewhere(cluster):
    """A streams group (KIP-1071) is in the shared log like a consumer group: the broker that
    takes it over reads it back, and its member goes on at its epoch with its tasks."""
    from streams_wire import streams_heartbeat
    brokers = cluster()
    admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
    admin.create_topics([NewTopic("events", num_partitions=4)])["events"].result(10)
    # Only the group's coordinator answers without NOT_COORDINATOR (16).
    answers = {b: streams_heartbeat(b.bootstrap, "app", "m1", 0, sources=["events"])
               for b in brokers}
    coordinator = next(b for b, (error, _, _) in answers.items() if error == 0)
    assert sorted(e for e, _, _ in answers.values()) == [0, 16, 16], answers
    _, epoch, tasks = answers[coordinator]
    assert tasks == {"0": [0, 1, 2, 3]}, tasks
    assert streams_heartbeat(coordinator.bootstrap, "app", "m1", epoch, tasks)[:2] == (0, epoch)
    coordinator.kill()
    survivors = [b for b in brokers if b is not coordinator]
    deadline = time.time() + 30
    while True:
        outcomes = [streams_heartbeat(b.bootstrap, "app", "m1", epoch, tasks) for b in survivors]
        if any(error == 0 for error, _, _ in outcomes):
            break
        assert time.time() < deadline, f"no broker took the group over: {outcomes}"
        time.sleep(0.5)
    # Known at its epoch (not UNKNOWN_MEMBER_ID, not fenced), its tasks unchanged.
    assert [(e, m) for e, m, _ in outcomes if e == 0] == [(0, epoch)], outcomes


def test_retention_and_object_deletion_run_once_for_the_cluster(cluster, s3_server):
    brokers = cluster(coordinator="retention_check_interval_ms = 200\n"
                                  "file_cleaner_interval_ms = 200\nfile_cleaner_grace_ms = 300\n")
    a = brokers[0]
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    topic = NewTopic("expiring", num_partitions=1, config={"retention.ms": "60000"})
    admin.create_topics([topic])["expiring"].result(10)
    producer = Producer({"bootstrap.servers": a.bootstrap, "acks": "all", "linger.ms": 0})
    now_ms = int(time.time() * 1000)
    for i in range(5):  # two hours old: past retention.ms at once, one object each
        producer.produce("expiring", value=f"old{i}".encode(), timestamp=now_ms - 7_200_000)
        producer.flush(10)
    written = len(s3_server.objects())
    assert written >= 5
    deadline = time.time() + 20
    while s3_server.objects() and time.time() < deadline:
        time.sleep(0.2)
    assert not s3_server.objects(), "expired objects were not deleted"
    time.sleep(1)  # any second deletion would have been logged by now
    logs = [re.sub(r"\x1b\[[0-9;]*m", "", b.log()) for b in brokers]  # without colours
    deleted = [sum(int(n) for n in re.findall(
        r"deleted unreferenced WAL objects objects=(\d+)", log)) for log in logs]
    assert sum(deleted) == written, f"deletions per broker {deleted} of {written} objects"
    assert sorted(deleted)[:2] == [0, 0], f"more than one broker deleted: {deleted}"


def test_a_mirror_into_a_three_broker_cluster_fails_over_and_back(cluster, make_broker):
    from test_mirror import FAST_RETRIES, caught_up, cli, end_offsets, identical, wait_for
    from test_mirror import produce as produce_mirrored

    source = make_broker("source").start()
    source_admin = AdminClient({"bootstrap.servers": source.bootstrap})
    source_admin.create_topics([NewTopic("orders", num_partitions=3)])["orders"].result(15)
    a, b, c = cluster()
    cli(a, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(b, "add", "dr", "orders")  # any broker takes the mirror's commands
    produce_mirrored(source, "orders", 600)
    wait_for(caught_up(c, source, "orders", 3), 60, "the cluster caught up")
    assert identical(source, a, "orders", 3) and identical(source, c, "orders", 3)

    # Failover to the cluster, which takes writes; the old source's later ones are lost.
    assert "orders: removed" in cli(c, "remove", "dr", "orders").stdout
    produce_mirrored(source, "orders", 90, start=10_000)
    produce_mirrored(b, "orders", 150, start=20_000)
    assert end_offsets(a, "orders", 3) == [250, 250, 250]

    # Failback: the old source mirrors the cluster under the same name and ends identical.
    cli(source, "create", "dr", "--source", a.bootstrap, *FAST_RETRIES)
    cli(source, "add", "dr", "orders")
    wait_for(caught_up(source, b, "orders", 3), 60, "the old source caught up")
    assert identical(source, c, "orders", 3)


def fetch_v11(broker, topic, partition, rack):
    """(error, high watermark, preferred read replica, record bytes) of a one-partition Fetch
    v11 carrying the consumer's rack (KIP-392)."""
    import struct
    from kafka_wire import string
    body = struct.pack(">iiiibii", -1, 0, 1, 1 << 20, 0, 0, -1)
    body += struct.pack(">i", 1) + string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iiqqi", partition, -1, 0, -1, 1 << 20)
    body += struct.pack(">i", 0) + string(rack)
    connection = Connection(broker.bootstrap)
    connection.send(request(1, 11, 7, body))
    _, answer = connection.recv_response()
    connection.close()
    pos = 4 + 2 + 4 + 4  # throttle, error, session id, topic count
    (name_len,) = struct.unpack_from(">h", answer, pos)
    pos += 2 + name_len + 4
    _, error, high, _, _ = struct.unpack_from(">ihqqq", answer, pos)
    pos += 4 + 2 + 8 * 3
    (aborted,) = struct.unpack_from(">i", answer, pos)
    pos += 4 + max(aborted, 0) * 16
    preferred, size = struct.unpack_from(">ii", answer, pos)
    return error, high, preferred, max(size, 0)


def test_a_consumer_in_another_rack_is_sent_to_a_broker_of_its_own(cluster):
    a, b, _ = cluster()
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic("near", num_partitions=3)])["near"].result(10)
    produce(a.bootstrap, "near", 300, zone="a")
    # Broker 1 (rack a) names broker 2 for a rack-b consumer, with no records; broker 2
    # serves it, and a consumer without a rack is served where it asked.
    error, high, preferred, size = fetch_v11(a, "near", 0, "b")
    assert (error, preferred, size) == (0, 2, 0) and high > 0
    # Broker 2 learns of the commits from the coordinator's log a moment after broker 1
    # acknowledged them (as a Kafka follower lags its leader), so ask until they are there.
    deadline = time.time() + 10
    while True:
        error, _, preferred, size = fetch_v11(b, "near", 0, "b")
        if size > 0 or time.time() > deadline:
            break
        time.sleep(0.1)
    assert (error, preferred) == (0, -1) and size > 0
    assert fetch_v11(a, "near", 0, "")[2] == -1
    # librdkafka follows it: a consumer with client.rack = b reads everything.
    consumer = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "near",
                         "client.rack": "b", "enable.auto.commit": False})
    consumer.assign([TopicPartition("near", p, 0) for p in range(3)])
    seen = set()
    deadline = time.time() + 30
    while len(seen) < 300 and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            seen.add((m.partition(), m.offset()))
    consumer.close()
    assert len(seen) == 300


def test_transactions_span_brokers_and_a_new_producer_ends_one_left_open_by_a_killed_broker(
        cluster):
    """A transactional producer writes to partitions led by all three brokers; commits and
    aborts are seen alike through every broker; a transaction left open when a broker is
    killed -9 is aborted by the next producer with its id, through the brokers still up."""
    from test_transactions import read, transactional_producer

    brokers = cluster()
    every = ",".join(b.bootstrap for b in brokers)
    admin = AdminClient({"bootstrap.servers": every})
    admin.create_topics([NewTopic("ledger", num_partitions=6)])["ledger"].result(15)
    producer = transactional_producer(every, "ledger-tx")
    producer.begin_transaction()
    for i in range(60):
        producer.produce("ledger", value=f"kept-{i}", partition=i % 6)
    producer.commit_transaction(15)
    producer.begin_transaction()
    for i in range(30):
        producer.produce("ledger", value=f"dropped-{i}", partition=i % 6)
    producer.flush(15)
    producer.abort_transaction(15)
    producer.begin_transaction()
    for i in range(30):
        producer.produce("ledger", value=f"orphan-{i}", partition=i % 6)
    producer.flush(15)
    brokers[0].kill()
    survivors = ",".join(b.bootstrap for b in brokers[1:])
    successor = transactional_producer(survivors, "ledger-tx")
    successor.begin_transaction()
    successor.produce("ledger", value="last", partition=0)
    successor.commit_transaction(15)
    expected = sorted([f"kept-{i}" for i in range(60)] + ["last"])
    for b in brokers[1:]:
        got = read(b.bootstrap, "ledger", 6, "read_committed", 61)
        assert sorted(v for _, v in got) == expected


def test_a_client_quota_set_through_one_broker_holds_on_another(cluster):
    """Quotas are in the shared log, so every broker holds clients to them; each broker
    measures its own connections (Kafka's quotas are per broker)."""
    a, b, _ = cluster()
    admin = AdminClient({"bootstrap.servers": a.bootstrap})
    admin.create_topics([NewTopic("metered", num_partitions=2)])["metered"].result(10)
    client = "metered,shoal_az=b"  # every partition through broker 2
    assert Quotas(a.bootstrap).alter([([("client-id", client)],
                                       [("producer_byte_rate", float(QUOTA))])]) == [(0, None)]
    # Broker 2 has read it from the log.
    deadline = time.time() + 10
    while not Quotas(b.bootstrap).describe([("client-id", EXACT, client)]):
        assert time.time() < deadline, "broker 2 never saw the quota"
        time.sleep(0.1)
    rate, throttle_ms, _ = run_producers(a.bootstrap, "metered", [(client, 1, 8)])[client]
    print(f"through broker 2, held to {QUOTA} B/s: {rate:.0f} B/s, throttled up to {throttle_ms} ms")
    # (A short run: the last request's bytes, taken just before the end, weigh more.)
    assert throttle_ms > 0 and rate <= 1.25 * QUOTA, (rate, throttle_ms)


def test_a_broker_config_default_set_through_one_broker_holds_on_the_others(cluster):
    """Dynamic broker configs are in the shared log: the cluster default set through broker 1
    takes effect on broker 2 without a restart; broker 1's own setting stays its own."""
    a, b, _ = cluster()
    alter(a.bootstrap, "", {"max.connections.per.ip": "3"})
    alter(a.bootstrap, "1", {"max.connections.per.ip": "5"})
    assert connections_admitted(b.bootstrap, 3) == 3
    assert connections_admitted(a.bootstrap, 5) == 5
    assert described(b.bootstrap, "2", ["max.connections.per.ip"])[
        "max.connections.per.ip"][:3] == ("3", False, DYNAMIC_DEFAULT_BROKER)
    assert described(a.bootstrap, "1", ["max.connections.per.ip"])[
        "max.connections.per.ip"][:3] == ("5", False, DYNAMIC_BROKER)
    alter(b.bootstrap, "", {"max.connections.per.ip": None})
    assert connections_admitted(b.bootstrap, 6) == 6
    assert connections_admitted(a.bootstrap, 5) == 5


def test_one_schema_gets_one_id_through_every_broker_and_after_all_are_killed(cluster):
    """The registry's state is in the shared log: ids are given once for the cluster, a
    schema registered through one broker is read at once through another, and after kill -9
    of every broker the same schema keeps its id."""
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
    brokers = cluster(registry=True)
    clients = [SchemaRegistryClient({"url": b.registry_url}) for b in brokers]
    user = Schema('{"type":"record","name":"User","fields":[{"name":"id","type":"long"}]}',
                  "AVRO")
    first = clients[0].register_schema("users-value", user)
    assert clients[1].register_schema("accounts-value", user) == first
    assert clients[2].get_schema(first).schema_str == user.schema_str
    other = clients[2].register_schema("other-value", Schema('"string"', "AVRO"))
    assert other != first
    for broker in brokers:
        broker.kill()
    for broker in brokers:
        broker.start()
    again = SchemaRegistryClient({"url": brokers[2].registry_url})
    assert again.register_schema("users-value", user) == first
    assert again.get_versions("users-value") == [1]
    assert sorted(again.get_subjects()) == ["accounts-value", "other-value", "users-value"]
