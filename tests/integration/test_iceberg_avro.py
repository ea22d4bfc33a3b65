"""Topics as Iceberg tables with columns from the schema registry: records written with
confluent-kafka's Avro (or JSON Schema, or Protobuf) serializer become rows whose value fields are columns; a new schema
version with a new optional field adds a column that older rows read as null, and the columns
keep their field ids; a record that cannot be decoded stops the table before it, or with
`bad_records = "dead_letter"` goes to the topic's dead-letter table."""

import json
import sqlite3
import time
from decimal import Decimal

from confluent_kafka import Producer
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                  NewTopic)
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.schema_registry.json_schema import JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

import duckdb_iceberg
from conftest import free_port, metric_value, scrape_metrics
from registry_helpers import start_registry_broker
from test_admin_cli import shoal
from test_schema_registry import protobuf_classes
from test_iceberg import COMMIT_INTERVAL_MS, catalog_of, create_table_topic
from pyiceberg.exceptions import NoSuchNamespaceError, NoSuchTableError

USER_V1 = {
    "type": "record", "name": "User", "namespace": "shop",
    "fields": [
        {"name": "name", "type": "string"},
        {"name": "age", "type": "int"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "address", "type": ["null", {
            "type": "record", "name": "Address",
            "fields": [{"name": "city", "type": "string"}]}], "default": None},
        {"name": "joined", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "balance", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12,
                                     "scale": 2}},
    ],
}
# The second version: a new optional field, and age widened to a long.
USER_V2 = {**USER_V1, "fields": [
    *[f if f["name"] != "age" else {"name": "age", "type": "long"} for f in USER_V1["fields"]],
    {"name": "email", "type": ["null", "string"], "default": None},
]}


def start(make_broker, iceberg_config="", metrics_port=None):
    """A broker serving the registry and writing tables (and metrics, given a port)."""
    metrics = f'metrics_listen = "127.0.0.1:{metrics_port}"\n' if metrics_port else ""

    def with_tables(name="broker", extra_config=""):
        return make_broker(name, metrics + extra_config + "[iceberg]\nenabled = true\n"
                           f"commit_interval_ms = {COMMIT_INTERVAL_MS}\n" + iceberg_config)
    return start_registry_broker(with_tables)


def user(i, email=False):
    value = {"name": f"user-{i}", "age": 20 + i % 50, "tags": [f"t{i % 3}"] * (i % 3),
             "address": {"city": f"city-{i % 7}"} if i % 2 else None,
             "joined": 1_700_000_000_000 + i, "balance": Decimal(i * 37 - 5000) / 100}
    if email:
        value["email"] = f"u{i}@example.com"
    return value


def produce(broker, topic, schema, values, partitions=3, start=0):
    """`values` with the Avro `schema`, keys k<start>, k<start + 1>, ..."""
    registry = SchemaRegistryClient({"url": broker.registry_url})
    produce_serialized(broker, topic, AvroSerializer(registry, json.dumps(schema)), values,
                       partitions, start)


