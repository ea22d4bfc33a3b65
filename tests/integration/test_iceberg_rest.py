"""Topics as Iceberg tables registered in an Iceberg REST catalog: Apache Iceberg's own REST
catalog server (the `iceberg-open-api` jar, its reference implementation of the protocol,
started by these tests) holds the tables, the broker registers and commits them through the
protocol, and pyiceberg's REST catalog reads them. Every record appears once across kill -9;
snapshots expire and files are compacted through the catalog's commits; a new Avro schema
version adds a column with the field ids kept; tokens come from the client-credentials grant;
and a catalog over an S3 warehouse reads and writes the table's metadata there itself."""

import os
import pathlib
import subprocess
import time
import urllib.request

import pytest
from confluent_kafka import Producer
from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError, ServerError

import duckdb_iceberg
from conftest import S3_ACCESS_KEY, S3_BUCKET, S3_SECRET_KEY, free_port
from test_iceberg import COMMIT_INTERVAL_MS, create_table_topic, topic_records
from test_iceberg_avro import USER_V1, USER_V2, produce, user
from registry_helpers import start_registry_broker

ICEBERG_REST_VERSION = "1.10.0"
REST_JAR = pathlib.Path(os.environ.get(
    "SHOAL_ICEBERG_REST_JAR",
    pathlib.Path.home() / f".m2/repository/org/apache/iceberg/iceberg-open-api/"
    f"{ICEBERG_REST_VERSION}/iceberg-open-api-{ICEBERG_REST_VERSION}.jar"))


