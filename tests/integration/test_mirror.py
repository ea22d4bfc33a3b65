"""Cluster mirroring (KIP-1279) between two Shoal brokers on loopback: offsets and bytes
preserved while the source takes writes, read-only mirror topics, pause/resume, failover and
failback, a destination restart and a source outage."""

import struct
import subprocess
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import kafka_wire as wire
from conftest import SHOAL_BIN, free_port

READ_ONLY_TOPIC = 134
FAST_RETRIES = [
    "--set", "mirror.fetch.wait.max.ms=200",
    "--set", "mirror.fetch.backoff.ms=200",
    "--set", "mirror.failed.retry.initial.backoff.ms=200",
    "--set", "mirror.failed.retry.max.backoff.ms=1000",
]


def cli(broker, *args, check=True):
    result = subprocess.run([SHOAL_BIN, "mirror", "--bootstrap", broker.bootstrap, *args],
                            capture_output=True, text=True, timeout=60)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def describe(broker, mirror="dr"):
    """{(topic, partition): (source offset, destination offset, lag, state)}"""
    out = cli(broker, "describe", mirror).stdout.splitlines()[1:]
    rows = {}
    for line in out:
        words = line.split()
        if len(words) >= 7:
            rows[(words[1], int(words[2]))] = (int(words[3]), int(words[4]), int(words[5]),
                                                " ".join(words[6:]))
    return rows


def wait_for(condition, timeout, what):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = condition()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def caught_up(broker, source, topic, partitions, mirror="dr"):
    """Every partition MIRRORING with the destination at the source's end."""
    ends = end_offsets(source, topic, partitions)

    def check():
        rows = describe(broker, mirror)
        return all(rows.get((topic, p), (0, -1, 0, ""))[1] == ends[p]
                   and rows[(topic, p)][3] == "MIRRORING" for p in range(partitions))
    return check


def end_offsets(broker, topic, partitions, isolation="read_committed"):
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "ends",
                  "isolation.level": isolation})
    ends = [c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(partitions)]
    c.close()
    return ends


def produce(broker, topic, count, start=0, partitions=3):
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(),
                         partition=i % partitions)
    assert producer.flush(30) == 0


class BackgroundProducer:
    """Keeps producing to the source in batches of 300 until stopped; counts what it sent."""

    def __init__(self, source, topic):
        self.produced = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(source, topic))

    def _run(self, source, topic):
        while not self._stop.is_set():
            produce(source, topic, 300, start=self.produced)
            self.produced += 300

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *_):
        self._stop.set()
        self._thread.join()


def raw_fetch(broker, topic, partition, offset=0):
    """The record bytes a Fetch v4 returns from `offset`: what a consumer receives."""
    body = struct.pack(">iiii", -1, 500, 1, 50 << 20) + struct.pack(">b", 0)
    body += struct.pack(">i", 1) + wire.string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", partition, offset, 50 << 20)
    conn = wire.Connection(broker.bootstrap)
    chunks = b""
    while True:
        conn.send(wire.request(1, 4, 1, body))
        _, response = conn.recv_response()
        pos = 4 + 4  # throttle, topic count
        (n,) = struct.unpack_from(">h", response, pos)
        pos += 2 + n + 4
        _, error, hw, _lso = struct.unpack_from(">ihqq", response, pos)
        pos += 4 + 2 + 8 + 8
        (aborted,) = struct.unpack_from(">i", response, pos)
        pos += 4 + max(aborted, 0) * 16
        (size,) = struct.unpack_from(">i", response, pos)
        records = response[pos + 4:pos + 4 + size]
        assert error == 0, error
        if not records:
            conn.close()
            return chunks
        chunks += records
        # Next fetch after the last whole batch.
        at, last_end = 0, offset
        while at + 12 <= len(records):
            base, length = struct.unpack_from(">qi", records, at)
            (delta,) = struct.unpack_from(">i", records, at + 23)
            last_end = base + delta + 1
            at += 12 + length
        offset = last_end
        body = body[:-16] + struct.pack(">iqi", partition, offset, 50 << 20)
        if offset >= hw:
            conn.close()
            return chunks


