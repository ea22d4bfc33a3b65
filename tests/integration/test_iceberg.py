"""Topics as Iceberg tables: the broker's table writer keeps a table of each topic with
shoal.iceberg.enabled in a SQL catalog (SQLite), and pyiceberg (with pyarrow) and DuckDB read
it, from a local warehouse or from S3 (s3s-fs). Every committed record appears once, aborted
ones never, across kill -9 of the broker; snapshots expire and small files are compacted."""

import signal
import time

import sqlalchemy

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.catalog.sql import SqlCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError
from pyiceberg.expressions import GreaterThanOrEqual

import duckdb_iceberg
from conftest import S3_ACCESS_KEY, S3_BUCKET, S3_SECRET_KEY

COMMIT_INTERVAL_MS = 300


def start(make_broker, name="iceberg", extra=""):
    return make_broker(name, f"[iceberg]\nenabled = true\ncommit_interval_ms = {COMMIT_INTERVAL_MS}\n"
                       + extra).start()


def create_table_topic(broker, topic, partitions=3):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    new = NewTopic(topic, num_partitions=partitions, config={"shoal.iceberg.enabled": "true"})
    admin.create_topics([new])[topic].result(15)


def sql_catalog(uri, **properties):
    """pyiceberg's SQL catalog at `uri`. pyiceberg makes the catalog's tables when it finds
    none, as the broker's writer does: when both do at once, pyiceberg's CREATE TABLE fails
    ("already exists") and it is opened again."""
    for _ in range(4):
        try:
            return SqlCatalog("shoal", uri=uri, **properties)
        except sqlalchemy.exc.OperationalError as e:
            if "already exists" not in str(e):
                raise
            time.sleep(0.2)
    return SqlCatalog("shoal", uri=uri, **properties)


def catalog_of(broker):
    return sql_catalog(f"sqlite:///{broker.data_dir}/iceberg/catalog.db",
                       warehouse=f"file://{broker.data_dir}/iceberg/warehouse")


def table_rows(broker, topic):
    """(partition, offset) -> (key, value, headers) of every row of the topic's table; None
    while the writer has not created it."""
    try:
        table = catalog_of(broker).load_table(f"kafka.{topic}")
    except (NoSuchTableError, NoSuchNamespaceError):
        return None
    rows = {}
    duplicates = []
    for row in table.scan().to_arrow().to_pylist():
        kafka = row["kafka"]
        at = (kafka["partition"], kafka["offset"])
        if at in rows:
            duplicates.append(at)
        headers = [(h["key"], h["value"]) for h in kafka["headers"]]
        rows[at] = (kafka["key"], row["value"], headers)
    assert not duplicates, f"rows written twice: {duplicates[:10]}"
    return rows


def wait_for_rows(broker, topic, count, timeout=60):
    deadline = time.time() + timeout
    rows = None
    while time.time() < deadline:
        rows = table_rows(broker, topic)
        if rows is not None and len(rows) >= count:
            return rows
        time.sleep(0.3)
    raise AssertionError(f"{topic}: {len(rows or {})} rows, not {count}, after {timeout}s")


def topic_records(broker, topic, partitions=3):
    """(partition, offset) -> value of every committed record, read as a consumer (until two
    seconds pass with nothing new)."""
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "check",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    records, quiet_since, deadline = {}, time.time(), time.time() + 60
    while time.time() - quiet_since < 2 and time.time() < deadline:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            records[(message.partition(), message.offset())] = message.value()
            quiet_since = time.time()
    consumer.close()
    return records


