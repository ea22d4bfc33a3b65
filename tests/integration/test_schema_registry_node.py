"""A second schema registry client family: @kafkajs/confluent-schema-registry (npm, installed
in tests/node by `npm ci`) registers Avro and Protobuf schemas in the broker's registry and
encodes values; confluent-kafka produces them to a topic that validates schema ids and reads
them back; each client decodes what the other encoded."""

import json
import pathlib
import shutil
import subprocess

import pytest
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from registry_helpers import round_trip, start_registry_broker

NODE_DIR = pathlib.Path(__file__).resolve().parents[1] / "node"
USER = {"type": "record", "name": "User", "namespace": "shoal.node",
        "fields": [{"name": "id", "type": "long"}, {"name": "name", "type": "string"}]}
ITEM_PROTO = 'syntax = "proto3";\npackage shop;\nmessage Item {\n  string sku = 1;\n  int32 count = 2;\n}\n'


@pytest.fixture
def registry_broker(make_broker):
    return start_registry_broker(make_broker)


def node(job):
    if shutil.which("node") is None or not (NODE_DIR / "node_modules").is_dir():
        pytest.fail("tests/node needs node and `npm ci` there (.ci/run installs both)")
    done = subprocess.run(["node", str(NODE_DIR / "registry_client.js")],
                          input=json.dumps(job), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def through_a_validating_topic(broker, topic, payloads):
    """The payloads, encoded already, through a topic that refuses unknown schema ids."""
    as_is = lambda payload, _context: payload  # noqa: E731
    return round_trip(broker.bootstrap, topic, as_is, as_is, payloads)


def test_kafkajs_registry_client_registers_encodes_and_decodes(registry_broker):
    values = [{"id": i, "name": f"user-{i}"} for i in range(100)]
    items = [{"sku": f"sku-{i}", "count": i + 1} for i in range(100)]
    registered = node({"url": registry_broker.registry_url, "register": [
        {"subject": "people-value", "type": "AVRO", "schema": json.dumps(USER)},
        {"subject": "items-value", "type": "PROTOBUF", "schema": ITEM_PROTO}]})
    avro_id, proto_id = registered["ids"]
    encoded = node({"url": registry_broker.registry_url,
                    "encode": [{"id": avro_id, "values": values},
                               {"id": proto_id, "values": items}]})["encoded"]
    people = through_a_validating_topic(registry_broker, "people",
                                        [bytes.fromhex(h) for h in encoded[:100]])
    stock = through_a_validating_topic(registry_broker, "items",
                                       [bytes.fromhex(h) for h in encoded[100:]])
    # confluent-kafka decodes what the npm client encoded, by the id in each payload.
    python = SchemaRegistryClient({"url": registry_broker.registry_url})
    deserializer = AvroDeserializer(python)
    context = SerializationContext("people", MessageField.VALUE)
    assert [deserializer(p, context) for p in people] == values
    # The npm client decodes what confluent-kafka encoded, and its own Protobuf records.
    serializer = AvroSerializer(python, json.dumps(USER))
    from_python = [serializer(v, context).hex() for v in values[:10]]
    assert python.get_latest_version("people-value").version == 1
    decoded = node({"url": registry_broker.registry_url,
                    "decode": from_python + [p.hex() for p in stock]})["decoded"]
    assert decoded[:10] == values[:10]
    assert decoded[10:] == items
