"""The table writer on a broker whose clients must log in: with `[iceberg.client]` it connects
to the SASL listener as its own user, so the authorizer, which lets the anonymous PLAINTEXT
principal do nothing, lets it read the table's topic; a protocol the broker has no listener
for stops the broker at start with a message that says so. The broker's own schema registry
served over HTTPS with HTTP Basic logins is asked as that user too."""

import json
import subprocess
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import SHOAL_BIN, free_port
from test_iceberg import COMMIT_INTERVAL_MS, catalog_of, table_rows, wait_for_rows
from tls_certs import CertificateAuthority

ADMIN = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
         "sasl.username": "admin", "sasl.password": "admin-secret"}


def secured_broker(make_broker, client, extra="", iceberg=""):
    sasl_port = free_port()
    broker = make_broker("secured")
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},'
        f'SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        f'data_dir = "{broker.data_dir}"\n'
        "[authorizer]\nenabled = true\n"
        'super_users = ["User:admin", "User:tables"]\n'
        '[sasl.plain_users]\nadmin = "admin-secret"\ntables = "tables-secret"\n'
        f"{extra}"
        f"[iceberg]\nenabled = true\ncommit_interval_ms = {COMMIT_INTERVAL_MS}\n{iceberg}"
        f"[iceberg.client]\n{client}\n")
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    return broker


TABLES_USER = ('"security.protocol" = "SASL_PLAINTEXT"\n"sasl.mechanism" = "PLAIN"\n'
               '"sasl.username" = "tables"\n"sasl.password" = "tables-secret"\n')


def test_the_writer_logs_in_on_a_sasl_listener(make_broker):
    broker = secured_broker(make_broker, TABLES_USER).start()
    admin = AdminClient({"bootstrap.servers": broker.sasl_bootstrap, **ADMIN})
    admin.create_topics([NewTopic("secured", num_partitions=2, config={
        "shoal.iceberg.enabled": "true"})])["secured"].result(15)
    producer = Producer({"bootstrap.servers": broker.sasl_bootstrap, **ADMIN})
    for i in range(1000):
        producer.produce("secured", value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    rows = wait_for_rows(broker, "secured", 1000)
    assert len(rows) == 1000
    assert sorted(v for _, v, _ in rows.values()) == sorted(f"v{i}".encode() for i in range(1000))


def test_a_protocol_without_a_listener_is_refused_at_start(make_broker):
    broker = secured_broker(make_broker, '"security.protocol" = "SSL"\n')
    done = subprocess.run([SHOAL_BIN, "--config", str(broker.config_path)], capture_output=True,
                          text=True, timeout=30)
    assert done.returncode != 0
    assert "[iceberg.client]" in done.stderr + done.stdout
    assert "no SSL listener" in done.stderr + done.stdout


def test_without_client_settings_the_anonymous_writer_is_refused_by_the_authorizer(make_broker):
    """The check above means something: the same broker with the writer on PLAINTEXT (as
    User:ANONYMOUS, whom no ACL names) writes no table."""
    broker = secured_broker(make_broker, "").start()
    admin = AdminClient({"bootstrap.servers": broker.sasl_bootstrap, **ADMIN})
    admin.create_topics([NewTopic("secured", num_partitions=1, config={
        "shoal.iceberg.enabled": "true"})])["secured"].result(15)
    producer = Producer({"bootstrap.servers": broker.sasl_bootstrap, **ADMIN})
    producer.produce("secured", value=b"v")
    assert producer.flush(30) == 0
    time.sleep(COMMIT_INTERVAL_MS * 5 / 1000)
    assert table_rows(broker, "secured") is None



def test_the_writer_asks_the_own_registry_over_https_as_its_user(make_broker, tmp_path):
    """`[schema_registry] tls = true` and `authentication = "basic"`: the writer reaches it
    over HTTPS and logs in as `[iceberg.client]`'s user, so Avro values become columns (before,
    such a registry was not asked and the table kept bytes)."""
    ca = CertificateAuthority(tmp_path / "ca")
    cert, key = ca.issue("server", "/CN=localhost", server=True)
    registry_port = free_port()
    broker = secured_broker(
        make_broker, TABLES_USER,
        extra=f'[ssl]\ncertificate_file = "{cert}"\nkey_file = "{key}"\n'
              f'[schema_registry]\nlisten = "127.0.0.1:{registry_port}"\ntls = true\n'
              'authentication = "basic"\n',
        iceberg=f'schema_registry_ca_file = "{ca.ca_cert}"\n').start()
    admin = AdminClient({"bootstrap.servers": broker.sasl_bootstrap, **ADMIN})
    admin.create_topics([NewTopic("orders", num_partitions=1, config={
        "shoal.iceberg.enabled": "true"})])["orders"].result(15)
    registry = SchemaRegistryClient({"url": f"https://127.0.0.1:{registry_port}",
                                     "ssl.ca.location": str(ca.ca_cert),
                                     "basic.auth.user.info": "admin:admin-secret"})
    schema = {"type": "record", "name": "Order",
              "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"}]}
    serialize = AvroSerializer(registry, json.dumps(schema))
    producer = Producer({"bootstrap.servers": broker.sasl_bootstrap, **ADMIN})
    for i in range(100):
        value = serialize({"id": i, "item": f"item-{i}"},
                          SerializationContext("orders", MessageField.VALUE))
        producer.produce("orders", value=value)
    assert producer.flush(30) == 0
    wait_for_rows(broker, "orders", 100)
    table = catalog_of(broker).load_table("kafka.orders")
    rows = table.scan().to_arrow().to_pylist()
    assert sorted((r["value"]["id"], r["value"]["item"]) for r in rows) == \
        [(i, f"item-{i}") for i in range(100)]
