"""Malformed frames, bad CRCs, oversized requests and unknown topics: clear errors, no harm."""

import struct
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire as wire
from conftest import free_port, metric_value, scrape_metrics

PRODUCE, API_VERSIONS = 0, 18
CORRUPT_MESSAGE, UNKNOWN_TOPIC_OR_PARTITION, UNSUPPORTED_VERSION = 2, 3, 35


def still_serves(broker):
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    results = []
    p.produce("alive", value=b"ok", on_delivery=lambda err, msg: results.append(err))
    assert p.flush(15) == 0 and results == [None]


def test_garbage_truncated_and_oversized_frames_close_only_that_connection(broker):
    for payload in [
        struct.pack(">i", 2_000_000_000) + b"x",  # above max_request_bytes
        struct.pack(">i", -5),
        struct.pack(">i", 6) + b"\x00\x00\x00\x00\x00\x00",  # too short for a header
        struct.pack(">i", 10) + struct.pack(">hhi", 9999, 0, 1) + b"\x00\x00",  # unknown API
        wire.request(PRODUCE, 3, 7, b"\xff\xff\xff"),  # body cut short
    ]:
        conn = wire.Connection(broker.bootstrap)
        conn.send(payload)
        assert conn.is_closed_by_peer(), payload
        conn.close()
    still_serves(broker)


def test_a_batch_with_a_bad_crc_gets_corrupt_message_and_is_not_stored(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("crc", num_partitions=1)])["crc"].result(10)
    good = wire.record_batch([b"first"])
    bad = bytearray(wire.record_batch([b"second"]))
    bad[-2] ^= 0x40
    conn = wire.Connection(broker.bootstrap)
    conn.send(wire.request(PRODUCE, 3, 1, wire.produce_v3("crc", 0, bytes(bad))))
    _, body = conn.recv_response()
    assert wire.parse_produce_v3_error(body)[1] == CORRUPT_MESSAGE
    conn.send(wire.request(PRODUCE, 3, 2, wire.produce_v3("crc", 0, good)))
    _, body = conn.recv_response()
    assert wire.parse_produce_v3_error(body) == (0, 0, 0), "the bad batch took no offset"
    conn.close()


def test_unknown_topic_without_auto_creation(make_broker):
    broker = make_broker("strict", extra_config="auto_create_topics = false").start()
    conn = wire.Connection(broker.bootstrap)
    conn.send(wire.request(PRODUCE, 3, 1, wire.produce_v3("nope", 0, wire.record_batch([b"x"]))))
    _, body = conn.recv_response()
    assert wire.parse_produce_v3_error(body)[1] == UNKNOWN_TOPIC_OR_PARTITION
    conn.close()


def test_unsupported_api_versions_version_gets_the_v0_error_answer(broker):
    # ApiVersions v99 with a flexible (v2) header: client id, then an empty tag buffer.
    frame = wire.request(API_VERSIONS, 99, 42, b"\x00")
    conn = wire.Connection(broker.bootstrap)
    conn.send(frame)
    correlation_id, body = conn.recv_response()
    assert correlation_id == 42
    error_code, api_count = struct.unpack_from(">hi", body, 0)
    assert error_code == UNSUPPORTED_VERSION
    keys = {struct.unpack_from(">h", body, 6 + 6 * i)[0] for i in range(api_count)}
    assert {0, 1, 2, 3, 18, 19, 20} <= keys
    conn.close()


def test_requests_share_a_bounded_memory_budget(make_broker):
    """A client holding a large unfinished request makes others wait for room instead of
    letting the broker's request memory grow; the room comes back when it goes away. What a
    client only announces, and does not send, holds nothing."""
    metrics_port = free_port()
    config = ("max_request_bytes = 1048576\nmax_in_flight_request_bytes = 1572864\n"
              f'metrics_listen = "127.0.0.1:{metrics_port}"\n'
              "[shards]\ncores = [0]\n")
    broker = make_broker("budget", config).start()
    records = wire.record_batch([b"v" * 700_000])
    produce = wire.request(PRODUCE, 3, 9, wire.produce_v3("budget", 0, records))

    # Announced, not sent: no memory is held, others go on.
    announcer = wire.Connection(broker.bootstrap)
    announcer.send(struct.pack(">i", 1_000_000))
    time.sleep(0.3)
    prompt = wire.Connection(broker.bootstrap, timeout=10)
    prompt.send(produce)
    assert prompt.recv_response()[0] == 9
    prompt.close()

    # Sent (all but its last bytes): the request holds its bytes, others wait for room.
    hog = wire.Connection(broker.bootstrap)
    hog.send(struct.pack(">i", 1_000_000) + b"\0" * 990_000)
    # Until the broker has read those bytes into its budget (a fixed pause was too short on
    # a loaded machine, and the next request got in first).
    deadline = time.time() + 15
    while (metric_value(scrape_metrics(metrics_port), 'shoal_request_memory_bytes{shard="0"}')
           or 0) < 990_000:
        assert time.time() < deadline, "the hog's bytes were never held"
        time.sleep(0.05)
    waiting = wire.Connection(broker.bootstrap, timeout=1.5)
    waiting.send(produce)
    try:
        waiting.recv_response()
        raise AssertionError("answered while the budget was held")
    except OSError:
        pass  # timed out: the request waits for memory
    hog.close()
    waiting.sock.settimeout(15)
    correlation_id, body = waiting.recv_response()
    assert correlation_id == 9
    assert wire.parse_produce_v3_error(body)[1] == 0
    waiting.close()
    announcer.close()


