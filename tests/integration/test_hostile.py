"""A hostile client cannot crash, freeze or exhaust the broker. Each test sends the bytes of a
reproducer over a real socket, checks the answer (or the closed connection), that an ordinary
client on another connection keeps working, and that the broker's memory stays bounded
(`peak RSS` lines are printed for the record; run with -s to see them)."""

import gzip
import io
import os
import random
import socket
import struct
import threading
import time

import zstandard
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire as wire
from conftest import free_port, metric_value, scrape_metrics

PRODUCE, FETCH, LIST_OFFSETS, METADATA, JOIN_GROUP = 0, 1, 2, 3, 11
CORRUPT_MESSAGE, UNKNOWN_TOPIC, INVALID_TIMESTAMP = 2, 3, 32
INVALID_REQUEST, UNSUPPORTED_COMPRESSION, GROUP_MAX_SIZE, MEMBER_ID_REQUIRED = 42, 76, 81, 79
INVALID_RECORD = 87
NOW_MS = int(time.time() * 1000)


def rss_mb(broker):
    with open(f"/proc/{broker.process.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return 0


class PeakRss:
    """Samples the broker's RSS in the background while an attack runs."""

    def __init__(self, broker):
        self.broker, self.peak, self.stop = broker, rss_mb(broker), threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()

    def _sample(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, rss_mb(self.broker))
            time.sleep(0.05)

    def done(self, what):
        self.stop.set()
        self.thread.join()
        print(f"peak RSS under {what}: {self.peak} MB")
        return self.peak


def still_serves(broker, topic="alive"):
    """A produce and a consume on other connections work."""
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    results = []
    p.produce(topic, value=b"ok", partition=0, on_delivery=lambda err, msg: results.append(msg))
    assert p.flush(15) == 0 and results[0].error() is None
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "probe",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, results[0].offset())])
    deadline = time.time() + 15
    got = None
    while got is None and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got = m.value()
    c.close()
    assert got == b"ok"


def create_topic(broker, name, partitions=1, config=None):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    topic = NewTopic(name, num_partitions=partitions, config=config or {})
    admin.create_topics([topic])[name].result(15)


def batch(records, count, last_delta=None, attributes=0, base_ts=NOW_MS, max_ts=NOW_MS):
    """A v2 batch around an encoded records payload, with a valid CRC."""
    last_delta = count - 1 if last_delta is None else last_delta
    after_crc = struct.pack(">hiqqqhii", attributes, last_delta, base_ts, max_ts, -1, -1, -1,
                            count) + records
    crc = wire.crc32c(after_crc)
    after_length = struct.pack(">ibI", -1, 2, crc) + after_crc
    return struct.pack(">qi", 0, len(after_length)) + after_length


def records(values, ts_deltas=None):
    out = b""
    for i, value in enumerate(values):
        delta = ts_deltas[i] if ts_deltas else 0
        body = b"\x00" + wire.varint(delta) + wire.varint(i) + wire.varint(-1) \
            + wire.varint(len(value)) + value + wire.varint(0)
        out += wire.varint(len(body)) + body
    return out


def produce_error(broker, topic, batch_bytes, version=3):
    conn = wire.Connection(broker.bootstrap, timeout=30)
    conn.send(wire.request(PRODUCE, version, 5, wire.produce_v3(topic, 0, batch_bytes)))
    answer = conn.recv_response()
    conn.close()
    assert answer is not None, "the broker closed the connection instead of answering"
    return wire.parse_produce_v3_error(answer[1])[1]


def list_offset_by_time(broker, topic, timestamp):
    body = struct.pack(">i", -1) + struct.pack(">i", 1) + wire.string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iq", 0, timestamp)
    conn = wire.Connection(broker.bootstrap, timeout=30)
    conn.send(wire.request(LIST_OFFSETS, 1, 3, body))
    _, answer = conn.recv_response()
    conn.close()
    pos = 4
    (name_len,) = struct.unpack_from(">h", answer, pos)
    pos += 2 + name_len + 4
    _, error, _, offset = struct.unpack_from(">ihqq", answer, pos)
    return error, offset


def fetch_v4(topic, partition, offset, max_wait_ms, max_bytes=50 << 20, min_bytes=1):
    body = struct.pack(">iiiib", -1, max_wait_ms, min_bytes, max_bytes, 0)
    if topic is None:
        return body + struct.pack(">i", 0)
    body += struct.pack(">i", 1) + wire.string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, max_bytes)
    return body


