"""Kafka 4.4's newer API versions on the wire, where they differ from the versions before them
(the Java suite runs them with Kafka's own client, on Kafka and on Shoal): ApiVersions v5's
cluster and node checks (KIP-1242), topics by id in Produce v13 and OffsetCommit/OffsetFetch v10,
and ListOffsets v11's earliest-pending-upload offset (KIP-1023)."""

import struct
import uuid

from confluent_kafka import Producer, TopicCollection
from confluent_kafka.admin import AdminClient

import kafka_wire as wire

API_VERSIONS, PRODUCE, LIST_OFFSETS, OFFSET_COMMIT, OFFSET_FETCH = 18, 0, 2, 8, 9
REBOOTSTRAP_REQUIRED, UNKNOWN_TOPIC_ID = 129, 100


def flexible(api_key, version, body, correlation_id=1):
    """A request with header v2 (the v1 header, then its empty tag buffer)."""
    return wire.request(api_key, version, correlation_id, wire.TAGS + body)


def api_versions_v5(bootstrap, cluster_id, node_id):
    body = wire.compact_string("wire-test") + wire.compact_string("1")
    body += wire.compact_string(cluster_id) + struct.pack(">i", node_id) + wire.TAGS
    conn = wire.Connection(bootstrap)
    conn.send(flexible(API_VERSIONS, 5, body))
    _, response = conn.recv_response()  # ApiVersions answers with header v0
    conn.close()
    return struct.unpack_from(">h", response)[0]


def test_api_versions_v5_sends_a_client_for_another_cluster_or_node_to_rebootstrap(broker):
    ok = 0
    assert api_versions_v5(broker.bootstrap, None, -1) == ok
    assert api_versions_v5(broker.bootstrap, "shoal-local", 0) == ok
    assert api_versions_v5(broker.bootstrap, "shoal-local", -1) == ok
    assert api_versions_v5(broker.bootstrap, "another-cluster", 0) == REBOOTSTRAP_REQUIRED
    assert api_versions_v5(broker.bootstrap, "shoal-local", 7) == REBOOTSTRAP_REQUIRED


def topic_id(bootstrap, topic):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_topics(TopicCollection([topic]))[topic].result(10)
    tid = described.topic_id
    return uuid.UUID(int=((tid.get_most_significant_bits() & (2**64 - 1)) << 64)
                     | (tid.get_least_significant_bits() & (2**64 - 1)))


def produce_v13(bootstrap, tid, value):
    """Produce v13, one record to partition 0 of the topic with id `tid`: the partition's
    (error code, base offset) and the topic id answered."""
    records = wire.record_batch([value])
    partition = struct.pack(">i", 0) + wire.uvarint(len(records) + 1) + records + wire.TAGS
    topic = tid.bytes + wire.compact_array([partition]) + wire.TAGS
    body = wire.compact_string(None) + struct.pack(">hi", -1, 30_000)
    body += wire.compact_array([topic]) + wire.TAGS
    conn = wire.Connection(bootstrap)
    conn.send(flexible(PRODUCE, 13, body))
    _, r = wire.flexible_response(conn)
    conn.close()

    def topic_answer(reader):
        answered = uuid.UUID(bytes=reader.take(16))

        def partition_answer(p):
            p.int("i")
            error, base_offset = p.int("h"), p.int("q")
            p.int("q")  # log append time
            p.int("q")  # log start offset
            p.array(lambda e: (e.int("i"), e.string(), e.tags()))  # record errors
            p.string()  # error message
            p.tags()
            return error, base_offset

        partitions = reader.array(partition_answer)
        reader.tags()
        return answered, partitions

    return r.array(topic_answer)