def test_a_topic_becomes_a_table_with_each_record_once(make_broker):
    broker = start(make_broker)
    create_table_topic(broker, "orders")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5,
                         "compression.type": "zstd"})
    for i in range(10_000):
        headers = [("trace", f"t{i}".encode())] if i % 10 == 0 else None
        producer.produce("orders", key=f"k{i}".encode(), value=f"v{i}".encode(),
                         partition=i % 3, headers=headers)
    assert producer.flush(30) == 0
    started = time.time()
    rows = wait_for_rows(broker, "orders", 10_000)
    print(f"10,000 rows queryable {time.time() - started:.1f}s after the last ack")
    assert len(rows) == 10_000
    expected = {(i % 3, i // 3): i for i in range(10_000)}
    assert set(rows) == set(expected)
    for at, i in expected.items():
        key, value, headers = rows[at]
        assert (key, value) == (f"k{i}".encode(), f"v{i}".encode())
        assert headers == ([("trace", f"t{i}".encode())] if i % 10 == 0 else [])
    # DuckDB's Iceberg reader sees the same rows.
    table = catalog_of(broker).load_table("kafka.orders")
    duckdb_rows = duckdb_iceberg.query(table.metadata_location,
                                       "SELECT kafka.partition, kafka.offset, value FROM t")
    assert {(p, o): v for p, o, v in duckdb_rows} == \
        {at: f"v{i}".encode() for at, i in expected.items()}
    # A topic without the config gets no table.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("plain", num_partitions=1)])["plain"].result(15)
    time.sleep(COMMIT_INTERVAL_MS * 3 / 1000)
    assert table_rows(broker, "plain") is None


def test_aborted_transactions_never_appear(make_broker):
    broker = start(make_broker, "iceberg-txn")
    create_table_topic(broker, "payments", partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "pay"})
    producer.init_transactions(15)
    for batch, commit in enumerate([True, False, True, False, True]):
        producer.begin_transaction()
        for i in range(50):
            producer.produce("payments", value=f"{batch}-{i}".encode(), partition=0)
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
    rows = wait_for_rows(broker, "payments", 150)
    time.sleep(COMMIT_INTERVAL_MS * 3 / 1000)
    rows = table_rows(broker, "payments")
    values = sorted(value.decode() for _, value, _ in rows.values())
    assert values == sorted(f"{b}-{i}" for b in (0, 2, 4) for i in range(50))
    assert set(rows) == set(topic_records(broker, "payments", partitions=1))


def test_kill_9_while_committing_loses_and_duplicates_nothing(make_broker):
    broker = start(make_broker, "iceberg-kill")
    create_table_topic(broker, "events")
    sent = 0
    for _ in range(3):
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 2,
                             "enable.idempotence": True})
        # Produced over about a second, so the writer commits several times meanwhile.
        for _ in range(20):
            for _ in range(150):
                producer.produce("events", value=f"e{sent}".encode(), partition=sent % 3)
                sent += 1
            producer.poll(0)
            time.sleep(0.05)
        assert producer.flush(30) == 0
        # Killed while the writer is between (or inside) commits.
        broker.stop(sig=signal.SIGKILL)
        broker.wait_until_refused()
        broker.start()
    records = topic_records(broker, "events")
    assert len(records) == sent
    rows = wait_for_rows(broker, "events", sent)
    time.sleep(COMMIT_INTERVAL_MS * 3 / 1000)
    rows = table_rows(broker, "events")
    assert set(rows) == set(records), "exactly the topic's records"
    assert all(rows[at][1] == records[at] for at in records)
    snapshots = catalog_of(broker).load_table("kafka.events").snapshots()
    assert len(snapshots) >= 4, "commits before, between and after the kills"


def produce_in_waves(broker, topic, waves, per_wave, partitions):
    """`waves` rounds of `per_wave` records (value `<topic>-<n>`, partition n % partitions),
    each waited for in the table, so each is a commit of its own; how many were sent."""
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    sent = 0
    for _ in range(waves):
        for _ in range(per_wave):
            producer.produce(topic, value=f"{topic}-{sent}".encode(), partition=sent % partitions)
            sent += 1
        assert producer.flush(10) == 0
        wait_for_rows(broker, topic, sent)
    return sent


def test_snapshots_expire_and_their_files_are_deleted(make_broker):
    broker = start(make_broker, "iceberg-expiry", "max_snapshots = 3\n")
    create_table_topic(broker, "ticks", partitions=1)
    sent = produce_in_waves(broker, "ticks", waves=8, per_wave=100, partitions=1)
    rows = table_rows(broker, "ticks")
    assert sorted(rows) == [(0, offset) for offset in range(sent)]
    table = catalog_of(broker).load_table("kafka.ticks")
    assert len(table.snapshots()) == 3
    metadata_dir = broker.data_dir / "iceberg" / "warehouse" / "kafka" / "ticks" / "metadata"
    lists = sorted(p.name for p in metadata_dir.glob("snap-*.avro"))
    assert len(lists) == 3, lists
    # The table reads the same at an older snapshot still kept.
    oldest = min(table.snapshots(), key=lambda s: s.timestamp_ms)
    assert len(table.scan(snapshot_id=oldest.snapshot_id).to_arrow()) < sent
    # The manifests' offset bounds let a reader skip the files before an offset.
    # (pyiceberg plans with a nested field's bounds; its pyarrow reader cannot filter on one.)
    last_wave = list(table.scan(
        row_filter=GreaterThanOrEqual("kafka.offset", sent - 100)).plan_files())
    assert len(last_wave) < len(list(table.scan().plan_files()))
    assert sum(task.file.record_count for task in last_wave) >= 100