def test_count_bombs_and_random_frames_close_only_their_connection(broker):
    create_topic(broker, "alive")
    peak = PeakRss(broker)
    # The 18-byte request that aborted the broker: Metadata v1 claiming 2^31-1 topics.
    conn = wire.Connection(broker.bootstrap)
    conn.send(b"\x00\x00\x00\x0e\x00\x03\x00\x01\x00\x00\x00\x01\xff\xff\x7f\xff\xff\xff")
    assert conn.is_closed_by_peer()
    # The same claim through the other APIs it was found in.
    for api, version in [(1, 4), (9, 1), (13, 0), (14, 0), (15, 0), (19, 2), (21, 0), (32, 1),
                         (47, 0), (11, 2), (8, 2), (2, 1)]:
        for body in [b"\x7f\xff\xff\xff" * 16, b"\x00" * 3 + b"\x7f\xff\xff\xff" * 16]:
            conn = wire.Connection(broker.bootstrap)
            conn.send(wire.request(api, version, 1, body))
            assert conn.recv_response() is None or conn.is_closed_by_peer(), (api, version)
            conn.close()
    # Random bodies for every served API at every served version.
    rng = random.Random(13)
    served = [(0, 3, 9), (1, 4, 13), (2, 1, 8), (3, 0, 12), (19, 2, 7), (20, 1, 6), (21, 0, 2),
              (22, 0, 4), (37, 0, 3), (60, 0, 1), (10, 0, 4), (23, 2, 4), (61, 0, 0), (32, 1, 4),
              (33, 0, 2), (44, 0, 1), (11, 0, 9), (14, 0, 5), (12, 0, 4), (13, 0, 5), (8, 2, 8),
              (9, 1, 8), (16, 0, 5), (15, 0, 5), (42, 0, 2), (47, 0, 0)]
    sent = 0
    for _ in range(600):
        api, low, high = rng.choice(served)
        body = bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 120)))
        conn = wire.Connection(broker.bootstrap, timeout=5)
        conn.send(wire.request(api, rng.randint(low, high), 2, body))
        try:
            conn.recv_response()  # an answer, or the connection closed
        except OSError:
            pass
        conn.close()
        sent += 1
    assert broker.process.poll() is None, broker.log()
    still_serves(broker)
    assert peak.done(f"{sent + 25} malformed requests") < 300


def test_a_fetch_of_nothing_sleeps_and_the_broker_keeps_answering(make_broker):
    broker = make_broker("sleepy", "[fetch]\nmax_wait_ms = 2500\n").start()
    create_topic(broker, "alive")
    # One long poll of nothing per shard, asking for 2^31-1 ms (capped at 2.5 s).
    pollers = []
    started = time.time()
    for _ in range(4):
        conn = wire.Connection(broker.bootstrap, timeout=10)
        conn.send(wire.request(FETCH, 4, 7, fetch_v4(None, 0, 0, 2**31 - 1)))
        pollers.append(conn)
    time.sleep(0.2)
    probe = time.time()
    still_serves(broker)
    assert time.time() - probe < 5, "the broker answered others while the polls waited"
    for conn in pollers:
        assert conn.recv_response()[0] == 7
        conn.close()
    waited = time.time() - started
    assert 2.4 <= waited < 8, waited
    # A consumer of a deleted (unknown) topic is told at once, not after its wait.
    conn = wire.Connection(broker.bootstrap, timeout=10)
    asked = time.time()
    conn.send(wire.request(FETCH, 4, 8, fetch_v4("gone", 0, 0, 20_000)))
    _, body = conn.recv_response()
    assert time.time() - asked < 2
    # throttle, topics(1), name, partitions(1), index, error
    pos = 4 + 4 + 2 + len("gone") + 4 + 4
    assert struct.unpack_from(">h", body, pos)[0] == UNKNOWN_TOPIC
    conn.close()


