"""Delegation tokens (KIP-48) against the real binary, through `shoal token` and the CLI's own
SASL client: a user that logged in by SASL makes a token; a client logs in with it by SCRAM
(`tokenauth="true"`) and acts as its owner, but may not use the token APIs; the token outlives
kill -9; once its owner expires it, logins with it are refused. (librdkafka and kafka-python
cannot log in with tokens; the Java client does, in tests/java.)"""

import json
import subprocess

import pytest

from conftest import SHOAL_BIN, free_port

SECRET = "integration-token-secret"


@pytest.fixture
def token_broker(make_broker):
    broker = make_broker("tokens")
    sasl_port = free_port()
    config = broker.config_path.read_text()
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        + config
        + "\n[sasl]\n"
        'enabled_mechanisms = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]\n'
        "[sasl.plain_users]\n"
        'alice = "alice-secret"\n'
        "[delegation_token]\n"
        f'secret_key = "{SECRET}"\n'
    )
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    return broker


def properties(path, mechanism, user, password, token=False):
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule" if mechanism == "PLAIN"
              else "org.apache.kafka.common.security.scram.ScramLoginModule")
    extension = ' tokenauth="true"' if token else ""
    path.write_text("security.protocol=SASL_PLAINTEXT\n"
                    f"sasl.mechanism={mechanism}\n"
                    f'sasl.jaas.config={module} required username="{user}" '
                    f'password="{password}"{extension};\n')
    return path


def shoal(broker, command_config, *args):
    """`shoal <command> ...` on the SASL listener: (exit status, `shoal token`'s JSON output,
    stderr)."""
    done = subprocess.run([SHOAL_BIN, args[0], "--bootstrap", broker.sasl_bootstrap,
                           "--format", "json", "--command-config", str(command_config),
                           *args[1:]], capture_output=True, text=True, timeout=60)
    output = json.loads(done.stdout) if args[0] == "token" and done.returncode == 0 else None
    return done.returncode, output, done.stderr


def test_a_token_logs_in_as_its_owner_until_it_is_expired(token_broker, tmp_path):
    alice = properties(tmp_path / "alice.properties", "PLAIN", "alice", "alice-secret")
    status, made, err = shoal(token_broker, alice, "token", "create", "--renewer", "User:bob")
    assert status == 0, err
    [token] = made
    assert token["owner"] == "User:alice" and token["renewers"] == ["User:bob"]
    assert token["expiry_timestamp_ms"] <= token["max_timestamp_ms"]

    with_token = properties(tmp_path / "token.properties", "SCRAM-SHA-512", token["token_id"],
                            token["hmac"], token=True)
    assert shoal(token_broker, with_token, "topic", "list")[0] == 0
    # Acting as alice, but a session that logged in with a token may not ask for tokens.
    status, _, err = shoal(token_broker, with_token, "token", "list")
    assert status != 0 and "DelegationTokenRequestNotAllowed" in err, err
    # The same id with another password, or without the extension, is refused.
    wrong = properties(tmp_path / "wrong.properties", "SCRAM-SHA-256", token["token_id"],
                       "bm90IHRoZSBobWFj", token=True)
    assert shoal(token_broker, wrong, "topic", "list")[0] != 0
    plain_scram = properties(tmp_path / "plain-scram.properties", "SCRAM-SHA-256",
                             token["token_id"], token["hmac"])
    assert shoal(token_broker, plain_scram, "topic", "list")[0] != 0

    # A coordinator record: it outlives kill -9.
    token_broker.kill()
    token_broker.start()
    assert shoal(token_broker, with_token, "topic", "list")[0] == 0
    status, listed, err = shoal(token_broker, alice, "token", "list", "--owner", "User:alice")
    assert status == 0, err
    assert [t["hmac"] for t in listed] == [token["hmac"]]

    status, expired, err = shoal(token_broker, alice, "token", "expire", "--hmac", token["hmac"])
    assert status == 0, err
    assert expired["expiry_timestamp_ms"] < token["expiry_timestamp_ms"]
    assert shoal(token_broker, with_token, "topic", "list")[0] != 0
    assert shoal(token_broker, alice, "token", "list")[1] == []
