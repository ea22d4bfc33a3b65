"""The schema registry in the broker ([schema_registry] listen), driven by confluent-kafka's
SchemaRegistryClient and its Avro, JSON Schema and Protobuf serializers: records round-trip through a
topic, compatibility refuses a breaking change with 409, deletes and IMPORT mode answer as
Confluent's registry does, ids survive kill -9, bad input gets the registry's error codes, and
a topic with confluent.value.schema.validation refuses records without a registered schema id
(INVALID_RECORD) from confluent-kafka and kcat alike.
"""

import json
import subprocess
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   NewTopic, ResourceType)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import SHOAL_BIN
from registry_helpers import round_trip, start_registry_broker

USER_V1 = {"type": "record", "name": "User", "namespace": "shoal.test",
           "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
# v2 adds a field with a default: a v2 reader reads v1's data (BACKWARD).
USER_V2 = {**USER_V1, "fields": USER_V1["fields"] + [
    {"name": "email", "type": "string", "default": ""}]}
# v3 adds one without: v1's data has nothing to fill it with.
USER_V3 = {**USER_V1, "fields": USER_V2["fields"] + [{"name": "age", "type": "int"}]}


def avro(schema):
    return Schema(json.dumps(schema), "AVRO")


@pytest.fixture
def registry_broker(make_broker):
    return start_registry_broker(make_broker)


def client(broker):
    return SchemaRegistryClient({"url": broker.registry_url})


def http(broker, method, path, body=None):
    """(status, content type, parsed JSON body) of one request to the registry."""
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(broker.registry_url + path, data=data, method=method,
                                     headers={"Content-Type":
                                              "application/vnd.schemaregistry.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.headers["Content-Type"], json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], json.loads(error.read())


def error_of(call):
    with pytest.raises(SchemaRegistryError) as raised:
        call()
    return raised.value.http_status_code, raised.value.error_code


def test_avro_records_round_trip_with_the_registered_schema(registry_broker):
    registry = client(registry_broker)
    serializer = AvroSerializer(registry, json.dumps(USER_V1))
    deserializer = AvroDeserializer(registry)
    values = [{"id": i, "name": f"user-{i}"} for i in range(1000)]
    assert round_trip(registry_broker.bootstrap, "users", serializer, deserializer,
                      values) == values
    latest = registry.get_latest_version("users-value")
    assert latest.version == 1
    assert json.loads(latest.schema.schema_str) == USER_V1
    # A fresh client reads the schema by id, as a consumer elsewhere would.
    fresh = client(registry_broker)
    assert json.loads(fresh.get_schema(latest.schema_id).schema_str) == USER_V1


def test_json_schema_records_round_trip(registry_broker):
    registry = client(registry_broker)
    schema = {"type": "object", "properties": {"id": {"type": "integer"},
                                               "tags": {"type": "array",
                                                        "items": {"type": "string"}}},
              "required": ["id"]}
    serializer = JSONSerializer(json.dumps(schema), registry)
    deserializer = JSONDeserializer(json.dumps(schema))
    values = [{"id": i, "tags": [str(i)]} for i in range(1000)]
    assert round_trip(registry_broker.bootstrap, "events", serializer, deserializer,
                      values) == values
    registered = registry.get_latest_version("events-value")
    assert registered.schema.schema_type == "JSON"


def protobuf_classes():
    """Message classes of two .proto files, one importing the other, built as protoc would
    (a test needs no protoc): shoal/common.proto's Money, and shoal/order.proto's Order."""
    pool = descriptor_pool.DescriptorPool()
    common = descriptor_pb2.FileDescriptorProto(name="shoal/common.proto", package="common",
                                                syntax="proto3")
    money = common.message_type.add(name="Money")
    money.field.add(name="units", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    money.field.add(name="currency", number=2,
                    type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                    label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    order = descriptor_pb2.FileDescriptorProto(name="shoal/order.proto", package="shop",
                                               syntax="proto3", dependency=["shoal/common.proto"])
    message = order.message_type.add(name="Order")
    message.field.add(name="id", number=1, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    message.field.add(name="total", number=2,
                      type=descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE,
                      type_name=".common.Money",
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL)
    message.field.add(name="tags", number=3, type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
                      label=descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED)
    pool.Add(common)
    pool.Add(order)
    return (message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order")),
            message_factory.GetMessageClass(pool.FindMessageTypeByName("common.Money")))


def test_protobuf_records_round_trip_with_an_import(registry_broker):
    registry = client(registry_broker)
    Order, Money = protobuf_classes()
    # The serializer registers the import (under its file name) and the schema that uses it.
    serializer = ProtobufSerializer(Order, registry)
    # The deserializer reads the writer's schema by id in the serialized (descriptor) format.
    deserializer = ProtobufDeserializer(Order, {}, registry)
    values = [Order(id=f"o-{i}", total=Money(units=i, currency="EUR"), tags=[str(i % 7)])
              for i in range(1000)]
    assert round_trip(registry_broker.bootstrap, "orders-pb", serializer, deserializer,
                      values) == values
    registered = registry.get_latest_version("orders-pb-value")
    assert registered.schema.schema_type == "PROTOBUF"
    assert [(r.name, r.subject, r.version) for r in registered.schema.references] == \
        [("shoal/common.proto", "shoal/common.proto", 1)]
    # Stored as .proto text, whatever form it came in.
    assert 'import "shoal/common.proto";' in registered.schema.schema_str
    assert "message Order {" in registered.schema.schema_str
    imported = registry.get_latest_version("shoal/common.proto")
    assert "message Money {" in imported.schema.schema_str
    # The import cannot go while the schema refers to it.
    assert error_of(lambda: registry.delete_subject("shoal/common.proto")) == (422, 42206)


def test_protobuf_compatibility_follows_confluents_rules(registry_broker):
    registry = client(registry_broker)
    v1 = 'syntax = "proto3";\npackage shop;\nmessage Item {\n  string sku = 1;\n  int64 count = 2;\n}\n'
    registry.register_schema("items-value", Schema(v1, "PROTOBUF"))
    # The same schema, laid out differently and with a comment, is the same version.
    compact = 'syntax="proto3"; package shop; /* one line */ message Item {string sku=1; int64 count=2;}'
    assert registry.lookup_schema("items-value", Schema(compact, "PROTOBUF")).version == 1
    # Renaming a field, or int64 to uint64 (both varints), reads the same bytes.
    v2 = v1.replace("int64 count", "uint64 quantity")
    assert registry.register_schema("items-value", Schema(v2, "PROTOBUF"))
    # int64 to string does not.
    v3 = v1.replace("int64 count", "string count")
    status, _, answer = http(registry_broker, "POST",
                             "/compatibility/subjects/items-value/versions/latest?verbose=true",
                             {"schema": v3, "schemaType": "PROTOBUF"})
    assert status == 200 and answer["is_compatible"] is False
    assert any("FIELD_SCALAR_KIND_CHANGED" in m for m in answer["messages"]), answer
    assert error_of(lambda: registry.register_schema("items-value", Schema(v3, "PROTOBUF"))) \
        == (409, 409)
    # Text that is not Protobuf is refused as an invalid schema.
    assert error_of(lambda: registry.register_schema("items-value",
                                                     Schema("message {", "PROTOBUF"))) \
        == (422, 42201)


def test_json_schema_compatibility_follows_content_models(registry_broker):
    registry = client(registry_broker)

    def schema(properties, closed=False, required=()):
        body = {"type": "object", "properties": properties, "required": list(required)}
        if closed:
            body["additionalProperties"] = False
        return Schema(json.dumps(body), "JSON")

    base = {"id": {"type": "integer"}, "name": {"type": "string"}}
    registry.register_schema("open-value", schema(base))
    # An open content model: old documents may already hold "age" with any value.
    with_age = {**base, "age": {"type": "integer"}}
    status, _, answer = http(registry_broker, "POST",
                             "/compatibility/subjects/open-value/versions/latest?verbose=true",
                             {"schema": schema(with_age).schema_str, "schemaType": "JSON"})
    assert status == 200 and answer["is_compatible"] is False
    assert any("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL" in m for m in answer["messages"]), answer
    # Widening integer to number is compatible.
    registry.register_schema("open-value", schema({**base, "id": {"type": "number"}}))
    assert registry.get_latest_version("open-value").version == 2
    # A closed content model takes an optional property, not a required one without default.
    registry.register_schema("closed-value", schema(base, closed=True))
    assert registry.register_schema("closed-value", schema(with_age, closed=True))
    more = {**with_age, "email": {"type": "string"}}
    assert error_of(lambda: registry.register_schema(
        "closed-value", schema(more, closed=True, required=["email"]))) == (409, 409)


def test_backward_compatibility_refuses_a_breaking_change_until_none(registry_broker):
    registry = client(registry_broker)
    assert registry.get_compatibility() == "BACKWARD"
    first = registry.register_schema("orders-value", avro(USER_V1))
    second = registry.register_schema("orders-value", avro(USER_V2))
    assert second != first
    assert registry.get_latest_version("orders-value").version == 2
    # The same schema again is the same version and id.
    assert registry.register_schema("orders-value", avro(USER_V2)) == second
    assert error_of(lambda: registry.register_schema("orders-value", avro(USER_V3))) == (409, 409)
    assert not registry.test_compatibility("orders-value", avro(USER_V3))
    assert registry.test_compatibility("orders-value", avro(USER_V2))
    status, _, answer = http(registry_broker, "POST",
                             "/compatibility/subjects/orders-value/versions/latest?verbose=true",
                             {"schema": json.dumps(USER_V3)})
    assert status == 200 and answer["is_compatible"] is False
    assert any("READER_FIELD_MISSING_DEFAULT_VALUE" in m and "age" in m
               for m in answer["messages"]), answer
    assert "{compatibility: 'BACKWARD'}" in answer["messages"]
    # FORWARD: the old schema reads the new data (v3's extra field is skipped).
    registry.set_compatibility("orders-value", "FORWARD")
    assert registry.get_compatibility("orders-value") == "FORWARD"
    registry.set_compatibility("orders-value", "NONE")
    third = registry.register_schema("orders-value", avro(USER_V3))
    assert registry.get_versions("orders-value") == [1, 2, 3]
    assert registry.get_schema_versions(third) and third not in (first, second)


def test_soft_and_permanent_deletes_answer_as_confluent_does(registry_broker):
    registry = client(registry_broker)
    registry.register_schema("s-value", avro(USER_V1))
    registry.register_schema("s-value", avro(USER_V2))
    assert error_of(lambda: registry.delete_version("s-value", 1, permanent=True)) == (404, 40407)
    assert registry.delete_version("s-value", 1) == 1
    assert error_of(lambda: registry.get_version("s-value", 1)) == (404, 40402)
    assert registry.get_versions("s-value") == [2]
    assert error_of(lambda: registry.delete_subject("s-value", permanent=True)) == (404, 40405)
    assert registry.delete_subject("s-value") == [2]
    assert error_of(lambda: registry.delete_subject("s-value")) == (404, 40404)
    assert error_of(lambda: registry.get_versions("s-value")) == (404, 40401)
    status, _, listed = http(registry_broker, "GET", "/subjects?deleted=true")
    assert status == 200 and "s-value" in listed
    assert sorted(registry.delete_subject("s-value", permanent=True)) == [1, 2]
    status, _, listed = http(registry_broker, "GET", "/subjects?deleted=true")
    assert "s-value" not in listed
    assert error_of(lambda: registry.get_latest_version("s-value")) == (404, 40401)


def test_import_mode_keeps_the_callers_ids(registry_broker):
    registry = client(registry_broker)
    registry.register_schema("existing", avro(USER_V1))
    status, _, answer = http(registry_broker, "PUT", "/mode", {"mode": "IMPORT"})
    assert (status, answer["error_code"]) == (422, 42205)
    status, _, answer = http(registry_broker, "PUT", "/mode?force=true", {"mode": "IMPORT"})
    assert (status, answer) == (200, {"mode": "IMPORT"})
    status, _, answer = http(registry_broker, "POST", "/subjects/imported/versions",
                             {"schema": json.dumps(USER_V2), "id": 100, "version": 7})
    assert (status, answer) == (200, {"id": 100})
    status, _, answer = http(registry_broker, "GET", "/subjects/imported/versions/latest")
    assert (answer["id"], answer["version"]) == (100, 7)
    http(registry_broker, "PUT", "/mode", {"mode": "READWRITE"})
    # New ids go on above the imported ones.
    assert registry.register_schema("after", avro(USER_V3)) == 101
    # READONLY refuses registration.
    http(registry_broker, "PUT", "/mode/after", {"mode": "READONLY"})
    assert error_of(lambda: registry.register_schema("after", avro(USER_V1))) == (422, 42205)


def test_one_schema_one_id_across_subjects_and_kill_9(registry_broker):
    registry = client(registry_broker)
    a = registry.register_schema("a-value", avro(USER_V1))
    b = registry.register_schema("b-value", avro(USER_V1))
    other = registry.register_schema("c-value", avro(USER_V2))
    assert a == b != other
    registry_broker.kill()
    registry_broker.start()
    again = client(registry_broker)
    assert again.register_schema("d-value", avro(USER_V1)) == a
    assert again.register_schema("c-value", avro(USER_V2)) == other
    assert json.loads(again.get_schema(other).schema_str) == USER_V2
    status, _, subjects = http(registry_broker, "GET", f"/schemas/ids/{a}/subjects")
    assert sorted(subjects) == ["a-value", "b-value", "d-value"]
    assert again.register_schema("e-value", avro(USER_V3)) not in (a, other)


def test_bad_input_gets_the_registrys_error_codes(registry_broker):
    status, content_type, answer = http(registry_broker, "POST", "/subjects/x/versions",
                                        {"schema": '{"type": "record", "name": "R"}'})
    assert (status, answer["error_code"]) == (422, 42201)
    assert content_type == "application/vnd.schemaregistry.v1+json"
    assert "message" in answer
    deep = "[" * 200 + '"int"' + "]" * 200
    status, _, answer = http(registry_broker, "POST", "/subjects/x/versions", {"schema": deep})
    assert (status, answer["error_code"]) == (422, 42201)
    status, _, answer = http(registry_broker, "POST", "/subjects/x/versions",
                             {"schema": '"' + "x" * (1 << 20) + '"'})
    assert (status, answer["error_code"]) == (422, 42209)
    status, _, answer = http(registry_broker, "POST", "/subjects/x/versions",
                             {"schema": "x" * (3 << 20)})
    assert status == 413
    status, _, answer = http(registry_broker, "GET", "/subjects/x/versions/zero")
    assert (status, answer["error_code"]) == (422, 42202)
    status, _, answer = http(registry_broker, "PUT", "/config", {"compatibility": "SOMETIMES"})
    assert (status, answer["error_code"]) == (422, 42203)
    status, _, answer = http(registry_broker, "GET", "/schemas/ids/12345")
    assert (status, answer["error_code"]) == (404, 40403)
    status, _, answer = http(registry_broker, "GET", "/config/nobody")
    assert (status, answer["error_code"]) == (404, 40408)
    status, _, answer = http(registry_broker, "POST", "/subjects/x/versions",
                             {"schema": json.dumps(USER_V1),
                              "references": [{"name": "shoal.test.Missing",
                                              "subject": "nowhere", "version": 1}]})
    assert (status, answer["error_code"]) == (422, 42201)
    # Protobuf messages nested past what .proto text allows; a JSON Schema whose $ref points
    # nowhere; a Protobuf import no reference supplies.
    nested = "message M {" * 40 + "}" * 40
    status, _, answer = http(registry_broker, "POST", "/subjects/x/versions",
                             {"schema": 'syntax = "proto3";' + nested, "schemaType": "PROTOBUF"})
    assert (status, answer["error_code"]) == (422, 42201)
    status, _, answer = http(registry_broker, "POST", "/subjects/x/versions",
                             {"schema": json.dumps({"$ref": "#/definitions/none"}),
                              "schemaType": "JSON"})
    assert (status, answer["error_code"]) == (422, 42201)
    status, _, answer = http(registry_broker, "POST", "/subjects/x/versions",
                             {"schema": 'syntax = "proto3"; import "other.proto";',
                              "schemaType": "PROTOBUF"})
    assert (status, answer["error_code"]) == (422, 42201)
    # Nothing bad was registered, and the registry still answers.
    status, _, subjects = http(registry_broker, "GET", "/subjects")
    assert (status, subjects) == (200, [])
    # A recursive schema that is well formed (a tree by $ref) is a schema like any other.
    tree = {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#"}}}}
    status, _, answer = http(registry_broker, "POST", "/subjects/tree/versions",
                             {"schema": json.dumps(tree), "schemaType": "JSON"})
    assert status == 200 and answer["id"] >= 1


def test_references_lend_their_types(registry_broker):
    address = {"type": "record", "name": "Address", "namespace": "shoal.test",
               "fields": [{"name": "city", "type": "string"}]}
    person = {"type": "record", "name": "Person", "namespace": "shoal.test",
              "fields": [{"name": "home", "type": "shoal.test.Address"}]}
    status, _, _ = http(registry_broker, "POST", "/subjects/address/versions",
                        {"schema": json.dumps(address)})
    assert status == 200
    status, _, answer = http(registry_broker, "POST", "/subjects/person-value/versions",
                             {"schema": json.dumps(person),
                              "references": [{"name": "shoal.test.Address",
                                              "subject": "address", "version": 1}]})
    assert status == 200, answer
    status, _, referencing = http(registry_broker, "GET",
                                  "/subjects/address/versions/1/referencedby")
    assert referencing == [answer["id"]]
    status, _, refused = http(registry_broker, "DELETE", "/subjects/address/versions/1")
    assert (status, refused["error_code"]) == (422, 42206)
    # A serializer with the reference writes records a deserializer reads back.
    registry = client(registry_broker)
    latest = registry.get_latest_version("person-value")
    assert [r.subject for r in latest.schema.references] == ["address"]


def produce_raw(bootstrap, topic, values):
    """The delivery error of each value (None when acknowledged), sent one batch each."""
    errors = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0,
                         "retries": 0})
    for value in values:
        producer.produce(topic, value=value, on_delivery=lambda e, _m: errors.append(e))
        producer.flush(30)
    return [None if e is None else e.code() for e in errors]


def test_a_validating_topic_takes_registered_schemas_only(registry_broker):
    bootstrap = registry_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic("validated", num_partitions=1,
                     config={"confluent.value.schema.validation": "true"})
    admin.create_topics([topic])["validated"].result(15)
    described = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "validated")])
    configs = list(described.values())[0].result(10)
    assert configs["confluent.value.schema.validation"].value == "true"
    assert configs["confluent.value.subject.name.strategy"].value == (
        "io.confluent.kafka.serializers.subject.TopicNameStrategy")
    registry = client(registry_broker)
    serializer = AvroSerializer(registry, json.dumps(USER_V1))
    values = [{"id": i, "name": f"user-{i}"} for i in range(1000)]
    assert round_trip(bootstrap, "validated", serializer, AvroDeserializer(registry),
                      values) == values
    # An id registered under another subject only, an id nobody registered, no prefix.
    elsewhere = registry.register_schema("other-value", avro(USER_V3))
    prefix = lambda schema_id: b"\0" + schema_id.to_bytes(4, "big")
    assert produce_raw(bootstrap, "validated", [
        prefix(elsewhere) + b"x", prefix(99999) + b"x", b"plain", b"",
        prefix(registry.get_latest_version("validated-value").schema_id) + b"\x02\x02a",
    ]) == [KafkaError.INVALID_RECORD] * 4 + [None]
    # kcat sends plain text: refused the same way (librdkafka's text for INVALID_RECORD).
    done = subprocess.run(["kcat", "-b", bootstrap, "-P", "-t", "validated", "-X", "acks=all"],
                          input=b"not avro\n", capture_output=True, timeout=30)
    assert done.returncode != 0 and b"Broker failed to validate record" in done.stderr, done
    # Nothing refused was stored: the 1000 records and the one good one.
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "count",
                         "auto.offset.reset": "earliest"})
    low, high = consumer.get_watermark_offsets(TopicPartition("validated", 0), timeout=10)
    consumer.close()
    assert (low, high) == (0, 1001)
    # Validation off again: anything goes.
    admin.incremental_alter_configs([ConfigResource(
        ResourceType.TOPIC, "validated", incremental_configs=[ConfigEntry(
            "confluent.value.schema.validation", "false",
            incremental_operation=AlterConfigOpType.SET)])])[
        ConfigResource(ResourceType.TOPIC, "validated")].result(10)
    assert produce_raw(bootstrap, "validated", [b"plain"]) == [None]


