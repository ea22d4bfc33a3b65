"""TLS listeners against the real binary: confluent-kafka and kafka-python over SASL_SSL with
SCRAM-SHA-512 and PLAIN, kcat over SSL with a client certificate whose subject is its
principal, refusals, and a certificate reloaded while the broker runs."""

import json
import shutil
import signal
import socket
import ssl
import subprocess
import time

import kafka
import pytest
from confluent_kafka import Consumer, KafkaError, Producer
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   NewTopic,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)

from conftest import free_port, free_ports
from tls_certs import CertificateAuthority

WRITER_DN = "CN=writer,OU=ingest,O=Shoal Test"


@pytest.fixture
def ca(tmp_path):
    return CertificateAuthority(tmp_path / "ca")


@pytest.fixture
def tls_broker(make_broker, ca):
    return start_tls_broker(make_broker, ca, reload_check_ms=200)


def start_tls_broker(make_broker, ca, reload_check_ms):
    """PLAINTEXT (for setup), SASL_SSL and SSL with client certificates required; the
    authorizer on with `admin` a super user."""
    cert, key = ca.issue("server", "/CN=localhost", server=True)
    broker = make_broker("tls")
    broker.sasl_ssl_port, broker.ssl_port = free_ports(2, taken={broker.port})
    broker.server_cert = cert
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},'
        f"SASL_SSL://127.0.0.1:{broker.sasl_ssl_port},SSL://127.0.0.1:{broker.ssl_port}\"\n"
        f'data_dir = "{broker.data_dir}"\n'
        "[ssl]\n"
        f'certificate_file = "{cert}"\n'
        f'key_file = "{key}"\n'
        'client_auth = "required"\n'
        f'truststore_file = "{ca.ca_cert}"\n'
        f"reload_check_ms = {reload_check_ms}\n"
        "[sasl]\n"
        'enabled_mechanisms = ["PLAIN", "SCRAM-SHA-512"]\n'
        "[sasl.plain_users]\n"
        'admin = "admin-secret"\n'
        'alice = "alice-secret"\n'
        "[authorizer]\n"
        "enabled = true\n"
        'super_users = ["User:admin"]\n'
    )
    broker.start()
    return broker


def sasl_ssl(broker, ca, user, password, mechanism):
    return {"bootstrap.servers": f"127.0.0.1:{broker.sasl_ssl_port}",
            "security.protocol": "SASL_SSL", "ssl.ca.location": str(ca.ca_cert),
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def allow(broker, ca, principal, topic, group=None):
    admin = AdminClient(sasl_ssl(broker, ca, "admin", "admin-secret", "PLAIN"))
    bindings = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*",
                           op, AclPermissionType.ALLOW)
                for op in (AclOperation.WRITE, AclOperation.READ, AclOperation.CREATE)]
    if group:
        bindings.append(AclBinding(ResourceType.GROUP, group, ResourcePatternType.LITERAL,
                                   principal, "*", AclOperation.READ, AclPermissionType.ALLOW))
    for future in admin.create_acls(bindings).values():
        future.result(10)