def start_rest_catalog(work, settings):
    """Iceberg's REST catalog server on a free port, with catalog `settings` (as its
    CATALOG_* environment names them); the process and its URL."""
    assert REST_JAR.exists(), \
        f"{REST_JAR}: .ci/run fetches it (org.apache.iceberg:iceberg-open-api)"
    port = free_port()
    env = {**os.environ, "CATALOG_REST_PORT": str(port), **settings}
    log = open(work / "server.log", "wb")
    server = subprocess.Popen(["java", "-jar", str(REST_JAR)], env=env, stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.time() + 60
    while True:
        try:
            urllib.request.urlopen(f"{url}/v1/config", timeout=2).read()
            break
        except OSError:
            assert server.poll() is None, (work / "server.log").read_text()
            assert time.time() < deadline, "the REST catalog did not start in 60 s"
            time.sleep(0.3)
    return server, url


@pytest.fixture(scope="module")
def rest_catalog(tmp_path_factory):
    """Iceberg's REST catalog server with a local warehouse; its URL."""
    work = tmp_path_factory.mktemp("rest-catalog")
    server, url = start_rest_catalog(work, {"CATALOG_WAREHOUSE": f"file://{work}/warehouse"})
    yield url
    server.kill()
    server.wait()


def rest_config(url, namespace, extra=""):
    return (f"[iceberg]\nenabled = true\ncommit_interval_ms = {COMMIT_INTERVAL_MS}\n"
            f'namespace = "{namespace}"\n{extra}[iceberg.rest_catalog]\nurl = "{url}"\n')


def load(url, name, tries=20):
    """The table, or None while the catalog has none. The reference server keeps its catalog
    in an in-memory SQLite that now and then fails a read beside a commit on a loaded machine
    (HTTP 500, UncheckedSQLException): such a read is tried again."""
    for _ in range(tries - 1):
        try:
            return RestCatalog("rest", uri=url).load_table(name)
        except (NoSuchTableError, NoSuchNamespaceError):
            return None
        except ServerError:
            time.sleep(0.25)
    try:
        return RestCatalog("rest", uri=url).load_table(name)
    except (NoSuchTableError, NoSuchNamespaceError):
        return None


def rows_by_offset(table):
    rows = {}
    for row in table.scan().to_arrow().to_pylist():
        at = (row["kafka"]["partition"], row["kafka"]["offset"])
        assert at not in rows, f"{at} written twice"
        rows[at] = row
    return rows


def wait_for(url, name, count, timeout=60):
    deadline, found = time.time() + timeout, 0
    while time.time() < deadline:
        table = load(url, name)
        if table is not None:
            rows = rows_by_offset(table)
            found = len(rows)
            if found >= count:
                return table, rows
        time.sleep(0.3)
    raise AssertionError(f"{name}: {found} rows, not {count}, after {timeout}s")


def produce_values(broker, topic, start, count):
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0


def test_a_rest_catalog_table_takes_each_record_once_across_kill_9_expiry_and_compaction(
        make_broker, rest_catalog):
    extra = "max_snapshots = 3\ncompact_min_files = 4\n"
    broker = make_broker("rest", rest_config(rest_catalog, "restns", extra)).start()
    create_table_topic(broker, "clicks")
    # Bursts a commit interval apart, so the table gets many small files and snapshots.
    for burst in range(6):
        produce_values(broker, "clicks", burst * 500, 500)
        time.sleep(COMMIT_INTERVAL_MS * 1.5 / 1000)
    broker.kill()
    broker.start()
    produce_values(broker, "clicks", 3000, 1000)
    table, rows = wait_for(rest_catalog, "restns.clicks", 4000)
    expected = topic_records(broker, "clicks")
    assert len(expected) == 4000
    assert {at: row["value"] for at, row in rows.items()} == expected
    # The catalog's own metadata: the commits went through it, expiry removed snapshots and
    # compaction replaced files.
    time.sleep(COMMIT_INTERVAL_MS * 4 / 1000)
    table = load(rest_catalog, "restns.clicks")
    assert table.metadata_location.startswith("file:"), table.metadata_location
    assert len(table.metadata.snapshots) <= 3, len(table.metadata.snapshots)
    operations = {entry.operation for entry in
                  (table.snapshot_by_id(e.snapshot_id).summary for e in table.metadata.snapshot_log)
                  if entry is not None}
    history = [table.snapshot_by_id(s.snapshot_id) for s in table.metadata.snapshots]
    print(f"snapshots kept: {len(history)}, operations: {operations}")
    live_files = list(table.inspect.files().column("file_path").to_pylist())
    assert len(live_files) < 6, f"{len(live_files)} live data files: not compacted"
    assert {at: row["value"] for at, row in rows_by_offset(table).items()} == expected
    # DuckDB reads the metadata file the catalog wrote.
    duckdb_rows = duckdb_iceberg.query(table.metadata_location,
                                       "SELECT kafka.partition, kafka.offset, value FROM t")
    assert {(p, o): v for p, o, v in duckdb_rows} == expected


def test_a_new_avro_schema_version_adds_a_column_through_the_rest_catalog(
        make_broker, rest_catalog):
    def with_tables(name="broker", extra_config=""):
        return make_broker(name, extra_config + rest_config(rest_catalog, "restavro"))
    broker = start_registry_broker(with_tables)
    create_table_topic(broker, "users")
    produce(broker, "users", USER_V1, [user(i) for i in range(300)])
    table, _ = wait_for(rest_catalog, "restavro.users", 300)
    ids = {name: table.schema().find_field(f"value.{name}").field_id
           for name in ("name", "age", "tags", "address", "joined", "balance")}
    produce(broker, "users", USER_V2, [user(i, email=True) for i in range(300, 600)], start=300)
    table, rows = wait_for(rest_catalog, "restavro.users", 600)
    for name, field_id in ids.items():
        assert table.schema().find_field(f"value.{name}").field_id == field_id, name
    by_name = {row["value"]["name"]: row["value"] for row in rows.values()}
    assert by_name["user-5"]["email"] is None
    assert by_name["user-305"]["email"] == "u305@example.com"
    assert by_name["user-305"]["age"] == 20 + 305 % 50
    assert len(table.metadata.schemas) == 2


def test_the_writer_asks_for_its_token_with_the_client_credentials_grant(
        make_broker, rest_catalog):
    credential = 'credential = "shoal:secret"\nscope = "catalog"\n'
    broker = make_broker("oauth", rest_config(rest_catalog, "restoauth") + credential).start()
    create_table_topic(broker, "tokens")
    produce_values(broker, "tokens", 0, 300)
    wait_for(rest_catalog, "restoauth.tokens", 300)
    # The same with a token endpoint that refuses: no table, and the log says why.
    refused = make_broker("oauth-refused", rest_config(rest_catalog, "restrefused") + credential
                          + f'oauth2_server_uri = "{rest_catalog}/v1/no-such-endpoint"\n').start()
    create_table_topic(refused, "tokens")
    produce_values(refused, "tokens", 0, 30)
    deadline = time.time() + 30
    while "REST catalog token" not in refused.log():
        assert time.time() < deadline, refused.log()[-3000:]
        time.sleep(0.2)
    # The reference server answers a route it does not serve with 400.
    assert "no-such-endpoint answered HTTP 4" in refused.log(), refused.log()[-3000:]
    assert load(rest_catalog, "restrefused.tokens") is None


def test_a_rest_catalog_over_s3_reads_what_the_writer_stores_there(make_broker, s3_server,
                                                                    tmp_path):
    """The catalog reaches the bucket itself (Iceberg's S3FileIO), as a catalog beside an S3
    warehouse does: it reads the metadata the writer registers and writes each commit's."""
    s3 = {"s3.endpoint": s3_server.endpoint, "s3.access-key-id": S3_ACCESS_KEY,
          "s3.secret-access-key": S3_SECRET_KEY, "s3.region": "us-east-1",
          "s3.path-style-access": "true"}
    settings = {"CATALOG_WAREHOUSE": f"s3://{S3_BUCKET}/rest-warehouse",
                "CATALOG_IO__IMPL": "org.apache.iceberg.aws.s3.S3FileIO",
                "CATALOG_CLIENT_REGION": "us-east-1", "AWS_REGION": "us-east-1",
                **{"CATALOG_" + k.upper().replace("-", "__").replace(".", "_"): v
                   for k, v in s3.items() if k != "s3.region"}}
    server, url = start_rest_catalog(tmp_path, settings)
    try:
        broker = make_broker("rest-s3", s3_server.broker_config()
                             + rest_config(url, "rests3")).start()
        create_table_topic(broker, "trades")
        produce_values(broker, "trades", 0, 3000)
        deadline, rows = time.time() + 60, []
        while time.time() < deadline and len(rows) < 3000:
            try:
                table = RestCatalog("rest", uri=url, **s3).load_table("rests3.trades")
                rows = table.scan().to_arrow().to_pylist()
            except (NoSuchTableError, NoSuchNamespaceError):
                pass
            except ServerError:
                pass  # the reference server's SQLite read beside a commit (`load` says why)
            time.sleep(0.3)
        assert sorted(r["value"] for r in rows) == sorted(f"v{i}".encode() for i in range(3000))
        assert table.metadata_location.startswith(f"s3://{S3_BUCKET}/shoal-test/iceberg/")
        assert not (broker.data_dir / "iceberg").exists()
    finally:
        server.kill()
        server.wait()