def test_a_decoding_topic_takes_only_data_its_schema_reads(registry_broker):
    """shoal.schema.validation.decode: the id must be registered, and the data must decode."""
    bootstrap = registry_broker.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("decoded", num_partitions=1, config={
        "confluent.value.schema.validation": "true",
        "shoal.schema.validation.decode": "true"})])["decoded"].result(15)
    registry = client(registry_broker)
    serializer = AvroSerializer(registry, json.dumps(USER_V1))
    values = [{"id": i, "name": f"user-{i}"} for i in range(1000)]
    assert round_trip(bootstrap, "decoded", serializer, AvroDeserializer(registry),
                      values) == values
    good = serializer({"id": 7, "name": "seven"}, SerializationContext("decoded",
                                                                        MessageField.VALUE))
    schema_id = registry.get_latest_version("decoded-value").schema_id
    prefix = b"\0" + schema_id.to_bytes(4, "big")
    # A registered id with data cut short, with bytes left over, and with garbage.
    assert produce_raw(bootstrap, "decoded", [
        good[:-2], good + b"\0", prefix + b"\xff\xff\xff", good,
    ]) == [KafkaError.INVALID_RECORD] * 3 + [None]
    # JSON Schema: the document must satisfy the schema.
    schema = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
    admin.create_topics([NewTopic("decoded-json", num_partitions=1, config={
        "confluent.value.schema.validation": "true",
        "shoal.schema.validation.decode": "true"})])["decoded-json"].result(15)
    json_id = registry.register_schema("decoded-json-value", Schema(json.dumps(schema), "JSON"))
    json_prefix = b"\0" + json_id.to_bytes(4, "big")
    assert produce_raw(bootstrap, "decoded-json", [
        json_prefix + b'{"id": 1}', json_prefix + b'{"id": "one"}', json_prefix + b"{",
    ]) == [None, KafkaError.INVALID_RECORD, KafkaError.INVALID_RECORD]


