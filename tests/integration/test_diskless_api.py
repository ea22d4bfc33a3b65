"""The KIP-1164 Diskless* coordinator APIs on the wire, as another broker or an operator tool
would call them: a "remote broker" stores an object itself, commits it over the wire, and an
ordinary Kafka consumer then reads those records from Shoal."""

import struct
import uuid

from confluent_kafka import Consumer, TopicPartition

import kafka_wire as wire
from kafka_wire import TAGS, compact_array, compact_string

# The KIP-1164 seed's keys (93-100) plus 1000: Kafka 4.4 took 93 and 94 for its own APIs.
CREATE_PARTITIONS, DELETE_TOPICS, COMMIT_FILE = 1093, 1094, 1095
DELETE_RECORDS, LIST_OFFSETS, FIND_BATCHES, DESCRIBE_FILES = 1096, 1097, 1098, 1100
DISKLESS_KEYS = (CREATE_PARTITIONS, DELETE_TOPICS, COMMIT_FILE, DELETE_RECORDS, LIST_OFFSETS,
                 FIND_BATCHES, DESCRIBE_FILES)
# Kafka 4.4's StreamsGroupTopologyDescriptionUpdate and UnregisterController.
KAFKA_KEYS_THE_SEED_TOOK = (93, 94)
API_VERSIONS = 18


def call(conn, api_key, body, correlation_id=1):
    conn.send(wire.flexible_request(api_key, correlation_id, body))
    got_id, reader = wire.flexible_response(conn)
    assert got_id == correlation_id
    assert reader.int("i") == 0  # throttle time
    return reader


def create_partitions(conn, topic_id, name, count):
    topic = topic_id.bytes + compact_string(name) + struct.pack(">i", count) + TAGS
    r = call(conn, CREATE_PARTITIONS, compact_array([topic]) + struct.pack(">i", 30000) + TAGS)
    return r.array(lambda r: (uuid.UUID(bytes=r.take(16)), r.int("h"), r.string(), r.tags())[1])


def commit_file(conn, key, file_size, batches):
    encoded = []
    for b in batches:
        encoded.append(
            struct.pack(">bi", 2, 0) + b["topic_id"].bytes
            + struct.pack(">iiiqqqbqhii", b["partition"], b["byte_offset"], b["size"],
                          0, b["count"] - 1, b["max_ts"], 0, -1, -1, -1, -1)
            + TAGS)
    body = (compact_string(key) + struct.pack(">bq", 1, file_size)
            + compact_array([struct.pack(">i", 0)]) + compact_array(encoded)
            + struct.pack(">i", 30000) + TAGS)
    r = call(conn, COMMIT_FILE, body)

    def result(r):
        error, message = r.int("h"), r.string()
        base, append_time, log_start, dup = r.int("q"), r.int("q"), r.int("q"), r.int("b")
        r.tags()
        return error, base, log_start, bool(dup)

    return r.array(result)


def find_batches(conn, topic_id, partition, offset):
    part = struct.pack(">iqi", partition, offset, 1 << 20) + TAGS
    topic = topic_id.bytes + compact_array([part]) + TAGS
    body = struct.pack(">ii", 1 << 20, 100) + compact_array([topic]) + struct.pack(">i", 30000) + TAGS
    r = call(conn, FIND_BATCHES, body)

    def batch(r):
        fields = (r.int("q"), r.string(), r.int("b"), r.int("q"), r.int("q"), r.int("q"),
                  r.int("q"), r.int("q"), r.int("q"), r.int("b"))
        r.tags()
        return {"key": fields[1], "byte_offset": fields[3], "size": fields[4],
                "base": fields[5], "last": fields[6], "max_ts": fields[8]}

    def partition_result(r):
        index, error, start, high = r.int("i"), r.int("h"), r.int("q"), r.int("q")
        batches = r.array(batch)
        r.tags()
        return {"error": error, "log_start": start, "high": high, "batches": batches}

    def topic_result(r):
        r.take(16)
        partitions = r.array(partition_result)
        r.tags()
        return partitions

    return r.array(topic_result)[0][0]


def describe_files(conn, keys):
    body = compact_array([compact_string(k) + TAGS for k in keys]) + struct.pack(">i", 30000) + TAGS
    r = call(conn, DESCRIBE_FILES, body)

    def result(r):
        key, error, _, live = r.string(), r.int("h"), r.string(), r.int("b")
        r.tags()
        return key, error, bool(live)

    return r.array(result)


def partitioned_request(api_key, conn, topic_id, partition, value):
    part = struct.pack(">iq", partition, value) + TAGS
    topic = topic_id.bytes + compact_array([part]) + TAGS
    r = call(conn, api_key, compact_array([topic]) + struct.pack(">i", 30000) + TAGS)

    def partition_result(r):
        if api_key == DELETE_RECORDS:
            out = (r.int("i"), r.int("q"), r.int("h"), r.string())
            r.tags()
            return {"low": out[1], "error": out[2]}
        out = (r.int("i"), r.int("h"), r.string(), r.int("q"), r.int("q"))
        r.tags()
        return {"error": out[1], "timestamp": out[3], "offset": out[4]}

    def topic_result(r):
        r.take(16)
        partitions = r.array(partition_result)
        r.tags()
        return partitions

    return r.array(topic_result)[0][0]


def test_diskless_apis_are_advertised(broker):
    conn = wire.Connection(broker.bootstrap)
    conn.send(wire.request(API_VERSIONS, 0, 9, b""))
    _, body = conn.recv_response()
    error, count = struct.unpack_from(">hi", body, 0)
    keys = {struct.unpack_from(">hhh", body, 6 + 6 * i) for i in range(count)}
    assert error == 0
    for key in DISKLESS_KEYS:
        assert (key, 0, 0) in keys
    advertised = {key for key, _, _ in keys}
    assert not advertised & set(KAFKA_KEYS_THE_SEED_TOOK), "Kafka's own keys stay Kafka's"