def round_trip(config, topic, values):
    errors = []
    producer = Producer(config)
    for v in values:
        producer.produce(topic, v, on_delivery=lambda err, _m: errors.append(err))
    producer.flush(15)
    assert errors == [None] * len(values)
    consumer = Consumer({**config, "group.id": f"{topic}-g", "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    deadline = time.time() + 20
    while len(got) < len(values) and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
    consumer.close()
    return got


def give_alice_a_scram_password(broker, ca):
    """alice logs in with PLAIN as alice-secret, with SCRAM-SHA-512 as alice-scram."""
    admin = AdminClient(sasl_ssl(broker, ca, "admin", "admin-secret", "PLAIN"))
    upsert = UserScramCredentialUpsertion("alice", ScramCredentialInfo(
        ScramMechanism.SCRAM_SHA_512, 4096), b"alice-scram")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(10)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_confluent_kafka_over_sasl_ssl(tls_broker, ca, mechanism):
    give_alice_a_scram_password(tls_broker, ca)
    allow(tls_broker, ca, "User:alice", "secured", group="secured-g")
    password = "alice-secret" if mechanism == "PLAIN" else "alice-scram"
    config = sasl_ssl(tls_broker, ca, "alice", password, mechanism)
    assert round_trip(config, "secured", [b"a", b"b", b"c"]) == [b"a", b"b", b"c"]


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_kafka_python_over_sasl_ssl_and_a_wrong_password(tls_broker, ca, mechanism):
    give_alice_a_scram_password(tls_broker, ca)
    allow(tls_broker, ca, "User:alice", "kp-tls")

    def producer(password):
        return kafka.KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{tls_broker.sasl_ssl_port}", security_protocol="SASL_SSL",
            ssl_cafile=str(ca.ca_cert), sasl_mechanism=mechanism,
            sasl_plain_username="alice", sasl_plain_password=password, bootstrap_timeout_ms=5000)

    p = producer("alice-secret" if mechanism == "PLAIN" else "alice-scram")
    metadata = p.send("kp-tls", b"over tls").get(timeout=15)
    assert metadata.offset >= 0
    p.close()
    with pytest.raises(kafka.errors.KafkaError):
        producer("wrong").send("kp-tls", b"x").get(timeout=10)


def kcat(broker, ca, cert, key, *args, data=None):
    return subprocess.run(
        ["kcat", "-b", f"127.0.0.1:{broker.ssl_port}", "-X", "security.protocol=SSL",
         "-X", f"ssl.ca.location={ca.ca_cert}", "-X", f"ssl.certificate.location={cert}",
         "-X", f"ssl.key.location={key}", *args],
        input=data, capture_output=True, timeout=30)


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is installed by .ci/run")
def test_kcat_over_ssl_with_a_client_certificate_as_its_principal(tls_broker, ca):
    cert, key = ca.issue("writer", "/O=Shoal Test/OU=ingest/CN=writer")
    other_cert, other_key = ca.issue("other", "/CN=other")
    allow(tls_broker, ca, f"User:{WRITER_DN}", "certs")
    produced = kcat(tls_broker, ca, cert, key, "-P", "-t", "certs", data=b"one\ntwo\n")
    assert produced.returncode == 0, produced.stderr
    consumed = kcat(tls_broker, ca, cert, key, "-C", "-t", "certs", "-c", "2", "-e")
    assert consumed.stdout.split() == [b"one", b"two"], consumed.stderr
    # Another certificate from the same CA is another principal, with no ACLs.
    refused = kcat(tls_broker, ca, other_cert, other_key, "-P", "-t", "certs", data=b"x\n")
    assert b"Topic authorization failed" in refused.stderr, refused.stderr
    assert "TLS handshake failed" not in tls_broker.log()


def test_a_client_without_a_certificate_is_refused_when_one_is_required(tls_broker, ca):
    context = ssl.create_default_context(cafile=str(ca.ca_cert))
    with socket.create_connection(("127.0.0.1", tls_broker.ssl_port), timeout=5) as raw:
        with pytest.raises((ssl.SSLError, ConnectionResetError, BrokenPipeError)):
            with context.wrap_socket(raw, server_hostname="localhost") as tls:
                tls.sendall(b"\x00\x00\x00\x0a\x00\x12\x00\x00\x00\x00\x00\x01\xff\xff")
                if not tls.recv(4):
                    raise ConnectionResetError("closed")
    deadline = time.time() + 5
    while "TLS handshake failed" not in tls_broker.log() and time.time() < deadline:
        time.sleep(0.1)
    assert "TLS handshake failed" in tls_broker.log()


def served_certificate_subject(port, ca):
    context = ssl.create_default_context(cafile=str(ca.ca_cert))
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="localhost") as tls:
            return dict(x[0] for x in tls.getpeercert()["subject"])


def wait_for_subject(port, ca, organization, timeout=10):
    """The certificate served once it names `organization` (or when the time is up)."""
    deadline = time.time() + timeout
    while True:
        subject = served_certificate_subject(port, ca)
        if subject.get("organizationName") == organization or time.time() > deadline:
            return subject
        time.sleep(0.2)


def renew_certificate(broker, ca):
    new_cert, new_key = ca.issue("renewed", "/CN=localhost/O=Renewed", server=True)
    # Key first, then the certificate: a reload in between fails and keeps the old pair.
    shutil.copy(new_key, broker.server_cert.with_suffix(".key"))
    shutil.copy(new_cert, broker.server_cert)


