"""Compacted topics (cleanup.policy=compact) and merging of small objects, over the real
binary with confluent-kafka: a compacted topic used as a key-value store (write, overwrite,
delete, restart, kill -9, read the latest of every key at the offsets it was written at),
keyless records refused, tombstones dropped after delete.retention.ms, aborted transactions'
records removed, merging that keeps every record and offset, kill -9 while rewrites run under
acks=all load, the same key-value store on S3 (s3s-fs), and a three-broker cluster where
one broker compacts and another takes over when it dies."""

import re
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import (CLUSTER_CONFIG, FILES_LAYOUT, ON_CLUSTER, ON_POSTGRES, SHOAL_BIN,
                      free_port, scrape_metrics, shared_postgres)
from test_cluster import cluster  # noqa: F401 (a fixture)
from test_durability import read_acks

# Rewrites are checked for every 200 ms; merging needs one byte and no age, and takes a
# partition's share of any object, however large (as on S3; the local store's default leaves
# shares of 16 KiB or more, which a producer under load writes); unreferenced objects are
# deleted 1 s after they lose their last batch.
MERGE_ALL_SHARES = "merge_below_bytes = 1099511627776\n"
FAST_REWRITES = f"""
[rewrite]
check_interval_ms = 200
merge_min_bytes = 1
merge_max_age_ms = 0
{MERGE_ALL_SHARES}[coordinator]
file_cleaner_interval_ms = 500
file_cleaner_grace_ms = 1000
"""
# Everything but the newest 100 ms is cleanable, at any dirty ratio.
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01",
           "segment.ms": "100"}


def fast_rewrites(extra=""):
    """The fast rewrite settings; on PostgreSQL (and as a cluster) the database's keys join
    their [coordinator] section."""
    config = FAST_REWRITES
    if ON_POSTGRES:
        database = shared_postgres().new_database_config()
        config += database.replace("[coordinator]\n", "", 1)
        if ON_CLUSTER:
            config += CLUSTER_CONFIG
    return config + extra


def create(bootstrap, topic, partitions=1, config=None):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, config=config or {})])[
        topic].result(15)


def produce(bootstrap, topic, records, **settings):
    """Sends (key, value) records one request at a time; their offsets by position."""
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0, **settings})
    offsets = []
    for key, value in records:
        def delivered(err, msg):
            assert err is None, err
            offsets.append(msg.offset())
        p.produce(topic, key=key, value=value, on_delivery=delivered)
        p.flush(15)
    return offsets