def test_poison_batches_are_refused_and_old_clients_lose_nothing(make_broker):
    broker = make_broker("poison", "[coordinator]\nretention_check_interval_ms = 500\n").start()
    create_topic(broker, "alive")
    create_topic(broker, "poison", config={"retention.ms": "3600000"})
    peak = PeakRss(broker)
    one = records([b"x"])
    # 2^31-1 records claimed around one real record.
    assert produce_error(broker, "poison", batch(one, 2**31 - 1)) == INVALID_RECORD
    # Count and last offset delta disagree; records that do not parse; trailing garbage.
    assert produce_error(broker, "poison", batch(one, 1, last_delta=2**31 - 1)) == INVALID_RECORD
    assert produce_error(broker, "poison", batch(b"\xff" * 40, 1)) == INVALID_RECORD
    assert produce_error(broker, "poison", batch(one + b"junk", 1)) == INVALID_RECORD
    # Garbage claimed to be gzip; codecs Kafka does not define.
    assert produce_error(broker, "poison", batch(b"\x1f\x8b" + b"\x07" * 60, 1, attributes=1)) \
        == CORRUPT_MESSAGE
    for codec in (5, 6, 7):
        assert produce_error(broker, "poison", batch(one, 1, attributes=codec)) == CORRUPT_MESSAGE
    # A gzip batch inflating to 256 MiB and a zstd one inflating to 1 GiB (one record with
    # a value of zeros): refused at the 64 MiB cap, having inflated no more than that.
    def bomb_chunks(size):
        body_prefix = b"\x00" + wire.varint(0) + wire.varint(0) + wire.varint(-1) \
            + wire.varint(size)
        yield wire.varint(len(body_prefix) + size + 1) + body_prefix
        for _ in range(size >> 24):
            yield bytes(1 << 24)
        yield wire.varint(0)

    zeros = io.BytesIO()
    with gzip.GzipFile(fileobj=zeros, mode="wb", compresslevel=6) as gz:
        for chunk in bomb_chunks(256 << 20):
            gz.write(chunk)
    assert produce_error(broker, "poison", batch(zeros.getvalue(), 1, attributes=1)) \
        == CORRUPT_MESSAGE
    compressor = zstandard.ZstdCompressor(level=3).compressobj()
    bomb = b"".join(compressor.compress(c) for c in bomb_chunks(1 << 30)) + compressor.flush()
    print(f"zstd bomb: {len(bomb)} bytes inflating to 1 GiB")
    assert produce_error(broker, "poison", batch(bomb, 1, attributes=4), version=7) \
        == CORRUPT_MESSAGE
    # Negative timestamps other than "none".
    assert produce_error(broker, "poison", batch(records([b"x"], [0]), 1, base_ts=-5000,
                                                 max_ts=-5000)) == INVALID_TIMESTAMP
    # zstd before Produce v7 is refused; a good zstd batch at v7 is taken.
    good_zstd = zstandard.ZstdCompressor().compress(records([b"z"]))
    assert produce_error(broker, "poison", batch(good_zstd, 1, attributes=4)) \
        == UNSUPPORTED_COMPRESSION
    assert produce_error(broker, "poison", batch(good_zstd, 1, attributes=4), version=7) == 0
    # An old client (Sarama 1.22) writes -1 as the max timestamp: stored with the records'.
    assert produce_error(broker, "poison", batch(records([b"s"]), 1, max_ts=-1)) == 0
    # Transaction markers come from the broker only; transactional records need a producer
    # id (and, with one, its open transaction: see test_transactions.py).
    assert produce_error(broker, "poison", batch(records([b"m"]), 1, attributes=0x30)) \
        == INVALID_REQUEST
    assert produce_error(broker, "poison", batch(records([b"t"]), 1, attributes=0x10)) \
        == INVALID_REQUEST
    assert list_offset_by_time(broker, "poison", NOW_MS - 60_000) == (0, 0)
    assert list_offset_by_time(broker, "poison", NOW_MS) == (0, 0)
    # Nothing is later than the records' time: no offset (-1), not the old client's batch.
    assert list_offset_by_time(broker, "poison", NOW_MS + 1) == (0, -1)
    # Retention (1 hour, checked every 0.5 s) keeps minutes-old batches.
    time.sleep(2)
    assert list_offset_by_time(broker, "poison", -2) == (0, 0)
    assert list_offset_by_time(broker, "poison", -1) == (0, 2)
    assert broker.process.poll() is None, broker.log()
    still_serves(broker)
    assert peak.done("poison batches") < 400


def test_unread_fetch_answers_do_not_grow_memory(make_broker):
    broker = make_broker("hoarder").start()
    create_topic(broker, "alive")
    create_topic(broker, "big")
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 20})
    for i in range(1400):
        p.produce("big", value=os.urandom(10_000), partition=0)
        if i % 100 == 0:
            p.poll(0)
    assert p.flush(60) == 0
    peak = PeakRss(broker)
    hogs = []
    for _ in range(7):
        conn = wire.Connection(broker.bootstrap, timeout=10)
        conn.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        for i in range(40):
            try:
                conn.send(wire.request(FETCH, 4, i, fetch_v4("big", 0, 0, 100)))
            except OSError:
                break  # muted: the broker stopped reading, the socket filled
        hogs.append(conn)
    time.sleep(3)
    still_serves(broker)
    peak_mb = peak.done("7 connections x 40 unread 14 MB fetches")
    for conn in hogs:
        conn.close()
    assert peak_mb < 900, peak_mb
    assert broker.process.poll() is None


