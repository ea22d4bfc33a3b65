"""The coordinator through real clients: idempotent producers across crashes, DeleteRecords,
retention and garbage collection of objects."""

import os
import random
import struct
import subprocess
import sys
import textwrap
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire as wire
from conftest import FILES_LAYOUT

INIT_PRODUCER_ID = 22

IDEMPOTENT_PRODUCER = textwrap.dedent(
    """
    import json, sys, time
    from confluent_kafka import Producer
    bootstrap, topic, count, out_path = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    out = open(out_path, "w", buffering=1)
    def on_delivery(err, msg):
        out.write(json.dumps([msg.value().decode(), None if err else [msg.partition(), msg.offset()],
                              str(err) if err else None]) + "\\n")
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "linger.ms": 5,
                  "message.timeout.ms": 120000, "reconnect.backoff.max.ms": 200})
    for i in range(count):
        while True:
            try:
                p.produce(topic, value=f"idem-{i}".encode(), on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
        time.sleep(0.0002)
    p.flush(120)
    out.write("DONE\\n")
    """
)


def create(bootstrap, name, partitions, config=None):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, num_partitions=partitions, config=config or {})
    admin.create_topics([topic])[name].result(15)
    return admin


def read_all(bootstrap, topic, partitions, timeout_s=60):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    bounds = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
              for p in range(partitions)}
    consumer.assign([TopicPartition(topic, p, bounds[p][0]) for p in range(partitions)])
    want = sum(high - low for low, high in bounds.values())
    got = []
    deadline = time.time() + timeout_s
    while len(got) < want and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.value().decode()))
    consumer.close()
    return got, bounds


def test_idempotent_producer_survives_kill_9_without_loss_or_duplicates(make_broker, tmp_path):
    broker = make_broker("idem").start()
    create(broker.bootstrap, "idem", 3)
    out = tmp_path / "deliveries.jsonl"
    count = 20_000
    producer = subprocess.Popen(
        [sys.executable, "-c", IDEMPOTENT_PRODUCER, broker.bootstrap, "idem", str(count), str(out)]
    )
    rng = random.Random(1164)
    try:
        for _ in range(3):
            time.sleep(rng.uniform(0.3, 1.5))
            broker.kill()
            time.sleep(rng.uniform(0.0, 0.5))
            broker.start()
        assert producer.wait(timeout=180) == 0
    finally:
        if producer.poll() is None:
            producer.kill()
    lines = out.read_text().splitlines()
    assert lines[-1] == "DONE"
    import json
    reports = [json.loads(line) for line in lines[:-1]]
    acked = {value: tuple(pos) for value, pos, err in reports if err is None}
    got, _ = read_all(broker.bootstrap, "idem", 3)
    values = [v for _, _, v in got]
    assert len(values) == len(set(values)), "a record was stored twice"
    stored = {v: (p, o) for p, o, v in got}
    for value, position in acked.items():
        assert stored.get(value) == position, f"{value} acked at {position}, stored at {stored.get(value)}"
    positions = [(p, o) for p, o, _ in got]
    assert len(positions) == len(set(positions)), "an offset was reused"
    assert len(acked) > count * 0.9, f"only {len(acked)} of {count} acknowledged"


def init_producer_id(bootstrap):
    conn = wire.Connection(bootstrap)
    body = wire.string(None) + struct.pack(">i", 60_000)
    conn.send(wire.request(INIT_PRODUCER_ID, 0, 5, body))
    _, response = conn.recv_response()
    conn.close()
    _, error, producer_id, epoch = struct.unpack_from(">ihqh", response, 0)
    assert error == 0
    return producer_id, epoch


def test_producer_ids_are_never_reused_after_a_restart(make_broker):
    broker = make_broker("pids").start()
    first = {init_producer_id(broker.bootstrap)[0] for _ in range(3)}
    broker.kill()
    broker.start()
    second = {init_producer_id(broker.bootstrap)[0] for _ in range(3)}
    assert len(first) == 3 and len(second) == 3
    assert max(first) < min(second)


def test_delete_records_moves_the_log_start_and_reads_below_it_fail(broker):
    admin = create(broker.bootstrap, "trim", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(20):
        p.produce("trim", value=f"t{i}".encode())
        p.flush(10)
    result = admin.delete_records([TopicPartition("trim", 0, 12)])
    for future in result.values():
        assert future.result(10).low_watermark == 12
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "trim",
                         "auto.offset.reset": "error"})
    assert consumer.get_watermark_offsets(TopicPartition("trim", 0), timeout=10) == (12, 20)
    consumer.assign([TopicPartition("trim", 0, 3)])
    error = None
    deadline = time.time() + 15
    while error is None and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error():
            error = m.error()
    consumer.close()
    assert error is not None and "out of range" in str(error).lower(), error
    got, bounds = read_all(broker.bootstrap, "trim", 1)
    assert bounds[0] == (12, 20)
    assert [v for _, _, v in got] == [f"t{i}" for i in range(12, 20)]
    # Going backwards or past the end is refused.
    bad = admin.delete_records([TopicPartition("trim", 0, 25)])
    for future in bad.values():
        try:
            future.result(10)
            raise AssertionError("deleting past the high watermark succeeded")
        except Exception as e:
            assert "OFFSET_OUT_OF_RANGE" in str(e) or "out of range" in str(e).lower()