def identical(a, b, topic, partitions):
    """Same log start and end, and the same bytes from the log start on, on every partition."""
    for p in range(partitions):
        ca = Consumer({"bootstrap.servers": a.bootstrap, "group.id": "same"})
        cb = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "same"})
        marks_a = ca.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        marks_b = cb.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        ca.close()
        cb.close()
        if marks_a != marks_b:
            return False
        if raw_fetch(a, topic, p, marks_a[0]) != raw_fetch(b, topic, p, marks_a[0]):
            return False
    return True


@pytest.fixture
def pair(make_broker):
    source = make_broker("source").start()
    metrics_port = free_port()
    destination = make_broker(
        "destination", f'metrics_listen = "127.0.0.1:{metrics_port}"\n').start()
    destination.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    admin = AdminClient({"bootstrap.servers": source.bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=3)])["orders"].result(timeout=15)
    return source, destination


def test_mirror_preserves_offsets_and_bytes_while_the_source_takes_writes(pair):
    source, destination = pair
    produce(source, "orders", 900)
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    assert "orders: mirroring" in cli(destination, "add", "dr", "orders").stdout
    listed = cli(destination, "list").stdout
    assert "dr" in listed and source.bootstrap in listed

    # Keep producing while the mirror runs.
    with BackgroundProducer(source, "orders") as writer:
        time.sleep(3)
    produced = 900 + writer.produced
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")
    rows = describe(destination)
    assert all(row[2] == 0 for row in rows.values()), rows
    assert identical(source, destination, "orders", 3)
    # The lag is exported as a metric too.
    import urllib.request
    metrics = urllib.request.urlopen(destination.metrics_url, timeout=10).read().decode()
    for p in range(3):
        assert f'shoal_mirror_lag_records{{mirror="dr",topic="orders",partition="{p}"}} 0' \
            in metrics, metrics
    assert 'shoal_requests_total{api="AddTopicsToMirror"} 1' in metrics
    assert sum(end_offsets(destination, "orders", 3)) == produced

    # The mirror topic is read-only.
    errors = []
    producer = Producer({"bootstrap.servers": destination.bootstrap})
    producer.produce("orders", value=b"nope", on_delivery=lambda e, m: errors.append(e))
    producer.flush(15)
    assert errors[0] is not None and errors[0].code() == READ_ONLY_TOPIC, errors
    assert sum(end_offsets(destination, "orders", 3)) == produced


def test_pause_holds_the_lag_and_resume_closes_it(pair):
    source, destination = pair
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(destination, "add", "dr", "orders")
    produce(source, "orders", 300)
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")
    assert "orders: paused" in cli(destination, "pause", "orders").stdout
    assert cli(destination, "pause", "orders", check=False).returncode != 0  # already paused
    before = end_offsets(destination, "orders", 3)
    produce(source, "orders", 300, start=300)
    time.sleep(2)
    assert end_offsets(destination, "orders", 3) == before
    assert all("PAUSED" in row[3] for row in describe(destination).values())
    assert "orders: resumed" in cli(destination, "resume", "orders").stdout
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0 after resume")
    assert identical(source, destination, "orders", 3)


def test_failover_then_failback_leaves_both_clusters_identical(pair):
    source, destination = pair
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(destination, "add", "dr", "orders")
    produce(source, "orders", 600)
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")

    # Failover: the destination takes over; the old source still took writes no one mirrored.
    assert "orders: removed" in cli(destination, "remove", "dr", "orders").stdout
    produce(source, "orders", 90, start=10_000)
    produce(destination, "orders", 150, start=20_000)
    assert end_offsets(source, "orders", 3) == [230, 230, 230]
    assert end_offsets(destination, "orders", 3) == [250, 250, 250]

    # Failback: the old source mirrors the new one under the same mirror name; what it took
    # after the failover is truncated and both end up identical.
    cli(source, "create", "dr", "--source", destination.bootstrap, *FAST_RETRIES)
    cli(source, "add", "dr", "orders")
    wait_for(caught_up(source, destination, "orders", 3), 60, "the old source caught up")
    assert identical(source, destination, "orders", 3)
    assert end_offsets(source, "orders", 3) == [250, 250, 250]


def test_a_destination_killed_mid_mirroring_resumes_without_gaps_or_duplicates(pair):
    source, destination = pair
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(destination, "add", "dr", "orders")
    with BackgroundProducer(source, "orders") as writer:
        time.sleep(2)
        destination.kill()
        time.sleep(1)
        destination.start()
        time.sleep(2)
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0 after the restart")
    assert identical(source, destination, "orders", 3)
    assert sum(end_offsets(destination, "orders", 3)) == writer.produced