def produce_serialized(broker, topic, serializer, values, partitions=3, start=0):
    """`values` as `serializer` makes them (registering its schema), value i with key k<i> to
    partition i % partitions."""
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    for i, value in enumerate(values, start):
        payload = serializer(value, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, value=payload, key=f"k{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def enable_table(admin, topic):
    """Sets shoal.iceberg.enabled on an existing topic."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
        ConfigEntry("shoal.iceberg.enabled", "true",
                    incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(15)


def table_of(broker, topic):
    try:
        return catalog_of(broker).load_table(f"kafka.{topic}")
    except (NoSuchTableError, NoSuchNamespaceError):
        return None


def rows_of(broker, topic, count, timeout=60):
    """The table's rows by key once it has `count` of them."""
    deadline = time.time() + timeout
    found = 0
    while time.time() < deadline:
        table = table_of(broker, topic)
        if table is not None:
            rows = table.scan().to_arrow().to_pylist()
            found = len(rows)
            if found >= count:
                by_key = {r["kafka"]["key"].decode(): r for r in rows}
                assert len(by_key) == len(rows), "a record written twice"
                return table, by_key
        time.sleep(0.2)
    raise AssertionError(f"{topic}: {found} rows, not {count}, after {timeout}s")


def field_ids(table):
    return {name: table.schema().find_field(f"value.{name}").field_id
            for name in ("name", "age", "tags", "address", "joined", "balance")}


def test_avro_values_become_columns_and_a_new_version_adds_one(make_broker):
    metrics_port = free_port()
    broker = start(make_broker, metrics_port=metrics_port)
    create_table_topic(broker, "users")
    produce(broker, "users", USER_V1, [user(i) for i in range(10_000)])
    acked = time.time()
    table, rows = rows_of(broker, "users", 10_000)
    waited = time.time() - acked
    print(f"10,000 rows queryable {waited:.2f}s after the last ack "
          f"(commit interval {COMMIT_INTERVAL_MS} ms)")
    assert len(rows) == 10_000
    for i in range(10_000):
        row = rows[f"k{i}"]
        expected = user(i)
        value = row["value"]
        assert (value["name"], value["age"], value["tags"]) == \
            (expected["name"], expected["age"], expected["tags"])
        assert value["address"] == expected["address"]
        assert int(value["joined"].timestamp() * 1000) == expected["joined"]
        assert value["balance"] == expected["balance"]
        assert (row["kafka"]["partition"], row["kafka"]["offset"]) == (i % 3, i // 3)
    value_type = table.schema().find_field("value").field_type
    assert [f.name for f in value_type.fields] == \
        ["name", "age", "tags", "address", "joined", "balance"]
    assert str(table.schema().find_field("value.balance").field_type) == "decimal(12, 2)"
    ids_before = field_ids(table)

    produce(broker, "users", USER_V2, [user(i, email=True) for i in range(10_000, 10_100)],
            start=10_000)
    table, rows = rows_of(broker, "users", 10_100)
    assert len(rows) == 10_100
    assert field_ids(table) == ids_before, "columns keep their field ids"
    email = table.schema().find_field("value.email")
    assert not email.required
    assert email.field_id > max(ids_before.values())
    assert str(table.schema().find_field("value.age").field_type) == "long"
    assert rows["k5"]["value"]["email"] is None, "older rows read the new column as null"
    assert rows["k10005"]["value"]["email"] == "u10005@example.com"
    assert rows["k10005"]["value"]["age"] == 20 + 10005 % 50
    assert len(table.schemas()) == 2
    # DuckDB's Iceberg reader finds the same columns, the new one null in older rows.
    duckdb_rows = duckdb_iceberg.query(
        table.metadata_location,
        "SELECT kafka.key, value.name, value.age, value.email, value.address.city FROM t")
    assert len(duckdb_rows) == 10_100
    by_key = {key.decode(): rest for key, *rest in duckdb_rows}
    assert by_key["k5"] == ["user-5", 25, None, "city-5"]
    assert by_key["k10005"] == ["user-10005", 20 + 10005 % 50, "u10005@example.com", "city-2"]

    # A record whose value is not Avro stops its partition before it, and says where; the
    # other partitions go on.
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("users", value=b"not avro", key=b"bad", partition=1)
    assert producer.flush(10) == 0
    produce(broker, "users", USER_V2, [user(i, email=True) for i in range(10_100, 10_103)],
            start=10_100)
    deadline = time.time() + 30
    while "cannot become the table's columns" not in broker.log() and time.time() < deadline:
        time.sleep(0.2)
    log = broker.log()
    assert "partition 1 offset 3367 cannot become the table's columns" in log, log[-3000:]
    assert "the value does not start with a schema id" in log
    # k10100 went to partition 2 and k10101 to partition 0; k10102 waits behind the bad one.
    table, rows = rows_of(broker, "users", 10_102)
    time.sleep(COMMIT_INTERVAL_MS * 3 / 1000)
    table = table_of(broker, "users")
    keys = {r["kafka"]["key"] for r in table.scan().to_arrow().to_pylist()}
    assert len(keys) == 10_102 and b"bad" not in keys and b"k10102" not in keys, \
        "nothing past the bad record in its partition is committed"
    # The table's lag: the bad record and the one after it wait.
    text = scrape_metrics(metrics_port)
    series = lambda name: metric_value(text, f'shoal_iceberg_table_{name}{{topic="users"}}')
    assert series("lag_records") == 2, text
    assert series("rows_total") == 10_102
    assert series("commits_total") >= 3
    assert series("failed_commits_total") >= 1
    assert series("lag_seconds") >= 0
    # shoal topic describe shows where the table stands per partition.
    code, [described], err = shoal(broker, "topic", "describe", "users")
    assert code == 0, err
    table = described["iceberg_table"]
    assert table["lag"] == 2
    assert table["partitions"][1] == {"partition": 1, "table_offset": 3367, "lag": 2}
    code, text, _ = shoal(broker, "topic", "describe", "users", format="table")
    assert "ICEBERG TABLE: 2 committed records not in it yet" in text, text


def test_a_table_takes_its_form_from_its_first_records_not_an_empty_round(make_broker):
    """A topic's table is made from its first records: the writer's rounds while the topic is
    still empty make none (a table made then had bytes values for good)."""
    metrics_port = free_port()
    broker = start(make_broker, metrics_port=metrics_port)
    create_table_topic(broker, "early", partitions=1)
    lag = 'shoal_iceberg_table_lag_records{topic="early"}'
    deadline = time.time() + 30
    while metric_value(scrape_metrics(metrics_port), lag) is None:
        assert time.time() < deadline, "the writer never took up the topic"
        time.sleep(0.1)
    time.sleep(COMMIT_INTERVAL_MS * 2 / 1000)
    assert table_of(broker, "early") is None, "a table made before the topic had records"
    produce(broker, "early", USER_V1, [user(i) for i in range(10)], partitions=1)
    table, rows = rows_of(broker, "early", 10)
    assert [f.name for f in table.schema().find_field("value").field_type.fields] == \
        ["name", "age", "tags", "address", "joined", "balance"]
    assert rows["k3"]["value"]["name"] == "user-3"


def test_a_stopped_table_takes_the_good_records_before_the_bad_one(make_broker):
    """bad_records = "stop": good records read in the same round as a bad one, before it, are
    committed; the table stops before the bad one. The SQL catalog is in the layout of
    Iceberg's JDBC catalog schema V1 (iceberg_type)."""
    metrics_port = free_port()
    broker = start(make_broker, metrics_port=metrics_port)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("mixed", num_partitions=1)])["mixed"].result(15)
    produce(broker, "mixed", USER_V1, [user(i) for i in range(10)], partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("mixed", value=b"plain text", key=b"bad")
    assert producer.flush(10) == 0
    produce(broker, "mixed", USER_V1, [user(i) for i in range(10, 20)], partitions=1, start=10)
    # The table is switched on once all 21 records are there: one round reads them all.
    enable_table(admin, "mixed")
    table, rows = rows_of(broker, "mixed", 10)
    deadline = time.time() + 30
    while "partition 0 offset 10 cannot become the table's columns" not in broker.log():
        assert time.time() < deadline, broker.log()[-3000:]
        time.sleep(0.2)
    time.sleep(COMMIT_INTERVAL_MS * 3 / 1000)
    table = table_of(broker, "mixed")
    offsets = sorted(r["kafka"]["offset"] for r in table.scan().to_arrow().to_pylist())
    assert offsets == list(range(10))
    assert table.scan().to_arrow().to_pylist()[0]["value"]["name"].startswith("user-")
    text = scrape_metrics(metrics_port)
    assert metric_value(text, 'shoal_iceberg_table_lag_records{topic="mixed"}') == 11, text
    with sqlite3.connect(f"{broker.data_dir}/iceberg/catalog.db") as catalog:
        assert catalog.execute("SELECT iceberg_type FROM iceberg_tables WHERE table_name = "
                               "'mixed'").fetchall() == [("TABLE",)]


def test_bad_records_go_to_the_dead_letter_table(make_broker):
    broker = start(make_broker, 'bad_records = "dead_letter"\n')
    create_table_topic(broker, "people", partitions=1)
    produce(broker, "people", USER_V1, [user(i) for i in range(100)], partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("people", value=b"not avro", key=b"bad", partition=0)
    producer.produce("people", value=b"\0\0\0\0\x01" + b"\xff" * 3, key=b"bad-data", partition=0)
    assert producer.flush(10) == 0
    produce(broker, "people", USER_V1, [user(i) for i in range(100, 200)], partitions=1,
            start=100)
    _, rows = rows_of(broker, "people", 200)
    _, dead = rows_of(broker, "people_dead_letters", 2)
    assert len(rows) == 200 and len(dead) == 2
    assert rows["k150"]["kafka"]["offset"] == 152
    assert dead["bad"]["kafka"]["offset"] == 100
    assert dead["bad"]["value"]["bytes"] == b"not avro"
    assert dead["bad"]["value"]["error"] == "the value does not start with a schema id"
    assert dead["bad-data"]["kafka"]["offset"] == 101
    assert dead["bad-data"]["value"]["error"], dead["bad-data"]
    # Nothing is set aside twice by later commits.
    produce(broker, "people", USER_V1, [user(i) for i in range(200, 210)], partitions=1,
            start=200)
    rows_of(broker, "people", 210)
    time.sleep(COMMIT_INTERVAL_MS * 3 / 1000)
    _, dead = rows_of(broker, "people_dead_letters", 2)
    assert len(dead) == 2


def test_dead_letters_are_not_written_into_a_topics_table_of_the_same_name(make_broker):
    """Topic `people`'s dead letters go to the table `people_dead_letters`; a topic named so
    has that table already: the dead letters are refused, not mixed into it."""
    broker = start(make_broker, 'bad_records = "dead_letter"\n')
    create_table_topic(broker, "people_dead_letters", partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("people_dead_letters", value=f"v{i}".encode(), key=f"k{i}".encode())
    assert producer.flush(10) == 0
    rows_of(broker, "people_dead_letters", 10)
    # The table is switched on once the good records and the bad one are all there: one
    # round reads them together (a round between them would commit the good ones).
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("people", num_partitions=1)])["people"].result(15)
    produce(broker, "people", USER_V1, [user(i) for i in range(5)], partitions=1)
    producer.produce("people", value=b"not avro", key=b"bad", partition=0)
    assert producer.flush(10) == 0
    enable_table(admin, "people")
    deadline = time.time() + 30
    while "holds the records of another topic" not in broker.log():
        assert time.time() < deadline, broker.log()[-3000:]
        time.sleep(0.2)
    assert "kafka.people_dead_letters" in broker.log()
    time.sleep(COMMIT_INTERVAL_MS * 3 / 1000)
    table, rows = rows_of(broker, "people_dead_letters", 10)
    assert len(rows) == 10 and len(table.schemas()) == 1
    assert rows["k3"]["value"] == b"v3"
    assert table_of(broker, "people") is None or \
        len(table_of(broker, "people").scan().to_arrow()) == 0


def test_json_schema_values_become_columns(make_broker):
    broker = start(make_broker)
    create_table_topic(broker, "orders", partitions=1)
    registry = SchemaRegistryClient({"url": broker.registry_url})
    schema = json.dumps({
        "title": "Order", "type": "object",
        "properties": {"id": {"type": "string"}, "units": {"type": "integer"},
                       "price": {"type": "number"},
                       "lines": {"type": "array", "items": {"type": "string"}},
                       # An optional field as Confluent's Java serializer declares it.
                       "note": {"oneOf": [{"type": "null", "title": "Not included"},
                                          {"type": "string"}]}}})
    values = [{"id": f"o-{i}", "units": i, "price": i / 4, "lines": [f"l{i}"] * (i % 3),
               "note": f"n{i}" if i % 2 else None}
              for i in range(500)]
    produce_serialized(broker, "orders", JSONSerializer(schema, registry), values, partitions=1)
    table, rows = rows_of(broker, "orders", 500)
    assert [f.name for f in table.schema().find_field("value").field_type.fields] == \
        ["id", "lines", "note", "price", "units"]
    assert str(table.schema().find_field("value.units").field_type) == "long"
    assert str(table.schema().find_field("value.note").field_type) == "string"
    for i in range(500):
        assert rows[f"k{i}"]["value"] == {"id": f"o-{i}", "units": i, "price": i / 4,
                                          "lines": [f"l{i}"] * (i % 3),
                                          "note": f"n{i}" if i % 2 else None}


def test_json_schema_references_to_other_schemas_are_followed(make_broker):
    """A JSON Schema that refers to another registered schema by name (Confluent's schema
    references): the referenced schema's properties become the struct's columns."""
    broker = start(make_broker)
    create_table_topic(broker, "invoices", partitions=1)
    registry = SchemaRegistryClient({"url": broker.registry_url})
    customer = {"type": "object", "properties": {
        "name": {"type": "string"}, "home": {"$ref": "#/$defs/Address"}},
        "$defs": {"Address": {"type": "object", "properties": {"city": {"type": "string"}}}}}
    registry.register_schema("customer", Schema(json.dumps(customer), "JSON"))
    invoice = Schema(json.dumps({
        "title": "Invoice", "type": "object",
        "properties": {"id": {"type": "integer"}, "customer": {"$ref": "customer.json"}}}),
        "JSON", [SchemaReference("customer.json", "customer", 1)])
    values = [{"id": i, "customer": {"name": f"c{i}", "home": {"city": f"city-{i % 3}"}}}
              for i in range(100)]
    produce_serialized(broker, "invoices", JSONSerializer(invoice, registry), values,
                       partitions=1)
    table, rows = rows_of(broker, "invoices", 100)
    assert str(table.schema().find_field("value.customer.home.city").field_type) == "string"
    for i in range(100):
        assert rows[f"k{i}"]["value"] == values[i]


def test_protobuf_values_become_columns(make_broker):
    broker = start(make_broker)
    create_table_topic(broker, "orders", partitions=1)
    registry = SchemaRegistryClient({"url": broker.registry_url})
    Order, Money = protobuf_classes()
    orders = []
    for i in range(500):
        order = Order(id=f"o-{i}", tags=[str(i % 7)] * (i % 3))
        if i % 2:
            order.total.CopyFrom(Money(units=i, currency="EUR"))
        orders.append(order)
    # The serializer registers shoal/common.proto (imported) and the Order file that uses it.
    produce_serialized(broker, "orders", ProtobufSerializer(Order, registry), orders,
                       partitions=1)
    table, rows = rows_of(broker, "orders", 500)
    assert [f.name for f in table.schema().find_field("value").field_type.fields] == \
        ["id", "total", "tags"]
    for i in range(500):
        total = {"units": i, "currency": "EUR"} if i % 2 else None
        assert rows[f"k{i}"]["value"] == {"id": f"o-{i}", "total": total,
                                          "tags": [str(i % 7)] * (i % 3)}


EVENT_V1 = {
    "type": "record", "name": "Event", "namespace": "shop",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "payload", "type": ["null", "string", "long", {
            "type": "record", "name": "Point", "fields": [{"name": "x", "type": "int"}]}]},
    ],
}
# The second version: the union takes one more type, at its end.
EVENT_V2 = {**EVENT_V1, "fields": [
    EVENT_V1["fields"][0],
    {"name": "payload", "type": EVENT_V1["fields"][1]["type"] + ["double"]},
]}