def test_produce_v13_names_its_topic_by_id(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("by-id", value=b"first")
    assert p.flush(10) == 0
    tid = topic_id(broker.bootstrap, "by-id")
    assert produce_v13(broker.bootstrap, tid, b"second") == [(tid, [(0, 1)])]
    unknown = uuid.uuid4()
    [(answered, [(error, _)])] = produce_v13(broker.bootstrap, unknown, b"lost")
    assert (answered, error) == (unknown, UNKNOWN_TOPIC_ID)


def offset_commit_v10(bootstrap, group, tid, offset):
    partition = struct.pack(">iqi", 0, offset, -1) + wire.compact_string("") + wire.TAGS
    topic = tid.bytes + wire.compact_array([partition]) + wire.TAGS
    body = wire.compact_string(group) + struct.pack(">i", -1) + wire.compact_string("")
    body += wire.compact_string(None) + wire.compact_array([topic]) + wire.TAGS
    conn = wire.Connection(bootstrap)
    conn.send(flexible(OFFSET_COMMIT, 10, body))
    _, r = wire.flexible_response(conn)
    conn.close()
    r.int("i")  # throttle time

    def topic_answer(reader):
        answered = uuid.UUID(bytes=reader.take(16))
        errors = reader.array(lambda p: (p.int("i"), p.int("h"), p.tags())[1])
        reader.tags()
        return answered, errors

    return r.array(topic_answer)


def offset_fetch_v10(bootstrap, group, tid):
    topic = tid.bytes + wire.compact_array([struct.pack(">i", 0)]) + wire.TAGS
    group_entry = wire.compact_string(group) + wire.compact_string(None) + struct.pack(">i", -1)
    group_entry += wire.compact_array([topic]) + wire.TAGS
    body = wire.compact_array([group_entry]) + b"\x00" + wire.TAGS  # require_stable false
    conn = wire.Connection(bootstrap)
    conn.send(flexible(OFFSET_FETCH, 10, body))
    _, r = wire.flexible_response(conn)
    conn.close()
    r.int("i")  # throttle time

    def partition_answer(p):
        index, offset = p.int("i"), p.int("q")
        p.int("i")  # leader epoch
        p.string()  # metadata
        error = p.int("h")
        p.tags()
        return index, offset, error

    def topic_answer(reader):
        answered = uuid.UUID(bytes=reader.take(16))
        partitions = reader.array(partition_answer)
        reader.tags()
        return answered, partitions

    def group_answer(g):
        g.string()
        topics = g.array(topic_answer)
        g.int("h")
        g.tags()
        return topics

    return r.array(group_answer)


def test_offset_commit_and_fetch_v10_name_topics_by_id(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("committed", value=b"x")
    assert p.flush(10) == 0
    tid = topic_id(broker.bootstrap, "committed")
    assert offset_commit_v10(broker.bootstrap, "by-id", tid, 1) == [(tid, [0])]
    assert offset_fetch_v10(broker.bootstrap, "by-id", tid) == [[(tid, [(0, 1, 0)])]]
    unknown = uuid.uuid4()
    assert offset_commit_v10(broker.bootstrap, "by-id", unknown, 1) == [
        (unknown, [UNKNOWN_TOPIC_ID])]
    assert offset_fetch_v10(broker.bootstrap, "by-id", unknown) == [
        [(unknown, [(0, -1, UNKNOWN_TOPIC_ID)])]]


def test_list_offsets_v11_earliest_pending_upload_is_none_without_tiered_storage(broker):
    """KIP-1023's -6: a diskless topic has no tiered storage, so nothing waits to be uploaded,
    answered as Kafka answers it for a topic without remote storage: offset -1."""
    p = Producer({"bootstrap.servers": broker.bootstrap})
    p.produce("pending", value=b"x")
    assert p.flush(10) == 0
    partition = struct.pack(">iiq", 0, -1, -6) + wire.TAGS
    topic = wire.compact_string("pending") + wire.compact_array([partition]) + wire.TAGS
    body = struct.pack(">ib", -1, 0) + wire.compact_array([topic]) + struct.pack(">i", 30_000)
    body += wire.TAGS
    conn = wire.Connection(broker.bootstrap)
    conn.send(flexible(LIST_OFFSETS, 11, body))
    _, r = wire.flexible_response(conn)
    conn.close()
    r.int("i")  # throttle time

    def partition_answer(reader):
        index, error, timestamp, offset = reader.int("i"), reader.int("h"), reader.int("q"), \
            reader.int("q")
        reader.int("i")  # leader epoch
        reader.tags()
        return index, error, timestamp, offset

    def topic_answer(reader):
        name = reader.string()
        partitions = reader.array(partition_answer)
        reader.tags()
        return name, partitions

    assert r.array(topic_answer) == [("pending", [(0, 0, -1, -1)])]


DESCRIBE_TOPIC_PARTITIONS, UNKNOWN_TOPIC_OR_PARTITION = 75, 3


def describe_topic_partitions(bootstrap, topics, limit, cursor=None):
    """DescribeTopicPartitions v0: ([(error, name, [partition index])], next cursor)."""
    body = wire.compact_array([wire.compact_string(t) + wire.TAGS for t in topics])
    body += struct.pack(">i", limit)
    if cursor is None:
        body += struct.pack(">b", -1)
    else:
        body += struct.pack(">b", 1) + wire.compact_string(cursor[0])
        body += struct.pack(">i", cursor[1]) + wire.TAGS
    conn = wire.Connection(bootstrap)
    conn.send(flexible(DESCRIBE_TOPIC_PARTITIONS, 0, body + wire.TAGS))
    _, r = wire.flexible_response(conn)
    conn.close()
    r.int("i")  # throttle time

    def partition_answer(p):
        p.int("h")
        index = p.int("i")
        p.int("i")  # leader
        p.int("i")  # leader epoch
        for _ in range(4):  # replicas, isr, eligible leader replicas, last known elr
            p.array(lambda e: e.int("i"))
        p.array(lambda e: e.int("i"))  # offline replicas
        p.tags()
        return index

    def topic_answer(t):
        error, name = t.int("h"), t.string()
        t.take(16)  # topic id
        t.int("b")  # internal
        partitions = t.array(partition_answer)
        t.int("i")  # authorized operations
        t.tags()
        return error, name, partitions

    topics = r.array(topic_answer)
    next_cursor = None
    if r.int("b") >= 0:
        next_cursor = (r.string(), r.int("i"))
        r.tags()
    return topics, next_cursor


def test_describe_topic_partitions_pages_by_a_cursor(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    from confluent_kafka.admin import NewTopic
    for future in admin.create_topics([NewTopic("t-b", 2), NewTopic("t-a", 3)]).values():
        future.result(10)
    # The topics asked for, in name order, two partitions per answer.
    first = describe_topic_partitions(broker.bootstrap, ["t-b", "t-a"], 2)
    assert first == ([(0, "t-a", [0, 1])], ("t-a", 2))
    second = describe_topic_partitions(broker.bootstrap, ["t-b", "t-a"], 2, first[1])
    assert second == ([(0, "t-a", [2]), (0, "t-b", [0])], ("t-b", 1))
    third = describe_topic_partitions(broker.bootstrap, ["t-b", "t-a"], 2, second[1])
    assert third == ([(0, "t-b", [1])], None)
    # An unknown topic is answered with its error; no list means every topic.
    assert describe_topic_partitions(broker.bootstrap, ["nope"], 10) == (
        [(UNKNOWN_TOPIC_OR_PARTITION, "nope", [])], None)
    every, cursor = describe_topic_partitions(broker.bootstrap, [], 100)
    assert [(name, parts) for _, name, parts in every] == [("t-a", [0, 1, 2]), ("t-b", [0, 1])]
    assert cursor is None


DESCRIBE_LOG_DIRS = 35


def log_dir_sizes(bootstrap, topics=None):
    """DescribeLogDirs v4: (top-level error, [(log dir, {(topic, partition): size})])."""
    if topics is None:
        body = wire.uvarint(0)
    else:
        body = wire.compact_array([
            wire.compact_string(t) + wire.compact_array([struct.pack(">i", p) for p in ps])
            + wire.TAGS for t, ps in topics.items()])
    conn = wire.Connection(bootstrap)
    conn.send(flexible(DESCRIBE_LOG_DIRS, 4, body + wire.TAGS))
    _, r = wire.flexible_response(conn)
    conn.close()
    r.int("i")  # throttle time
    error = r.int("h")

    def result(d):
        d.int("h")
        log_dir = d.string()
        sizes = {}
        for name, partitions in d.array(lambda t: (t.string(), topic_partitions(t))):
            sizes.update({(name, index): size for index, size in partitions})
        d.int("q")  # total bytes
        d.int("q")  # usable bytes
        d.tags()
        return log_dir, sizes

    def topic_partitions(t):
        def partition(p):
            index, size = p.int("i"), p.int("q")
            p.int("q")  # offset lag
            p.int("b")  # future
            p.tags()
            return index, size

        partitions = t.array(partition)
        t.tags()
        return partitions

    return error, r.array(result)


def test_describe_log_dirs_sizes_grow_with_writes_and_shrink_after_deletion(broker):
    from confluent_kafka import TopicPartition
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for _ in range(20):
        p.produce("sized", value=b"v" * 1000, partition=0)
    assert p.flush(10) == 0
    error, [(log_dir, first)] = log_dir_sizes(broker.bootstrap)
    assert error == 0 and log_dir.endswith("objects")
    assert first[("sized", 0)] >= 20 * 1000
    for _ in range(20):
        p.produce("sized", value=b"v" * 1000, partition=0)
    assert p.flush(10) == 0
    _, [(_, second)] = log_dir_sizes(broker.bootstrap, {"sized": [0, 7]})
    # Partition 7 does not exist: left out, as a Kafka broker leaves out what it does not host.
    assert list(second) == [("sized", 0)]
    assert second[("sized", 0)] >= first[("sized", 0)] + 20 * 1000
    # Records deleted up to the end: the live batches and their bytes are gone.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    [done] = admin.delete_records([TopicPartition("sized", 0, 40)]).values()
    done.result(10)
    _, [(_, third)] = log_dir_sizes(broker.bootstrap, {"sized": [0]})
    assert third[("sized", 0)] < first[("sized", 0)]