def test_a_killed_source_fails_the_partitions_until_it_returns(pair):
    source, destination = pair
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(destination, "add", "dr", "orders")
    produce(source, "orders", 300)
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")
    source.kill()
    wait_for(lambda: all(row[3] == "FAILED" for row in describe(destination).values()), 30,
             "every partition FAILED")
    source.start()
    produce(source, "orders", 300, start=300)
    wait_for(caught_up(destination, source, "orders", 3), 60, "recovered and caught up")
    assert identical(source, destination, "orders", 3)


def test_metadata_sync_follows_partitions_configs_and_inactive_group_offsets(pair):
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import (AlterConfigOpType, ConfigEntry, ConfigResource,
                                       NewPartitions)

    source, destination = pair
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES,
        "--set", "mirror.metadata.refresh.interval.ms=500")
    cli(destination, "add", "dr", "orders")
    produce(source, "orders", 300)
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")

    admin = AdminClient({"bootstrap.servers": source.bootstrap})
    admin.create_partitions([NewPartitions("orders", 5)])["orders"].result(timeout=15)
    resource = ConfigResource(ConfigResource.Type.TOPIC, "orders", incremental_configs=[
        ConfigEntry("retention.ms", "3600000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)
    # A group committed on the source and has no members on the destination.
    offsets = ConsumerGroupTopicPartitions(
        "billing", [TopicPartition("orders", 0, 42), TopicPartition("orders", 1, 7)])
    admin.alter_consumer_group_offsets([offsets])["billing"].result(timeout=15)
    produce(source, "orders", 500, start=300, partitions=5)

    wait_for(caught_up(destination, source, "orders", 5), 60, "five partitions caught up")
    assert identical(source, destination, "orders", 5)
    dest_admin = AdminClient({"bootstrap.servers": destination.bootstrap})
    described = ConfigResource(ConfigResource.Type.TOPIC, "orders")

    def retention_synced():
        entries = dest_admin.describe_configs([described])[described].result(timeout=15)
        return entries["retention.ms"].value == "3600000"

    wait_for(retention_synced, 30, "retention.ms synced")
    request = ConsumerGroupTopicPartitions(
        "billing", [TopicPartition("orders", 0), TopicPartition("orders", 1)])

    def offsets_synced():
        got = dest_admin.list_consumer_group_offsets([request])["billing"].result(timeout=15)
        return [tp.offset for tp in got.topic_partitions] == [42, 7]

    wait_for(offsets_synced, 30, "group offsets synced")


def test_mirror_admin_errors_are_clear(pair):
    source, destination = pair
    bad = cli(destination, "create", "dr.removed", "--source", source.bootstrap, check=False)
    assert bad.returncode != 0 and "error 135" in bad.stderr  # INVALID_MIRROR_NAME
    # Hostname checks cannot be turned off: the setting is refused, not ignored.
    bad = cli(destination, "create", "dr", "--source", source.bootstrap, "--set",
              "ssl.endpoint.identification.algorithm=", check=False)
    assert bad.returncode != 0 and "unsupported setting" in bad.stderr
    bad = cli(destination, "create", "dr", "--source", source.bootstrap, "--set",
              "security.protocol=SASL_SSL", check=False)
    assert bad.returncode != 0 and "username and password" in bad.stderr
    bad = cli(destination, "add", "nope", "orders", check=False)
    assert "error 136" in bad.stderr  # UNKNOWN_MIRROR
    cli(destination, "create", "dr", "--source", source.bootstrap)
    assert "error 141" in cli(destination, "create", "dr", "--source", source.bootstrap,
                              check=False).stderr  # MIRROR_ALREADY_EXISTS
    assert "missing: error 3" in cli(destination, "add", "dr", "missing", check=False).stdout
    cli(destination, "add", "dr", "orders")
    again = cli(destination, "add", "dr", "orders", check=False)
    assert "orders: error 42" in again.stdout  # INVALID_REQUEST: already mirroring
    cli(destination, "create", "other", "--source", source.bootstrap)
    assert "orders: error 137" in cli(destination, "add", "other", "orders",
                                      check=False).stdout  # TOPIC_ALREADY_IN_MIRROR
    assert "orders: error 138" in cli(destination, "remove", "other", "orders",
                                      check=False).stdout  # TOPIC_NOT_IN_MIRROR
    assert "orders: error 140" in cli(destination, "resume", "orders",
                                      check=False).stdout  # MIRROR_TOPIC_NOT_PAUSED
    # A source that does not answer: the request fails cleanly, nothing is created.
    cli(destination, "create", "dead", "--source", f"127.0.0.1:{free_port()}")
    dead = cli(destination, "add", "dead", "payments", check=False)
    assert dead.returncode != 0 and "error 13" in dead.stderr


def test_the_mirror_keeps_the_source_log_start_offset(pair):
    source, destination = pair
    produce(source, "orders", 600)
    admin = AdminClient({"bootstrap.servers": source.bootstrap})
    # Inside a batch on every partition: 200 records each, producer batches of many records.
    deleted = admin.delete_records([TopicPartition("orders", p, 50) for p in range(3)])
    for future in deleted.values():
        future.result(timeout=15)
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(destination, "add", "dr", "orders")
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")
    c = Consumer({"bootstrap.servers": destination.bootstrap, "group.id": "lso"})
    for p in range(3):
        assert c.get_watermark_offsets(TopicPartition("orders", p), timeout=10) == (50, 200)
    c.close()
    # Later deletions on the source follow too.
    deleted = admin.delete_records([TopicPartition("orders", 0, 120)])
    list(deleted.values())[0].result(timeout=15)
    produce(source, "orders", 3, start=600)

    def start_followed():
        c = Consumer({"bootstrap.servers": destination.bootstrap, "group.id": "lso"})
        low = c.get_watermark_offsets(TopicPartition("orders", 0), timeout=10)[0]
        c.close()
        return low == 120

    wait_for(start_followed, 30, "log start 120 on the destination")
    # The log start is followed by its own poll; the three new records come with the data.
    wait_for(caught_up(destination, source, "orders", 3), 30, "lag 0 after the new records")
    assert identical(source, destination, "orders", 3)


def test_transactional_source_data_mirrors_byte_for_byte_with_aborts_kept(pair):
    """Committed and aborted transactions and their markers are copied as they are, at the
    same offsets: a read_committed consumer of the mirror sees what one of the source sees."""
    from test_transactions import read, transactional_producer

    source, destination = pair
    producer = transactional_producer(source.bootstrap, "mirrored-writer")
    for round_ in range(6):
        producer.begin_transaction()
        for i in range(10):
            producer.produce("orders", value=f"r{round_}-{i}", partition=i % 3)
        if round_ % 2:
            producer.flush(15)
            producer.abort_transaction(15)
        else:
            producer.commit_transaction(15)
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(destination, "add", "dr", "orders")
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")
    assert identical(source, destination, "orders", 3)
    expected = read(source.bootstrap, "orders", 3, "read_committed", 30)
    assert len(expected) == 30
    mirrored = read(destination.bootstrap, "orders", 3, "read_committed", 30)
    assert sorted(mirrored) == sorted(expected)
    assert len(read(destination.bootstrap, "orders", 3, "read_uncommitted", 60)) == 60

    # A transaction still open on the source when the mirror fails over can never end on the
    # destination: it is aborted there, so read_committed consumers are not held back.
    producer.begin_transaction()
    for i in range(9):
        producer.produce("orders", value=f"open-{i}", partition=i % 3)
    producer.flush(15)
    # (The source's ends as a read_uncommitted reader sees them: past the open transaction.)
    ends = end_offsets(source, "orders", 3, isolation="read_uncommitted")
    wait_for(lambda: all(describe(destination)[("orders", p)][1] == ends[p] for p in range(3)),
             60, "the open transaction mirrored")
    assert len(read(destination.bootstrap, "orders", 3, "read_committed", 30)) == 30
    assert "orders: removed" in cli(destination, "remove", "dr", "orders").stdout
    after = Producer({"bootstrap.servers": destination.bootstrap})
    for p in range(3):
        after.produce("orders", value=f"after-{p}", partition=p)
    assert after.flush(15) == 0
    got = read(destination.bootstrap, "orders", 3, "read_committed", 33)
    assert sorted(got) == sorted(expected + [(p, f"after-{p}") for p in range(3)])