MAINTENANCE_FAST = """
[coordinator]
retention_check_interval_ms = 200
file_cleaner_interval_ms = 200
file_cleaner_grace_ms = 300
orphan_scan_interval_ms = 200
orphan_grace_ms = 1000
"""


def wal_files(broker):
    wal = broker.data_dir / "objects" / "wal"
    return sorted(os.listdir(wal)) if wal.exists() else []


def test_retention_deletes_old_batches_and_their_objects(make_broker):
    broker = make_broker("retention", MAINTENANCE_FAST + FILES_LAYOUT).start()
    create(broker.bootstrap, "short", 1, {"retention.ms": "60000"})
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    now_ms = int(time.time() * 1000)
    for i in range(5):  # two hours old: past retention.ms at once
        p.produce("short", value=f"old{i}".encode(), timestamp=now_ms - 7_200_000)
        p.flush(10)
    assert len(wal_files(broker)) >= 5
    deadline = time.time() + 15
    low = 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "r"})
    while time.time() < deadline and low < 5:
        low, _ = consumer.get_watermark_offsets(TopicPartition("short", 0), timeout=10)
        time.sleep(0.2)
    assert low == 5, "retention did not move the log start offset"
    p.produce("short", value=b"fresh", timestamp=now_ms)
    p.flush(10)
    while time.time() < deadline and len(wal_files(broker)) > 1:
        time.sleep(0.2)
    consumer.close()
    assert len(wal_files(broker)) == 1, "objects of expired batches were not deleted"
    got, bounds = read_all(broker.bootstrap, "short", 1)
    assert [v for _, _, v in got] == ["fresh"] and bounds[0] == (5, 6)


def test_orphan_objects_are_collected_and_committed_ones_kept(make_broker):
    broker = make_broker("orphans", MAINTENANCE_FAST).start()
    create(broker.bootstrap, "keep", 1)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    p.produce("keep", value=b"committed")
    p.flush(10)
    # Left as files, as a crash of a broker writing the file layout leaves them: collected
    # whichever layout writes now.
    wal = broker.data_dir / "objects" / "wal"
    wal.mkdir(parents=True, exist_ok=True)
    orphan = wal / "00000000-orphan-from-a-crash"
    orphan.write_bytes(b"uploaded but never committed")
    old = time.time() - 3600
    os.utime(orphan, (old, old))
    young = wal / "00000000-upload-in-flight"
    young.write_bytes(b"commit may still be on its way")
    deadline = time.time() + 15
    while time.time() < deadline and orphan.exists():
        time.sleep(0.2)
    assert not orphan.exists(), "the orphan was not collected"
    assert young.exists(), "an object inside the grace period was deleted"
    got, _ = read_all(broker.bootstrap, "keep", 1)
    assert [v for _, _, v in got] == ["committed"]


def test_admin_adds_partitions_and_describes_the_cluster(broker):
    from confluent_kafka.admin import NewPartitions

    admin = create(broker.bootstrap, "grow", 2)
    for f in admin.create_partitions([NewPartitions("grow", 5)]).values():
        f.result(10)
    shrink = admin.create_partitions([NewPartitions("grow", 3)])
    for f in shrink.values():
        try:
            f.result(10)
            raise AssertionError("shrinking a topic succeeded")
        except Exception as e:
            assert "INVALID_PARTITIONS" in str(e) or "only grow" in str(e), e
    assert len(admin.list_topics(timeout=10).topics["grow"].partitions) == 5
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    p.produce("grow", value=b"new partition", partition=4)
    assert p.flush(10) == 0
    got, bounds = read_all(broker.bootstrap, "grow", 5)
    assert [(part, v) for part, _, v in got] == [(4, "new partition")]
    cluster = admin.describe_cluster().result(10)
    assert cluster.cluster_id == "shoal-local"
    assert [n.port for n in cluster.nodes] == [broker.port]


def describe_cluster_v1(bootstrap, endpoint_type):
    """DescribeCluster v1 on the wire: (error code, endpoint type, broker ports)."""
    body = b"\x00" + struct.pack(">b", endpoint_type) + wire.TAGS
    conn = wire.Connection(bootstrap)
    # A flexible (v2) header: kafka_wire's v1 header, then its empty tag buffer.
    conn.send(wire.request(60, 1, 7, wire.TAGS + body))
    _, r = wire.flexible_response(conn)
    conn.close()
    r.int("i")  # throttle time
    error = r.int("h")
    r.string()  # error message
    answered_type = r.int("b")
    r.string()  # cluster id
    r.int("i")  # controller id

    def broker_port(reader):
        reader.int("i")
        reader.string()
        port = reader.int("i")
        reader.string()
        reader.tags()
        return port

    return error, answered_type, r.array(broker_port)


def test_describe_cluster_for_controllers_is_refused_as_kafka_brokers_refuse_it(broker):
    """KIP-919: a broker's listener answers a request for controllers (endpoint type 2) with
    MISMATCHED_ENDPOINT_TYPE, and one for brokers (1) with itself."""
    assert describe_cluster_v1(broker.bootstrap, 2) == (114, 1, [])
    assert describe_cluster_v1(broker.bootstrap, 1) == (0, 1, [broker.port])