def read_all(bootstrap, topic, partition=0, isolation="read_uncommitted"):
    """Every record from the start to the end: (offset, key, value)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"audit-{time.time()}",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, partition, 0)])
    records = []
    deadline = time.time() + 30
    while time.time() < deadline:
        m = c.poll(1)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                break
            raise AssertionError(m.error())
        records.append((m.offset(), m.key(), m.value()))
    c.close()
    return records


def latest(records):
    out = {}
    for offset, key, value in records:
        out[key] = (offset, value)
    return out


def wait_for(predicate, what, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_compacted_topic_is_a_key_value_store(make_broker):
    metrics_port = free_port()
    broker = make_broker("kv", f'metrics_listen = "127.0.0.1:{metrics_port}"\n'
                               + fast_rewrites()).start()
    create(broker.bootstrap, "kv", config=COMPACT)

    # A record without a key is refused, naming the record (KIP-467).
    refused = []
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    p.produce("kv", value=b"no key", on_delivery=lambda err, msg: refused.append(err))
    p.flush(15)
    assert refused[0] is not None and refused[0].code() == KafkaError.INVALID_RECORD, refused

    written = [(b"k%d" % i, b"v0") for i in range(20)]
    written += [(b"k%d" % i, b"v1") for i in range(10)]
    written += [(b"k%d" % i, None) for i in range(10, 15)]
    offsets = produce(broker.bootstrap, "kv", written)
    expected = {key: (offset, value) for (key, value), offset in zip(written, offsets)}

    # Compaction leaves each key's latest record, at the offset it was written at.
    compacted = wait_for(lambda: (r := read_all(broker.bootstrap, "kv")) and len(r) == 20 and r,
                         "compaction")
    assert latest(compacted) == expected
    assert [o for o, _, _ in compacted] == sorted(o for o, _ in expected.values())
    # Tombstones stay for delete.retention.ms (a day by default).
    assert sum(1 for _, _, v in compacted if v is None) == 5
    # Per partition: what was rewritten and removed, and where compaction stands.
    text = scrape_metrics(metrics_port)
    removed = re.search(
        r'shoal_compaction_partition_records_removed_total\{topic="kv",partition="0"\} (\d+)', text)
    assert removed and int(removed.group(1)) >= 15, text
    assert 'shoal_compaction_dirty_ratio{topic="kv",partition="0"}' in text
    assert 'shoal_compaction_lag_seconds{topic="kv",partition="0"}' in text

    # Overwrites after a pass are compacted by the next one; a restart keeps it all.
    more = [(b"k%d" % i, b"v2") for i in range(5)]
    for (key, value), offset in zip(more, produce(broker.bootstrap, "kv", more)):
        expected[key] = (offset, value)
    wait_for(lambda: len(read_all(broker.bootstrap, "kv")) == 20, "the second pass")
    broker.stop()
    broker.start()
    assert latest(read_all(broker.bootstrap, "kv")) == expected
    broker.kill()
    broker.start()
    records = read_all(broker.bootstrap, "kv")
    assert latest(records) == expected and len(records) == 20
    log = broker.log()
    assert "rewrote a partition" in log and "a rewrite stopped" not in log, log[-3000:]


def test_tombstones_go_after_delete_retention_and_aborted_records_are_removed(make_broker):
    broker = make_broker("tombstones", fast_rewrites()).start()
    create(broker.bootstrap, "gone", config={**COMPACT, "delete.retention.ms": "0"})
    produce(broker.bootstrap, "gone", [(b"a", b"1"), (b"b", b"1"), (b"a", None)])
    # The tombstone and the value it deletes both go; b stays.
    wait_for(lambda: [(k, v) for _, k, v in read_all(broker.bootstrap, "gone")] == [(b"b", b"1")],
             "a and its tombstone to go")

    create(broker.bootstrap, "txn", config=COMPACT)
    p = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "compact-txn"})
    p.init_transactions(15)
    p.begin_transaction()
    p.produce("txn", key=b"x", value=b"aborted")
    p.flush(15)
    p.abort_transaction(15)
    p.begin_transaction()
    p.produce("txn", key=b"y", value=b"committed")
    p.commit_transaction(15)
    produce(broker.bootstrap, "txn", [(b"z", b"plain")])
    # read_uncommitted sees the aborted record until compaction removes it; the markers stay.
    wait_for(lambda: b"aborted" not in [v for _, _, v in read_all(broker.bootstrap, "txn")],
             "the aborted record to be removed")
    values = [v for _, _, v in read_all(broker.bootstrap, "txn", isolation="read_committed")]
    assert values == [b"committed", b"plain"]


def test_merging_keeps_every_record_and_offset_and_frees_the_small_objects(make_broker):
    # Objects are counted as files.
    broker = make_broker("merge", fast_rewrites(FILES_LAYOUT)).start()
    create(broker.bootstrap, "plain", partitions=2)
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 0})
    for i in range(60):
        p.produce("plain", key=b"%d" % (i % 7), value=b"value-%d" % i, partition=i % 2)
        p.flush(15)
    before = [read_all(broker.bootstrap, "plain", partition) for partition in (0, 1)]
    assert sum(len(b) for b in before) == 60
    objects = broker.data_dir / "objects" / "wal"

    def merged():
        names = [o.name for o in objects.iterdir()]
        return names if names and all(n.startswith("rw-") for n in names) else None

    # Every WAL object (one per produce here) is merged away and deleted after the grace;
    # the merged objects remain, a few per partition.
    names = wait_for(merged, "only merged objects to remain")
    assert len(names) < 30, names
    after = [read_all(broker.bootstrap, "plain", partition) for partition in (0, 1)]
    assert after == before
    broker.stop()
    if ON_POSTGRES:
        return  # `shoal check` reads a data directory's own log
    check = subprocess.run([SHOAL_BIN, "check", "--config", str(broker.config_path)],
                           capture_output=True, text=True, timeout=60)
    assert check.returncode == 0, check.stdout + check.stderr


def test_the_local_store_merges_only_where_shares_are_small(make_broker):
    # The local store's default merge_below_bytes (16 KiB); objects are counted as files,
    # one per request here. Everything is written with rewriting off, then the broker starts
    # again with it on, so each partition's plan sees all of its shares at once.
    settings = fast_rewrites(FILES_LAYOUT).replace(MERGE_ALL_SHARES, "")
    rewriting_off = settings.replace("[rewrite]\ncheck_interval_ms = 200",
                                     "[rewrite]\ncheck_interval_ms = 0")
    broker = make_broker("shares", rewriting_off).start()
    small = lambda tag: [(b"s", b"%s-%d" % (tag, i)) for i in range(12)]  # noqa: E731
    large = lambda tag: [(b"l", b"%s-%d" % (tag, i) * 8_000) for i in range(3)]  # noqa: E731
    # "mixed": three shares of ~40 KB, then twelve of a few bytes, where a producer slowed
    # down. "fast": one small share, then three large ones (30 KB on average: not merged).
    written = {"mixed": large(b"m") + small(b"m"), "fast": small(b"f")[:1] + large(b"f")}
    for topic, records in written.items():
        create(broker.bootstrap, topic)
        produce(broker.bootstrap, topic, records)
    before = {topic: read_all(broker.bootstrap, topic) for topic in written}
    broker.stop()
    broker.config_path.write_text(broker.config_path.read_text().replace(
        "[rewrite]\ncheck_interval_ms = 0", "[rewrite]\ncheck_interval_ms = 200"))
    broker.start()
    objects = broker.data_dir / "objects" / "wal"

    def settled():
        names = [o.name for o in objects.iterdir()]
        wal = [n for n in names if not n.startswith("rw-")]
        return (len(names) - len(wal), len(wal)) if len(wal) == 7 else None

    # The twelve small shares are merged into one object and their objects deleted; the
    # large shares before them, and all of "fast", stay where produce wrote them.
    assert wait_for(settled, "the small shares' objects to go") == (1, 7)
    assert {topic: read_all(broker.bootstrap, topic) for topic in written} == before
    time.sleep(1.5)
    assert settled() == (1, 7), "nothing more is merged"


PRODUCER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from confluent_kafka import Producer
    bootstrap, topic, out_path = sys.argv[1:4]
    out = open(out_path, "w", buffering=1)
    def on_delivery(err, msg):
        if err is None:
            out.write(json.dumps([msg.offset(), msg.key().decode(), msg.value().decode()]) + "\\n")
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                  "enable.idempotence": True, "message.timeout.ms": 60000})
    i = 0
    while True:
        try:
            p.produce(topic, key=f"key-{i % 50}".encode(), value=f"value-{i}".encode(),
                      on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    """
)