def batch_with_offset_deltas(values, deltas, timestamp=1_700_000_000_000):
    """An uncompressed v2 batch whose records carry the given offset deltas."""
    records = b""
    for delta, value in zip(deltas, values):
        body = (b"\x00" + wire.varint(0) + wire.varint(delta) + wire.varint(-1)
                + wire.varint(len(value)) + value + wire.varint(0))
        records += wire.varint(len(body)) + body
    after_crc = struct.pack(">hiqqqhii", 0, len(values) - 1, timestamp, timestamp, -1, -1, -1,
                            len(values)) + records
    after_length = struct.pack(">ibI", -1, 2, wire.crc32c(after_crc)) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def produce_v8(connection, topic, batch):
    """(error code, [(batch index, message)], error message) of a one-partition Produce v8."""
    body = wire.string(None) + struct.pack(">hi", -1, 30_000)
    body += struct.pack(">i", 1) + wire.string(topic)
    body += struct.pack(">i", 1) + struct.pack(">ii", 0, len(batch)) + batch
    connection.send(wire.request(0, 8, 5, body))
    _, answer = connection.recv_response()
    reader = wire.Reader(answer)
    reader.int("i")  # topics
    reader.take(reader.int("h"))  # name
    reader.int("i")  # partitions
    _, error, _, _, _ = (reader.int("i"), reader.int("h"), reader.int("q"),
                         reader.int("q"), reader.int("q"))
    record_errors = []
    for _ in range(reader.int("i")):
        index = reader.int("i")
        length = reader.int("h")
        record_errors.append((index, reader.take(length).decode() if length >= 0 else None))
    length = reader.int("h")
    message = reader.take(length).decode() if length >= 0 else None
    return error, record_errors, message


def test_an_invalid_record_is_named_by_its_index_in_the_batch(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("records", num_partitions=1)])["records"].result(10)
    connection = wire.Connection(broker.bootstrap)
    # Record 2 of 4 says it is at offset delta 7: INVALID_RECORD (87), with KIP-467's
    # record_errors naming record 2, and nothing stored.
    batch = batch_with_offset_deltas([b"a", b"b", b"c", b"d"], [0, 1, 7, 3])
    error, record_errors, message = produce_v8(connection, "records", batch)
    assert error == 87, error
    assert [index for index, _ in record_errors] == [2], record_errors
    assert message
    good = batch_with_offset_deltas([b"a", b"b"], [0, 1])
    assert produce_v8(connection, "records", good) == (0, [], None)
    connection.close()


def api_versions_tags(bootstrap, version):
    """ApiVersions v3+ on the wire: the tagged fields of its answer, {tag: bytes}."""
    body = b"\x00" + wire.compact_string("wire-test") + wire.compact_string("1") + wire.TAGS
    conn = wire.Connection(bootstrap)
    conn.send(wire.request(API_VERSIONS, version, 5, body))
    _, answer = conn.recv_response()  # ApiVersions answers with header v0
    conn.close()
    r = wire.Reader(answer)
    assert r.int("h") == 0
    for _ in range(r.uvarint() - 1):
        r.take(6)
        r.tags()
    r.int("i")  # throttle time
    tags = {}
    for _ in range(r.uvarint()):
        tag = r.uvarint()
        tags[tag] = r.take(r.uvarint())
    return tags


def test_api_versions_v3_leaves_out_features_whose_lowest_level_is_0_as_kafka_does(broker):
    """KAFKA-17011: clients before ApiVersions v4 refuse a supported feature whose minimum
    version is 0, so Kafka leaves those out of v3 answers and lists them from v4."""
    supported_features = 0
    assert supported_features not in api_versions_tags(broker.bootstrap, 3)
    assert supported_features in api_versions_tags(broker.bootstrap, 4)