def test_unions_of_several_types_become_a_struct_of_tag_and_fields(make_broker):
    """As Iceberg's own Avro conversion makes them: `tag` names which of the union's non-null
    types the value is of, and `field<tag>` holds it."""
    broker = start(make_broker)
    create_table_topic(broker, "events", partitions=1)
    payloads = ["text", 42, {"x": 3}, None]
    produce(broker, "events", EVENT_V1,
            [{"id": i, "payload": payloads[i % 4]} for i in range(400)], partitions=1)
    table, rows = rows_of(broker, "events", 400)
    payload = table.schema().find_field("value.payload").field_type
    assert [f.name for f in payload.fields] == ["tag", "field0", "field1", "field2"]
    expected = [{"tag": 0, "field0": "text", "field1": None, "field2": None},
                {"tag": 1, "field0": None, "field1": 42, "field2": None},
                {"tag": 2, "field0": None, "field1": None, "field2": {"x": 3}},
                None]
    for i in range(400):
        assert rows[f"k{i}"]["value"] == {"id": i, "payload": expected[i % 4]}, i

    produce(broker, "events", EVENT_V2, [{"id": 400, "payload": 2.5}], partitions=1,
            start=400)
    table, rows = rows_of(broker, "events", 401)
    assert rows["k400"]["value"]["payload"] == \
        {"tag": 3, "field0": None, "field1": None, "field2": None, "field3": 2.5}
    assert rows["k0"]["value"]["payload"]["field3"] is None
    duckdb_rows = duckdb_iceberg.query(
        table.metadata_location,
        "SELECT value.payload.tag, value.payload.field2.x FROM t WHERE value.id = 2")
    assert duckdb_rows == [(2, 3)]