@pytest.mark.parametrize("topic,config", [("merged", {}), ("compacted", COMPACT)])
def test_kill_9_while_rewrites_run_under_load_loses_nothing(make_broker, tmp_path, topic,
                                                             config):
    broker = make_broker(topic, fast_rewrites()).start()
    create(broker.bootstrap, topic, config=config)
    acks_path = tmp_path / "acks.jsonl"
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER_SCRIPT, broker.bootstrap, topic, str(acks_path)])
    try:
        for round_ in range(3):
            target = 2000 * (round_ + 1)
            wait_for(lambda: len(read_acks(acks_path)) >= target, "the producer", timeout=60)
            time.sleep(0.3 + 0.2 * round_)  # somewhere in a rewrite's read, upload or swap
            broker.kill()
            broker.start()
        wait_for(lambda: len(read_acks(acks_path)) >= 8000, "the producer", timeout=60)
    finally:
        producer.kill()
        producer.wait()
    acked = read_acks(acks_path)
    assert "rewrote a partition" in broker.log()
    stored = read_all(broker.bootstrap, topic)
    offsets = [o for o, _, _ in stored]
    assert offsets == sorted(set(offsets)), "offsets strictly increase"
    if config:
        # Each key's latest acknowledged value is there (a later unacknowledged one may be).
        newest = {}
        for offset, key, value in acked:
            newest[key] = max(newest.get(key, (-1, "")), (offset, value))
        by_offset = {o: (k.decode(), v.decode()) for o, k, v in stored}
        have = latest(stored)
        for key, (offset, value) in newest.items():
            assert have[key.encode()][0] >= offset, f"{key} lost {value}"
            if have[key.encode()][0] == offset:
                assert by_offset[offset] == (key, value)
    else:
        by_offset = {o: v.decode() for o, _, v in stored}
        for offset, _, value in acked:
            assert by_offset.get(offset) == value, f"acknowledged {value} at {offset} is missing"