def schema_cli(broker, *args):
    """(exit status, stdout parsed as JSON when it is, stderr) of `shoal schema ...`."""
    done = subprocess.run([SHOAL_BIN, "schema", *args, "--registry", broker.registry_url,
                           "--format", "json"], capture_output=True, text=True, timeout=30)
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError:
        out = done.stdout
    return done.returncode, out, done.stderr


def test_the_schema_cli_and_ids_in_consumed_records(registry_broker, tmp_path):
    v1, v3 = tmp_path / "v1.avsc", tmp_path / "v3.avsc"
    v1.write_text(json.dumps(USER_V1))
    v3.write_text(json.dumps(USER_V3))
    status, registered, _ = schema_cli(registry_broker, "register", "cli-value", str(v1))
    assert status == 0 and registered["id"] >= 1
    status, listed, _ = schema_cli(registry_broker, "list")
    assert [(s["subject"], s["version"], s["id"]) for s in listed] == [
        ("cli-value", 1, registered["id"])]
    status, found, _ = schema_cli(registry_broker, "get", "--id", str(registered["id"]))
    assert json.loads(found["schema"]) == USER_V1
    # Incompatible: exit status 1, the messages printed, nothing registered.
    status, answer, _ = schema_cli(registry_broker, "check", "cli-value", str(v3))
    assert status == 1 and answer["is_compatible"] is False and answer["messages"]
    status, _, error = schema_cli(registry_broker, "register", "cli-value", str(v3))
    assert status == 1 and "registry error 409" in error
    status, _, error = schema_cli(registry_broker, "get", "nobody")
    assert status == 1 and "40401" in error
    # A registry serializer's records show their schema id in `shoal consume --format json`.
    registry = client(registry_broker)
    serializer = AvroSerializer(registry, json.dumps(USER_V1))
    producer = Producer({"bootstrap.servers": registry_broker.bootstrap})
    producer.produce("cli", value=serializer({"id": 1, "name": "a"},
                                             SerializationContext("cli", MessageField.VALUE)))
    assert producer.flush(30) == 0
    done = subprocess.run([SHOAL_BIN, "consume", "--bootstrap", registry_broker.bootstrap,
                           "--format", "json", "cli"], capture_output=True, text=True,
                          timeout=30)
    record = json.loads(done.stdout.splitlines()[0])
    assert record["value_schema_id"] == registered["id"] and "key_schema_id" not in record
    status, deleted, _ = schema_cli(registry_broker, "delete", "cli-value")
    assert (status, deleted) == (0, [1])