def test_small_files_are_compacted_and_replaced_ones_deleted(make_broker):
    broker = start(make_broker, "iceberg-compaction", "max_snapshots = 3\ncompact_min_files = 4\n")
    create_table_topic(broker, "clicks", partitions=2)
    sent = produce_in_waves(broker, "clicks", waves=12, per_wave=50, partitions=2)
    time.sleep(COMMIT_INTERVAL_MS * 4 / 1000)
    rows = table_rows(broker, "clicks")
    assert sorted(rows) == sorted((i % 2, i // 2) for i in range(sent))
    assert all(rows[(i % 2, i // 2)][1] == f"clicks-{i}".encode() for i in range(sent))
    table = catalog_of(broker).load_table("kafka.clicks")
    current_files = table.inspect.files().num_rows
    assert current_files < 4, f"{current_files} files after 12 commits"
    assert broker.log().count("table files compacted") >= 2
    # Merged files are deleted once no kept snapshot names them.
    data_dir = broker.data_dir / "iceberg" / "warehouse" / "kafka" / "clicks" / "data"
    on_disk = len(list(data_dir.glob("*.parquet")))
    assert on_disk <= current_files + 3 * 4, f"{on_disk} data files on disk"
    assert on_disk < 12, f"{on_disk} data files on disk after 12 commits"


def test_a_table_on_s3_is_read_from_the_s3_endpoint(make_broker, s3_server):
    """With the broker's objects on S3, tables go to the same bucket under <prefix>/iceberg,
    and pyiceberg reads their files from the S3 endpoint."""
    config = s3_server.broker_config() + (
        f"[iceberg]\nenabled = true\ncommit_interval_ms = {COMMIT_INTERVAL_MS}\n")
    broker = make_broker("iceberg-s3", config).start()
    create_table_topic(broker, "trades")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(3000):
        producer.produce("trades", value=f"trade-{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0
    catalog = sql_catalog(f"sqlite:///{broker.data_dir}/iceberg/catalog.db", **{
        "s3.endpoint": s3_server.endpoint, "s3.access-key-id": S3_ACCESS_KEY,
        "s3.secret-access-key": S3_SECRET_KEY, "s3.region": "us-east-1"})
    deadline, rows = time.time() + 60, []
    while time.time() < deadline:
        try:
            rows = catalog.load_table("kafka.trades").scan().to_arrow().to_pylist()
        except (NoSuchTableError, NoSuchNamespaceError):
            pass
        if len(rows) >= 3000:
            break
        time.sleep(0.3)
    assert sorted(r["value"] for r in rows) == sorted(f"trade-{i}".encode() for i in range(3000))
    table = catalog.load_table("kafka.trades")
    assert table.location() == f"s3://{S3_BUCKET}/shoal-test/iceberg/kafka/trades"
    stored = s3_server.root / S3_BUCKET / "shoal-test" / "iceberg" / "kafka" / "trades"
    assert list((stored / "data").glob("*.parquet")), "the data files are in the bucket"
    assert not (broker.data_dir / "iceberg" / "warehouse").exists()


def test_a_topic_made_again_under_its_name_is_not_added_to_the_old_table(make_broker):
    broker = start(make_broker, "iceberg-again")
    create_table_topic(broker, "events", partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(100):
        producer.produce("events", value=f"first-{i}".encode(), partition=0)
    assert producer.flush(15) == 0
    wait_for_rows(broker, "events", 100)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.delete_topics(["events"])["events"].result(15)
    deadline = time.time() + 30
    while True:
        try:
            create_table_topic(broker, "events", partitions=1)
            break
        except Exception:  # the deletion may not be done yet
            assert time.time() < deadline
            time.sleep(0.3)
    for i in range(10):
        producer.produce("events", value=f"second-{i}".encode(), partition=0)
    assert producer.flush(15) == 0
    # The new topic's offsets start at 0 again: its records are not taken as the old one's.
    deadline = time.time() + 30
    while "holds the records of another topic" not in broker.log():
        assert time.time() < deadline, broker.log()[-3000:]
        time.sleep(0.2)
    rows = table_rows(broker, "events")
    assert sorted(v for _, v, _ in rows.values()) == \
        sorted(f"first-{i}".encode() for i in range(100))
    # Once the old table is dropped, the new topic gets a table of its own.
    catalog_of(broker).drop_table("kafka.events")
    rows = wait_for_rows(broker, "events", 10)
    assert sorted(v for _, v, _ in rows.values()) == \
        sorted(f"second-{i}".encode() for i in range(10))