def test_a_remote_broker_commits_an_object_that_kafka_consumers_then_read(broker):
    conn = wire.Connection(broker.bootstrap)
    topic_id = uuid.uuid4()
    assert create_partitions(conn, topic_id, "remote", 2) == [0]
    assert create_partitions(conn, topic_id, "remote", 2) == [0], "creation is idempotent"

    # The "remote broker" writes a WAL object itself: two batches for partition 0 and one
    # for partition 1, grouped by partition as format 1 requires.
    batches = [wire.record_batch([b"a0", b"a1"]), wire.record_batch([b"a2"]),
               wire.record_batch([b"b0", b"b1", b"b2"])]
    key = f"wal/{uuid.uuid4()}"
    (broker.data_dir / "objects" / "wal").mkdir(parents=True, exist_ok=True)
    (broker.data_dir / "objects" / key).write_bytes(b"".join(batches))
    layout, pos = [], 0
    for i, (b, partition, count) in enumerate(zip(batches, [0, 0, 1], [2, 1, 3])):
        layout.append({"topic_id": topic_id, "partition": partition, "byte_offset": pos,
                       "size": len(b), "count": count, "max_ts": 1_700_000_000_000})
        pos += len(b)
    results = commit_file(conn, key, pos, layout)
    assert results == [(0, 0, 0, False), (0, 2, 0, False), (0, 0, 0, False)]
    again = commit_file(conn, key, pos, layout)
    assert all(error == 42 for error, *_ in again), "a repeated commit of one object is refused"

    found = find_batches(conn, topic_id, 0, 1)
    assert found["error"] == 0 and found["high"] == 3
    assert [(b["base"], b["last"], b["key"]) for b in found["batches"]] == [(0, 1, key), (2, 2, key)]
    assert describe_files(conn, [key, "wal/unknown"]) == [(key, 0, True), ("wal/unknown", 0, False)]
    assert partitioned_request(LIST_OFFSETS, conn, topic_id, 0, -1)["offset"] == 3

    # An ordinary Kafka consumer reads what the remote broker committed.
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "remote",
                         "enable.auto.commit": False})
    consumer.assign([TopicPartition("remote", 0, 0), TopicPartition("remote", 1, 0)])
    got = []
    for _ in range(40):
        m = consumer.poll(0.25)
        if m is not None:
            assert m.error() is None, m.error()
            got.append((m.partition(), m.offset(), m.value()))
        if len(got) == 6:
            break
    consumer.close()
    assert sorted(got) == [(0, 0, b"a0"), (0, 1, b"a1"), (0, 2, b"a2"),
                           (1, 0, b"b0"), (1, 1, b"b1"), (1, 2, b"b2")]

    deleted = partitioned_request(DELETE_RECORDS, conn, topic_id, 0, 2)
    assert deleted == {"low": 2, "error": 0}
    assert find_batches(conn, topic_id, 0, 0)["error"] == 1  # OFFSET_OUT_OF_RANGE

    topic = topic_id.bytes + TAGS
    r = call(conn, DELETE_TOPICS, compact_array([topic]) + struct.pack(">i", 30000) + TAGS)
    assert r.array(lambda r: (r.take(16), r.int("h"), r.string(), r.tags())[1]) == [0]
    assert find_batches(conn, topic_id, 0, 0)["error"] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    conn.close()


def test_a_commit_naming_an_object_that_is_not_there_moves_no_offset(broker):
    """A ghost commit (issue 15's report: a missing object moved the high watermark from 5
    to 1005) is refused before any offset moves; so is one claiming more bytes than the
    object holds."""
    conn = wire.Connection(broker.bootstrap)
    topic_id = uuid.uuid4()
    assert create_partitions(conn, topic_id, "ghost", 1) == [0]
    batch = wire.record_batch([b"x"])
    layout = [{"topic_id": topic_id, "partition": 0, "byte_offset": 0, "size": len(batch),
               "count": 1000, "max_ts": 1_700_000_000_000}]
    missing = commit_file(conn, f"wal/{uuid.uuid4()}", len(batch), layout)
    assert [error for error, *_ in missing] == [42], "INVALID_REQUEST for a missing object"

    key = f"wal/{uuid.uuid4()}"
    (broker.data_dir / "objects" / "wal").mkdir(parents=True, exist_ok=True)
    (broker.data_dir / "objects" / key).write_bytes(batch)
    too_long = commit_file(conn, key, len(batch) + 100,
                           [dict(layout[0], size=len(batch) + 100)])
    assert [error for error, *_ in too_long] == [42], "claims past the object's end refused"
    assert find_batches(conn, topic_id, 0, 0)["high"] == 0, "no offset moved"

    layout[0]["count"] = 1
    assert commit_file(conn, key, len(batch), layout) == [(0, 0, 0, False)]
    assert find_batches(conn, topic_id, 0, 0)["high"] == 1
    conn.close()


def test_a_malformed_diskless_request_closes_only_that_connection(broker):
    conn = wire.Connection(broker.bootstrap)
    conn.send(wire.flexible_request(COMMIT_FILE, 1, b"\x05abc"))
    assert conn.is_closed_by_peer()
    conn = wire.Connection(broker.bootstrap)
    topic_id = uuid.uuid4()
    assert create_partitions(conn, topic_id, "still-fine", 1) == [0]
