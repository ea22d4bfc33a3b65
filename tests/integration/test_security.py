"""Listeners and SASL against the real binary with real clients: PLAIN logins from
confluent-kafka, kafka-python and kcat, refused passwords and users, clients that never log
in, and Metadata advertising the listener a client came in on."""

import socket
import struct
import subprocess
import time

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                  UserScramCredentialDeletion, UserScramCredentialUpsertion)
from kafka import KafkaConsumer, KafkaProducer

from conftest import free_port

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture
def secured(make_broker):
    """A broker with a PLAINTEXT listener (the readiness probe's) and a SASL_PLAINTEXT one."""
    sasl_port = free_port()
    users = "\n".join(f'{name} = "{password}"' for name, password in USERS.items())
    broker = make_broker("secured", extra_config="")
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        f'advertised_listeners = "SASL_PLAINTEXT://localhost:{sasl_port}"\n'
        f'data_dir = "{broker.data_dir}"\n'
        "[sasl]\n"
        'enabled_mechanisms = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]\n'
        "authentication_timeout_ms = 1500\n"
        "failed_authentication_delay_ms = 50\n"
        "[sasl.plain_users]\n"
        f"{users}\n"
    )
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    broker.sasl_port = sasl_port
    return broker


def sasl_config(broker, user, password, mechanism="PLAIN"):
    return {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": mechanism, "sasl.username": user, "sasl.password": password}


def set_scram_user(bootstrap, user, password, mechanism=ScramMechanism.SCRAM_SHA_512,
                   iterations=4096):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    upsert = UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, iterations),
                                          password.encode())
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(10)


def produce_one(config, topic, value):
    producer = Producer({**config, "acks": "all", "message.timeout.ms": 10000})
    delivered = []
    producer.produce(topic, value=value, on_delivery=lambda err, msg: delivered.append(err))
    producer.flush(15)
    return delivered


def test_confluent_kafka_produces_and_consumes_after_a_plain_login(secured):
    producer = Producer({**sasl_config(secured, "alice", "alice-secret"), "acks": "all"})
    for i in range(5):
        producer.produce("secure-topic", value=f"m{i}".encode())
    assert producer.flush(15) == 0
    consumer = Consumer({**sasl_config(secured, "alice", "alice-secret"), "group.id": "g",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["secure-topic"])
    got = []
    deadline = time.time() + 30
    while len(got) < 5 and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m.value())
    consumer.close()
    assert sorted(got) == [f"m{i}".encode() for i in range(5)]


@pytest.mark.parametrize("user,password", [("alice", "guess-7f3a"), ("mallory", "alice-secret")])
def test_a_wrong_password_or_an_unknown_user_is_refused(secured, user, password):
    errors = []
    producer = Producer({**sasl_config(secured, user, password), "error_cb": errors.append})
    deadline = time.time() + 10
    while not errors and time.time() < deadline:
        producer.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=2)
    assert "authentication failed" in secured.log()
    assert password not in secured.log(), "no secret in the log"


def test_kafka_python_logs_in_with_plain(secured):
    common = dict(bootstrap_servers=secured.sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
                  sasl_mechanism="PLAIN", sasl_plain_username="bob",
                  sasl_plain_password="bob-secret")
    producer = KafkaProducer(acks="all", **common)
    producer.send("kp-secure", b"from kafka-python").get(timeout=15)
    producer.close()
    consumer = KafkaConsumer("kp-secure", auto_offset_reset="earliest",
                             consumer_timeout_ms=5000, **common)
    assert [m.value for m in consumer] == [b"from kafka-python"]
    consumer.close()


def test_kcat_logs_in_with_plain(secured):
    args = ["-b", secured.sasl_bootstrap, "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice",
            "-X", "sasl.password=alice-secret"]
    produced = subprocess.run(["kcat", *args, "-P", "-t", "kcat-secure"], input=b"hello\n",
                              capture_output=True, timeout=30)
    assert produced.returncode == 0, produced.stderr
    consumed = subprocess.run(["kcat", *args, "-C", "-t", "kcat-secure", "-e", "-q"],
                              capture_output=True, timeout=30)
    assert consumed.stdout == b"hello\n", consumed.stderr


def raw_request(api_key, version, body=b"", correlation_id=1):
    header = struct.pack(">hhih", api_key, version, correlation_id, -1)
    return struct.pack(">i", len(header) + len(body)) + header + body


def closed_within(sock, seconds):
    sock.settimeout(seconds)
    try:
        while sock.recv(4096):
            pass
        return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_a_request_before_logging_in_closes_the_connection(secured):
    with socket.create_connection(("127.0.0.1", secured.sasl_port)) as s:
        s.sendall(raw_request(3, 1, struct.pack(">i", -1)))  # Metadata v1, all topics
        assert closed_within(s, 5)
    assert "request before authentication" in secured.log()


def test_a_client_that_never_logs_in_is_closed_after_the_deadline(secured):
    with socket.create_connection(("127.0.0.1", secured.sasl_port)) as s:
        s.sendall(raw_request(18, 0))  # ApiVersions is served before a login
        s.settimeout(5)
        assert len(s.recv(4)) == 4
        started = time.time()
        assert closed_within(s, 10)
        assert time.time() - started < 5, "closed by the 1.5 s authentication deadline"


def test_metadata_advertises_the_listener_the_client_came_in_on(secured):
    plain = AdminClient({"bootstrap.servers": secured.bootstrap}).list_topics(timeout=10)
    assert [(b.host, b.port) for b in plain.brokers.values()] == [("127.0.0.1", secured.port)]
    sasl = AdminClient(sasl_config(secured, "alice", "alice-secret")).list_topics(timeout=10)
    assert [(b.host, b.port) for b in sasl.brokers.values()] == [("localhost", secured.sasl_port)]