def test_import_of_a_confluent_schemas_topic_keeps_ids_versions_and_deletes(registry_broker):
    """A `_schemas` topic as Confluent's registry writes it (here produced by hand, as if
    mirrored from another cluster), piped from `shoal consume` into `shoal schema import`."""
    def key(keytype, subject=None, version=None):
        body = {"keytype": keytype, "subject": subject, "magic": 1}
        if version is not None:
            body["version"] = version
        return json.dumps(body)

    def version(subject, number, schema_id, schema, **extra):
        return json.dumps({"subject": subject, "version": number, "id": schema_id,
                           "schema": json.dumps(schema), "deleted": False, **extra})

    records = [
        (key("CONFIG"), json.dumps({"compatibilityLevel": "FULL"})),
        (key("SCHEMA", "users-value", 1), version("users-value", 1, 21, USER_V1)),
        (key("SCHEMA", "users-value", 2), version("users-value", 2, 34, USER_V2)),
        (key("SCHEMA", "old-value", 1), version("old-value", 1, 21, USER_V1)),
        (key("DELETE_SUBJECT", "old-value"), json.dumps({"subject": "old-value", "version": 1})),
        (key("SCHEMA", "gone-value", 1), version("gone-value", 1, 40, USER_V3)),
        (key("SCHEMA", "gone-value", 1), None),
        (key("CONFIG", "users-value"), json.dumps({"compatibilityLevel": "NONE"})),
        (key("NOOP"), None),
    ]
    producer = Producer({"bootstrap.servers": registry_broker.bootstrap, "acks": "all"})
    for k, v in records:
        producer.produce("_schemas", key=k, value=v)
    assert producer.flush(30) == 0

    def pipeline():
        consume = subprocess.run([SHOAL_BIN, "consume", "_schemas", "--bootstrap",
                                  registry_broker.bootstrap, "--format", "json"],
                                 capture_output=True, timeout=60, check=True)
        return subprocess.run([SHOAL_BIN, "schema", "--registry", registry_broker.registry_url,
                               "--format", "json", "import", "-"], input=consume.stdout,
                              capture_output=True, timeout=60)

    done = pipeline()
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["registered"], summary["deleted"], summary["failed"]) == (3, 1, [])
    registry = client(registry_broker)
    latest = registry.get_latest_version("users-value")
    assert (latest.version, latest.schema_id) == (2, 34)
    assert json.loads(registry.get_schema(21).schema_str) == USER_V1
    assert registry.get_versions("users-value") == [1, 2]
    assert "old-value" not in registry.get_subjects()
    status, _, listed = http(registry_broker, "GET", "/subjects?deleted=true")
    assert "old-value" in listed and "gone-value" not in listed
    assert registry.get_compatibility() == "FULL"
    assert registry.get_compatibility("users-value") == "NONE"
    # The registry is writable again, and new ids go on above the imported ones.
    status, _, mode = http(registry_broker, "GET", "/mode")
    assert mode == {"mode": "READWRITE"}
    assert registry.register_schema("new-value", avro(USER_V3)) == 41 or \
        registry.get_latest_version("new-value").schema_id > 34
    # Importing the same topic again changes nothing and fails nothing.
    again = pipeline()
    assert again.returncode == 0, again.stdout
    assert json.loads(again.stdout)["failed"] == []
    assert json.loads(again.stdout)["present"] >= 1
    assert registry.get_versions("users-value") == [1, 2]