def test_slow_and_silent_clients_hold_nothing_and_are_closed(make_broker):
    config = ("request_read_timeout_ms = 1000\nconnections_max_idle_ms = 2000\n"
              "max_connections_per_ip = 2000\n")
    broker = make_broker("slowloris", config).start()
    create_topic(broker, "alive")
    peak = PeakRss(broker)
    # Each announces a 1 MB request and sends nothing more.
    announcers = []
    for _ in range(600):
        conn = wire.Connection(broker.bootstrap, timeout=10)
        conn.send(struct.pack(">i", 1_000_000))
        announcers.append(conn)
    silent = [wire.Connection(broker.bootstrap, timeout=10) for _ in range(50)]
    probe = time.time()
    still_serves(broker)
    assert time.time() - probe < 10
    # Closed by the broker past the read deadline (and the idle time for the silent ones).
    time.sleep(3.5)
    for conn in announcers + silent:
        assert conn.is_closed_by_peer()
        conn.close()
    assert peak.done("600 slowloris + 50 idle connections") < 300


def test_connections_past_the_limits_are_closed_at_once(make_broker):
    metrics_port = free_port()
    broker = make_broker("crowded", "max_connections_per_ip = 20\n"
                         f'metrics_listen = "127.0.0.1:{metrics_port}"\n').start()
    time.sleep(0.5)  # the start-up probe's connection is let go
    held = [wire.Connection(broker.bootstrap) for _ in range(20)]
    for conn in held:
        conn.send(wire.request(18, 0, 1, b""))
        assert conn.recv_response() is not None
    extra = wire.Connection(broker.bootstrap)
    assert extra.is_closed_by_peer()
    assert metric_value(scrape_metrics(metrics_port), "shoal_connections_refused_total") == 1
    held.pop().close()
    time.sleep(0.5)
    again = wire.Connection(broker.bootstrap)
    again.send(wire.request(18, 0, 1, b""))
    assert again.recv_response() is not None
    for conn in held + [again]:
        conn.close()


def join_v5(group, client_metadata=b""):
    body = wire.string(group) + struct.pack(">ii", 10_000, 10_000)
    body += wire.string("") + wire.string(None) + wire.string("consumer")
    body += struct.pack(">i", 1) + wire.string("range") + struct.pack(">i", len(client_metadata))
    return body + client_metadata


def test_pending_join_members_are_bounded(make_broker):
    broker = make_broker("joiners").start()
    peak = PeakRss(broker)
    long_client_id = "c" * 32_000
    answers = {MEMBER_ID_REQUIRED: 0, GROUP_MAX_SIZE: 0}
    longest_id = 0
    for _ in range(10):
        conn = wire.Connection(broker.bootstrap, timeout=30)
        for i in range(300):
            conn.send(wire.request(JOIN_GROUP, 5, i, join_v5("crowd"), client_id=long_client_id))
        for _ in range(300):
            _, body = conn.recv_response()
            _, error, _ = struct.unpack_from(">ihi", body)
            answers[error] = answers.get(error, 0) + 1
            pos = 10
            for _ in range(2):  # protocol name, leader
                (n,) = struct.unpack_from(">h", body, pos)
                pos += 2 + max(n, 0)
            (member_len,) = struct.unpack_from(">h", body, pos)
            longest_id = max(longest_id, member_len)
        conn.close()
    # At most max_size (1000) ids are handed out and awaited; the rest are refused.
    assert answers[MEMBER_ID_REQUIRED] <= 1000
    assert answers[GROUP_MAX_SIZE] >= 2000
    assert longest_id <= 128 + 37, longest_id
    # Member metadata past max_member_metadata_bytes (1 MiB) is refused.
    conn = wire.Connection(broker.bootstrap, timeout=30)
    conn.send(wire.request(JOIN_GROUP, 5, 1, join_v5("fat", b"m" * (2 << 20))))
    _, body = conn.recv_response()
    assert struct.unpack_from(">ih", body)[1] == INVALID_REQUEST
    conn.close()
    assert peak.done("3000 JoinGroups with 32 KB client ids") < 300