def test_a_v0_handshake_takes_the_bare_token_that_follows_it(secured):
    """Old clients send SaslHandshake v0 and then the mechanism's token without a request
    header; success is an empty frame, a wrong password closes the connection."""
    def handshake_v0(s):
        mechanism = b"PLAIN"
        s.sendall(raw_request(17, 0, struct.pack(">h", len(mechanism)) + mechanism))
        size = struct.unpack(">i", s.recv(4))[0]
        body = s.recv(size)
        assert struct.unpack_from(">h", body, 4)[0] == 0, "handshake accepted"

    with socket.create_connection(("127.0.0.1", secured.sasl_port), timeout=5) as s:
        handshake_v0(s)
        token = b"\0alice\0alice-secret"
        s.sendall(struct.pack(">i", len(token)) + token)
        assert s.recv(4) == b"\0\0\0\0"
        s.sendall(raw_request(3, 1, struct.pack(">i", -1)))  # Metadata now served
        assert struct.unpack(">i", s.recv(4))[0] > 0
    with socket.create_connection(("127.0.0.1", secured.sasl_port), timeout=5) as s:
        handshake_v0(s)
        token = b"\0alice\0guess-7f3a"
        s.sendall(struct.pack(">i", len(token)) + token)
        assert closed_within(s, 5)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_users_set_by_an_admin_client_log_in_and_wrong_passwords_do_not(secured, mechanism):
    code = (ScramMechanism.SCRAM_SHA_256 if mechanism == "SCRAM-SHA-256"
            else ScramMechanism.SCRAM_SHA_512)
    set_scram_user(secured.bootstrap, "carol", "carol-secret", code, iterations=8192)
    ok = sasl_config(secured, "carol", "carol-secret", mechanism)
    assert produce_one(ok, "scram-topic", b"x") == [None]

    errors = []
    bad = {**sasl_config(secured, "carol", "guess-7f3a", mechanism), "error_cb": errors.append}
    producer = Producer(bad)
    deadline = time.time() + 10
    while not errors and time.time() < deadline:
        producer.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors
    assert "guess-7f3a" not in secured.log() and "carol-secret" not in secured.log()


def test_kafka_python_logs_in_with_scram_sha_512(secured):
    set_scram_user(secured.bootstrap, "dave", "dave-secret")
    producer = KafkaProducer(bootstrap_servers=secured.sasl_bootstrap,
                             security_protocol="SASL_PLAINTEXT", sasl_mechanism="SCRAM-SHA-512",
                             sasl_plain_username="dave", sasl_plain_password="dave-secret",
                             acks="all")
    producer.send("kp-scram", b"scram").get(timeout=15)
    producer.close()


def test_scram_credentials_are_described_deleted_and_survive_a_kill_9(secured):
    set_scram_user(secured.bootstrap, "erin", "erin-secret", iterations=4096)
    set_scram_user(secured.bootstrap, "erin", "erin-secret", ScramMechanism.SCRAM_SHA_256,
                   iterations=10000)
    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    described = admin.describe_user_scram_credentials(["erin"])["erin"].result(10)
    infos = sorted((i.mechanism, i.iterations) for i in described.scram_credential_infos)
    assert infos == [(ScramMechanism.SCRAM_SHA_256, 10000), (ScramMechanism.SCRAM_SHA_512, 4096)]

    secured.kill()
    secured.start()
    ok = sasl_config(secured, "erin", "erin-secret", "SCRAM-SHA-256")
    assert produce_one(ok, "after-restart", b"y") == [None], "the credential survived kill -9"

    admin = AdminClient({"bootstrap.servers": secured.bootstrap})
    deletion = UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)
    admin.alter_user_scram_credentials([deletion])["erin"].result(10)
    with pytest.raises(Exception):
        admin.alter_user_scram_credentials([deletion])["erin"].result(10)  # RESOURCE_NOT_FOUND
    too_few = UserScramCredentialUpsertion(
        "erin", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), b"p")
    with pytest.raises(Exception):
        admin.alter_user_scram_credentials([too_few])["erin"].result(10)
    remaining = admin.describe_user_scram_credentials(["erin"])["erin"].result(10)
    assert [i.mechanism for i in remaining.scram_credential_infos] == [ScramMechanism.SCRAM_SHA_512]


def test_tens_of_thousands_of_connections_to_one_listener_leave_the_broker_serving(make_broker):
    """33,000 connections to one shard, each with one request before logging in, on the SASL
    listener while the PLAINTEXT one stays idle. Each listener accepts in a task of its own:
    polled together, the idle listener's accept piled up a waker per wake-up until the count
    overflowed (at 32,767) and the shard panicked."""
    from kafka_wire import Connection, request
    sasl_port = free_port()
    broker = make_broker("one-shard")
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        f'data_dir = "{broker.data_dir}"\n'
        "[shards]\ncores = [0]\n[coordinator]\ncore = 0\n"
        '[sasl.plain_users]\nalice = "alice-secret"\n'
    )
    broker.start()
    for correlation_id in range(33_000):
        conn = Connection(f"127.0.0.1:{sasl_port}")
        conn.send(request(18, 0, correlation_id, b""))
        assert conn.recv_response() is not None, f"connection {correlation_id} answered"
        conn.close()
    assert "panicked" not in broker.log()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert admin.list_topics(timeout=10) is not None