def test_sighup_reloads_the_certificate(make_broker, ca):
    broker = start_tls_broker(make_broker, ca, reload_check_ms=0)  # no file polling
    renew_certificate(broker, ca)
    time.sleep(1.5)
    assert "organizationName" not in served_certificate_subject(broker.sasl_ssl_port, ca)
    broker.process.send_signal(signal.SIGHUP)
    assert wait_for_subject(broker.sasl_ssl_port, ca, "Renewed")["organizationName"] == "Renewed"
    assert "TLS certificate reloaded" in broker.log() and "SIGHUP" in broker.log()


def test_a_changed_certificate_is_served_to_new_connections(tls_broker, ca):
    assert served_certificate_subject(tls_broker.sasl_ssl_port, ca)["commonName"] == "localhost"
    renew_certificate(tls_broker, ca)
    subject = wait_for_subject(tls_broker.sasl_ssl_port, ca, "Renewed")
    assert subject.get("organizationName") == "Renewed"
    assert "TLS certificate reloaded" in tls_broker.log()


def test_broker_configs_name_new_certificate_files_and_a_pair_that_does_not_load_is_refused(
        make_broker, ca):
    """The dynamic broker configs ssl.certificate.location and ssl.key.location: checked
    before they are stored, served to the next connection, kept across a restart."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    broker = start_tls_broker(make_broker, ca, reload_check_ms=0)  # no file polling
    admin = AdminClient(sasl_ssl(broker, ca, "admin", "admin-secret", "PLAIN"))
    new_cert, new_key = ca.issue("renewed", "/CN=localhost/O=Renewed", server=True)

    def set_files(**files):
        resource = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
            ConfigEntry(f"ssl.{kind}.location", str(path),
                        incremental_operation=AlterConfigOpType.SET)
            for kind, path in files.items()])
        admin.incremental_alter_configs([resource])[resource].result(timeout=15)

    # The new certificate with the old key does not load: refused, nothing stored or served.
    with pytest.raises(KafkaException, match="do not load"):
        set_files(certificate=new_cert)
    assert "organizationName" not in served_certificate_subject(broker.sasl_ssl_port, ca)
    set_files(certificate=new_cert, key=new_key)
    assert wait_for_subject(broker.sasl_ssl_port, ca, "Renewed")["organizationName"] == "Renewed"
    del admin
    broker.stop()
    broker.start()
    assert served_certificate_subject(broker.sasl_ssl_port, ca)["organizationName"] == "Renewed"

    # Deleted, the config file's files hold again.
    admin = AdminClient(sasl_ssl(broker, ca, "admin", "admin-secret", "PLAIN"))
    resource = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
        ConfigEntry(f"ssl.{kind}.location", None, incremental_operation=AlterConfigOpType.DELETE)
        for kind in ("certificate", "key")])
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)
    deadline = time.time() + 10
    while served_certificate_subject(broker.sasl_ssl_port, ca).get("organizationName") and \
            time.time() < deadline:
        time.sleep(0.2)
    assert "organizationName" not in served_certificate_subject(broker.sasl_ssl_port, ca)


def test_a_mirror_pulls_from_a_sasl_ssl_source_with_scram(make_broker, ca, tmp_path):
    """Another Shoal as the source, reachable only with SCRAM-SHA-512 over TLS for the
    mirror; the destination mirrors a topic with identical offsets."""
    from test_mirror import FAST_RETRIES, caught_up, cli, identical, produce, wait_for
    cert, key = ca.issue("source", "/CN=localhost", server=True)
    source = make_broker("source")
    source.secure_port = free_port()
    source.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{source.port},'
        f'SASL_SSL://localhost:{source.secure_port}"\n'
        f'data_dir = "{source.data_dir}"\n'
        f'[ssl]\ncertificate_file = "{cert}"\nkey_file = "{key}"\n'
        '[sasl]\nenabled_mechanisms = ["SCRAM-SHA-512"]\n')
    source.start()
    admin = AdminClient({"bootstrap.servers": source.bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=3)])["orders"].result(15)
    upsert = UserScramCredentialUpsertion("mirror", ScramCredentialInfo(
        ScramMechanism.SCRAM_SHA_512, 4096), b"mirror-secret")
    admin.alter_user_scram_credentials([upsert])["mirror"].result(10)
    produce(source, "orders", 600)

    destination = make_broker("destination").start()
    secure = [f"localhost:{source.secure_port}"]
    settings = ["--set", "security.protocol=SASL_SSL", "--set", "sasl.mechanism=SCRAM-SHA-512",
                "--set", "sasl.username=mirror", "--set", f"ssl.truststore.location={ca.ca_cert}"]
    wrong = [*settings, "--set", "sasl.password=wrong"]
    cli(destination, "create", "bad", "--source", *secure, *wrong, *FAST_RETRIES)
    refused = cli(destination, "add", "bad", "orders", check=False)
    assert refused.returncode != 0 or "mirroring" not in refused.stdout
    cli(destination, "create", "dr", "--source", *secure, *settings,
        "--set", "sasl.password=mirror-secret", *FAST_RETRIES)
    assert "orders: mirroring" in cli(destination, "add", "dr", "orders").stdout
    produce(source, "orders", 300, start=600)
    wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")
    assert identical(source, destination, "orders", 3)
    assert "SASL authentication failed" in destination.log()


def shoal_cli(broker_port, *args, stdin=None):
    from conftest import SHOAL_BIN
    done = subprocess.run([SHOAL_BIN, args[0], "--bootstrap", f"127.0.0.1:{broker_port}",
                           *args[1:]], input=stdin, capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout.split(), done.stderr


def test_the_admin_cli_connects_with_sasl_ssl_scram_and_client_certificates(
        tls_broker, ca, tmp_path):
    settings = tmp_path / "admin.properties"
    settings.write_text("# as Kafka's --command-config takes them\n"
                        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                        f"sasl.username=admin\nsasl.password=admin-secret\n"
                        f"ssl.ca.location={ca.ca_cert}\n")
    port = tls_broker.sasl_ssl_port
    code, _, err = shoal_cli(port, "topic", "--command-config", str(settings), "create", "cli-sec")
    assert code == 0, err
    code, _, err = shoal_cli(port, "produce", "--command-config", str(settings), "cli-sec",
                             stdin="one\ntwo\n")
    assert code == 0, err
    # The mirror, cluster and transactions commands connect the same way.
    for command in (["mirror", "list"], ["transactions", "list"]):
        code, _, err = shoal_cli(port, command[0], "--command-config", str(settings), *command[1:])
        assert code == 0, (command, err)
    code, out, err = shoal_cli(port, "cluster", "--command-config", str(settings),
                               "--format", "json", "status")
    assert code == 0, err
    assert len(json.loads("".join(out))["brokers"]) == 1, out

    give_alice_a_scram_password(tls_broker, ca)
    allow(tls_broker, ca, "User:alice", "cli-sec")

    def as_alice(password):
        return ["-X", "security.protocol=SASL_SSL", "-X", "sasl.mechanism=SCRAM-SHA-512",
                "-X", "sasl.username=alice", "-X", f"sasl.password={password}",
                "-X", f"ssl.ca.location={ca.ca_cert}"]

    assert shoal_cli(port, "consume", *as_alice("alice-scram"), "cli-sec")[:2] == \
        (0, ["one", "two"])
    code, _, err = shoal_cli(port, "consume", *as_alice("wrong"), "cli-sec")
    assert code == 1 and "SaslAuthenticationFailed" in err, err

    cert, key = ca.issue("writer", "/O=Shoal Test/OU=ingest/CN=writer")
    allow(tls_broker, ca, f"User:{WRITER_DN}", "cli-sec")
    with_certificate = ["-X", "security.protocol=SSL", "-X", f"ssl.ca.location={ca.ca_cert}",
                        "-X", f"ssl.certificate.location={cert}", "-X", f"ssl.key.location={key}"]
    assert shoal_cli(tls_broker.ssl_port, "consume", *with_certificate, "cli-sec")[:2] == \
        (0, ["one", "two"])
    # Without the CA the broker's certificate is not trusted.
    code, _, err = shoal_cli(tls_broker.ssl_port, "consume", "-X", "security.protocol=SSL",
                             "cli-sec")
    assert code == 2 and "TLS" in err, err
