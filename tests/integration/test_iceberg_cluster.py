"""Topics as Iceberg tables in a three-broker cluster: the catalog's tables in the
coordinator's PostgreSQL database, the tables in the shared bucket (s3s-fs), written by the
one broker that holds the cluster's duties. When it is killed, another takes the duties and
the tables over from where they stand: no row lost, none twice."""

import re
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

from conftest import S3_ACCESS_KEY, S3_SECRET_KEY
from test_cluster import cluster  # noqa: F401 (the fixture)
from test_iceberg import sql_catalog

ICEBERG = "[iceberg]\nenabled = true\ncommit_interval_ms = 300\n"


def catalog_in(postgres, brokers, s3_server, timeout=60):
    """pyiceberg's SQL catalog on the database the brokers' coordinator uses, once the writer
    has made its first table: pyiceberg creates the catalog's tables where they are missing,
    and doing so while the writer creates them too fails one of the two."""
    deadline = time.time() + timeout
    while not any("Iceberg table created" in b.log() for b in brokers):
        assert time.time() < deadline, "no broker created the table"
        time.sleep(0.2)
    config = brokers[0].config_path.read_text()
    database = re.search(r'url = "postgres://[^/]+/([^?"]+)', config).group(1)
    uri = (f"postgresql+psycopg2://{postgres.USER}:{postgres.PASSWORD}@127.0.0.1:"
           f"{postgres.port}/{database}")
    return sql_catalog(uri, **{
        "s3.endpoint": s3_server.endpoint, "s3.access-key-id": S3_ACCESS_KEY,
        "s3.secret-access-key": S3_SECRET_KEY, "s3.region": "us-east-1"})


def rows_when(catalog, count, timeout=60):
    """(partition, offset) -> value of the table's rows once it has `count`; rows written
    twice fail."""
    deadline, rows = time.time() + timeout, []
    while time.time() < deadline:
        try:
            rows = catalog.load_table("kafka.events").scan().to_arrow().to_pylist()
        except (NoSuchTableError, NoSuchNamespaceError):
            rows = []
        if len(rows) >= count:
            break
        time.sleep(0.3)
    by_position = {(r["kafka"]["partition"], r["kafka"]["offset"]): r["value"] for r in rows}
    assert len(by_position) == len(rows), "a row written twice"
    assert len(rows) == count, f"{len(rows)} rows, not {count}"
    return by_position


def produce(bootstrap, first, count):
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": "all"})
    for i in range(first, first + count):
        producer.produce("events", value=f"e{i}".encode(), partition=i % 3)
    assert producer.flush(30) == 0


def writer_of(brokers):
    """The broker holding the cluster's duties (the last to log taking them)."""
    holders = [b for b in brokers if "held=true" in b.log().split("cluster duties")[-1][:200]]
    assert len(holders) == 1, [b.log()[-2000:] for b in brokers]
    return holders[0]


def test_another_broker_takes_the_tables_over_with_no_row_lost_or_twice(
        cluster, postgres, s3_server):  # noqa: F811
    brokers = cluster(3, sections=ICEBERG)
    admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
    topic = NewTopic("events", num_partitions=3, config={"shoal.iceberg.enabled": "true"})
    admin.create_topics([topic])["events"].result(15)
    produce(brokers[0].bootstrap, 0, 3000)
    catalog = catalog_in(postgres, brokers, s3_server)
    rows_when(catalog, 3000)
    writer = writer_of(brokers)
    assert sum("Iceberg table created" in b.log() for b in brokers) == 1
    writer.kill()
    survivors = [b for b in brokers if b is not writer]
    produce(survivors[0].bootstrap, 3000, 3000)
    rows = rows_when(catalog, 6000)
    assert sorted(rows.values()) == sorted(f"e{i}".encode() for i in range(6000))
    assert writer_of(survivors) in survivors
