"""KIP-368 re-authentication against the real binary, with `connections_max_reauth_ms`: a
session answers its lifetime, logs in again on its connection (as the same principal only)
while it lives, and is closed at its next request once it ended; librdkafka re-authenticates
a SCRAM producer by itself and loses nothing. The broker counts both."""

import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import (AdminClient, ScramCredentialInfo, ScramMechanism,
                                   UserScramCredentialUpsertion)

from conftest import free_port, metric_value, scrape_metrics
from kafka_wire import Connection, metadata_v0, sasl_login

REAUTH_MS = 3000
SASL_AUTHENTICATION_FAILED = 58
ILLEGAL_SASL_STATE = 34


@pytest.fixture
def reauth_broker(make_broker):
    sasl_port, metrics_port = free_port(), free_port()
    broker = make_broker("reauth")
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        f'data_dir = "{broker.data_dir}"\n'
        f'metrics_listen = "127.0.0.1:{metrics_port}"\n'
        "[sasl]\n"
        'enabled_mechanisms = ["PLAIN", "SCRAM-SHA-512"]\n'
        f"connections_max_reauth_ms = {REAUTH_MS}\n"
        "[sasl.plain_users]\n"
        'alice = "alice-secret"\n'
        'bob = "bob-secret"\n'
    )
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    broker.metrics_port = metrics_port
    return broker


def counter(broker, name):
    return metric_value(scrape_metrics(broker.metrics_port), name) or 0


def plain(user):
    return b"\0" + user.encode() + b"\0" + f"{user}-secret".encode()


def test_a_session_lives_its_lifetime_and_logs_in_again_as_itself(reauth_broker):
    conn = Connection(reauth_broker.sasl_bootstrap)
    assert sasl_login(conn, "PLAIN", plain("alice"))[:2] == (0, 0)
    assert metadata_v0(conn, 3)
    # Logging in again on the connection: a new lifetime, the session goes on.
    handshake, error, _, lifetime = sasl_login(conn, "PLAIN", plain("alice"), correlation_id=4)
    assert (handshake, error) == (0, 0) and 0 < lifetime <= REAUTH_MS
    assert metadata_v0(conn, 6)
    assert counter(reauth_broker, "shoal_sasl_reauthentications_total") >= 1
    # Another mechanism is refused at the handshake; another principal fails the login, and
    # the connection closes.
    assert sasl_login(conn, "SCRAM-SHA-512", b"", correlation_id=7)[0] == ILLEGAL_SASL_STATE
    assert sasl_login(conn, "PLAIN", plain("bob"), correlation_id=9)[1] == \
        SASL_AUTHENTICATION_FAILED
    assert metadata_v0(conn, 11) is None
    conn.close()


def test_a_session_that_ends_without_logging_in_again_is_closed(reauth_broker):
    conn = Connection(reauth_broker.sasl_bootstrap)
    _, error, _, lifetime = sasl_login(conn, "PLAIN", plain("alice"))
    assert error == 0 and 0 < lifetime <= REAUTH_MS
    assert metadata_v0(conn, 3)
    time.sleep(lifetime / 1000 + 0.5)
    assert metadata_v0(conn, 4) is None, "closed at the first request after the session ended"
    conn.close()
    assert counter(reauth_broker, "shoal_sasl_sessions_expired_total") >= 1
    assert "SASL session ended without re-authentication" in reauth_broker.log()


def test_librdkafka_re_authenticates_a_scram_producer_and_loses_nothing(reauth_broker):
    admin = AdminClient({"bootstrap.servers": reauth_broker.bootstrap})
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096), b"carol-secret")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(10)
    before = counter(reauth_broker, "shoal_sasl_reauthentications_total")
    errors, delivered = [], []
    producer = Producer({"bootstrap.servers": reauth_broker.sasl_bootstrap,
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                         "sasl.username": "carol", "sasl.password": "carol-secret",
                         "acks": "all", "error_cb": errors.append})
    deadline = time.time() + 4 * REAUTH_MS / 1000
    sent = 0
    while time.time() < deadline:
        producer.produce("reauthed", value=str(sent).encode(),
                         on_delivery=lambda e, m: delivered.append(e))
        sent += 1
        producer.poll(0.02)
    assert producer.flush(30) == 0
    assert len(delivered) == sent and all(e is None for e in delivered), delivered[:3]
    assert not errors, errors
    assert counter(reauth_broker, "shoal_sasl_reauthentications_total") >= before + 2
    assert counter(reauth_broker, "shoal_sasl_sessions_expired_total") == 0