def test_a_compacted_topic_on_s3(make_broker, s3_server):
    broker = make_broker("s3kv", s3_server.broker_config(extra=fast_rewrites())).start()
    create(broker.bootstrap, "kv", config=COMPACT)
    written = [(b"k%d" % (i % 5), b"v%d" % i) for i in range(25)]
    offsets = produce(broker.bootstrap, "kv", written)
    expected = latest([(o, k, v) for (k, v), o in zip(written, offsets)])
    wait_for(lambda: len(read_all(broker.bootstrap, "kv")) == 5, "compaction on S3")
    broker.kill()
    broker.start()
    assert latest(read_all(broker.bootstrap, "kv")) == expected
    assert any(name.startswith("rw-") for name in s3_server.objects())


def test_a_three_broker_cluster_compacts_once_and_goes_on_when_that_broker_dies(cluster):
    if ON_POSTGRES:
        pytest.skip("three brokers already; the one-broker-cluster pass adds nothing")
    brokers = cluster(coordinator="\n[rewrite]\ncheck_interval_ms = 200\n")
    a, b, c = brokers
    create(a.bootstrap, "kv3", config=COMPACT)
    first = [(b"k%d" % (i % 6), b"a%d" % i) for i in range(30)]
    expected = latest([(o, k, v) for (k, v), o in zip(first, produce(a.bootstrap, "kv3", first))])
    wait_for(lambda: len(read_all(c.bootstrap, "kv3")) == 6, "compaction in the cluster")
    assert latest(read_all(b.bootstrap, "kv3")) == expected
    rewriters = [x for x in brokers if "rewrote a partition" in x.log()]
    assert len(rewriters) == 1, "one broker (the duties holder) rewrites"

    # The rewriting broker dies; another takes the duties and compacts what comes next.
    rewriters[0].kill()
    alive = [x for x in brokers if x is not rewriters[0]]
    more = [(b"k%d" % (i % 6), b"b%d" % i) for i in range(12)]
    offsets = produce(alive[0].bootstrap, "kv3", more)
    expected.update(latest([(o, k, v) for (k, v), o in zip(more, offsets)]))
    wait_for(lambda: len(read_all(alive[1].bootstrap, "kv3")) == 6, "compaction after the kill")
    assert latest(read_all(alive[0].bootstrap, "kv3")) == expected
    assert any("rewrote a partition" in x.log() for x in alive)


def test_a_mirror_of_a_compacted_topic_keeps_its_gaps_and_compacts_once_promoted(make_broker):
    from test_mirror import FAST_RETRIES, caught_up, cli, identical
    source = make_broker("source", fast_rewrites()).start()
    destination = make_broker("destination", fast_rewrites()).start()
    create(source.bootstrap, "kvm", config=COMPACT)
    written = [(b"k%d" % (i % 4), b"s%d" % i) for i in range(20)]
    produce(source.bootstrap, "kvm", written)
    wait_for(lambda: len(read_all(source.bootstrap, "kvm")) == 4, "compaction on the source")

    # The mirror copies the compacted log at the same offsets, gaps and all; it does not
    # compact on its own while it mirrors.
    cli(destination, "create", "dr", "--source", source.bootstrap, *FAST_RETRIES)
    cli(destination, "add", "dr", "kvm")
    wait_for(caught_up(destination, source, "kvm", 1), "the mirror to catch up", timeout=60)
    assert identical(source, destination, "kvm", 1)
    # What the source compacts after it was mirrored stays on the destination (as with any
    # mirror); every record the source keeps is there at its offset, and each key's latest.
    more = [(b"k%d" % (i % 4), b"t%d" % i) for i in range(8)]
    produce(source.bootstrap, "kvm", more)
    wait_for(caught_up(destination, source, "kvm", 1), "the mirror to catch up", timeout=60)
    on_source, on_destination = read_all(source.bootstrap, "kvm"), read_all(destination.bootstrap,
                                                                           "kvm")
    assert set(on_source) <= set(on_destination)
    assert latest(on_source) == latest(on_destination)

    # Promoted, the topic is the destination's own and compacted by the synced policy.
    cli(destination, "remove", "dr", "kvm")
    last = [(b"k%d" % (i % 4), b"d%d" % i) for i in range(8)]
    offsets = produce(destination.bootstrap, "kvm", last)
    expected = latest([(o, k, v) for (k, v), o in zip(last, offsets)])
    wait_for(lambda: latest(r := read_all(destination.bootstrap, "kvm")) == expected
             and len(r) == 4, "compaction after the failover")
