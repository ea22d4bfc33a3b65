"""The schema registry secured as the broker is: HTTPS with the broker's certificate, HTTP
Basic authentication against the broker's SASL users (PLAIN users from the config, a SCRAM
user created with AlterUserScramCredentials), and the broker's ACLs on subjects (their
topics) and on global settings (the cluster), driven by confluent-kafka's
SchemaRegistryClient."""

import http.client
import json
import os
import ssl
import subprocess
import urllib.error
import urllib.request

import pytest
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType, ScramCredentialInfo,
                                   ScramMechanism, UserScramCredentialUpsertion)
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from conftest import SHOAL_BIN, free_port
from tls_certs import CertificateAuthority

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}
SCHEMA = Schema(json.dumps({"type": "record", "name": "Order",
                            "fields": [{"name": "id", "type": "long"}]}), "AVRO")


@pytest.fixture
def secured(make_broker, tmp_path):
    ca = CertificateAuthority(tmp_path / "ca")
    cert, key = ca.issue("server", "/CN=localhost", server=True)
    sasl_port, registry_port = free_port(), free_port()
    users = "\n".join(f'{name} = "{password}"' for name, password in USERS.items())
    broker = make_broker("secured-registry")
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        f'data_dir = "{broker.data_dir}"\n'
        "[ssl]\n"
        f'certificate_file = "{cert}"\n'
        f'key_file = "{key}"\n'
        "[sasl]\n"
        'enabled_mechanisms = ["PLAIN", "SCRAM-SHA-256"]\n'
        "[sasl.plain_users]\n"
        f"{users}\n"
        "[authorizer]\n"
        "enabled = true\n"
        'super_users = ["User:admin"]\n'
        "[schema_registry]\n"
        f'listen = "127.0.0.1:{registry_port}"\n'
        "tls = true\n"
        'authentication = "basic"\n'
    )
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    broker.registry_url = f"https://127.0.0.1:{registry_port}"
    broker.ca_cert = str(ca.ca_cert)
    admin = AdminClient({"bootstrap.servers": broker.sasl_bootstrap,
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": "admin", "sasl.password": USERS["admin"]})
    # carol is a SCRAM user, stored in the coordinator rather than the config.
    upsert = UserScramCredentialUpsertion(
        "carol", ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096), b"carol-secret")
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result(10)
    bindings = [
        AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:alice", "*",
                   operation, AclPermissionType.ALLOW)
        for operation in (AclOperation.READ, AclOperation.WRITE)
    ] + [AclBinding(ResourceType.TOPIC, "orders", ResourcePatternType.LITERAL, "User:carol",
                    "*", AclOperation.READ, AclPermissionType.ALLOW)]
    for future in admin.create_acls(bindings).values():
        future.result(10)
    return broker


def registry(broker, user, password=None):
    config = {"url": broker.registry_url, "ssl.ca.location": broker.ca_cert}
    if user is not None:
        secret = password if password is not None else USERS.get(user, f"{user}-secret")
        config["basic.auth.user.info"] = f"{user}:{secret}"
    return SchemaRegistryClient(config)


def status_of(call):
    with pytest.raises(SchemaRegistryError) as raised:
        call()
    return raised.value.http_status_code


def test_credentials_are_checked_against_the_brokers_users(secured):
    assert status_of(lambda: registry(secured, None).get_subjects()) == 401
    assert status_of(lambda: registry(secured, "alice", "wrong").get_subjects()) == 401
    assert status_of(lambda: registry(secured, "nobody").get_subjects()) == 401
    # A PLAIN user from the config, and a SCRAM user from the coordinator (twice: the
    # second is answered from the checked-password cache).
    assert registry(secured, "alice").get_subjects() == []
    carol = registry(secured, "carol")
    assert carol.get_subjects() == [] and carol.get_subjects() == []
    assert status_of(lambda: registry(secured, "carol", "wrong").get_subjects()) == 401


def test_plain_http_does_not_reach_a_tls_registry(secured):
    url = secured.registry_url.replace("https://", "http://") + "/subjects"
    # The TLS server answers a plain request with a TLS alert, never with HTTP.
    with pytest.raises((urllib.error.URLError, http.client.HTTPException, OSError)):
        urllib.request.urlopen(url, timeout=5).read()
    # The same request over TLS, trusting the test CA, is answered (401 without credentials).
    context = ssl.create_default_context(cafile=secured.ca_cert)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(secured.registry_url + "/subjects", timeout=5, context=context)
    assert refused.value.code == 401


def test_acls_decide_who_may_register_read_and_configure(secured):
    alice, bob, carol, admin = (registry(secured, name)
                                for name in ("alice", "bob", "carol", "admin"))
    schema_id = alice.register_schema("orders-value", SCHEMA)
    # bob has no ACL on the topic: neither register, read, nor see it listed.
    assert status_of(lambda: bob.register_schema("orders-value", SCHEMA)) == 403
    assert status_of(lambda: bob.get_latest_version("orders-value")) == 403
    assert status_of(lambda: bob.get_schema(schema_id)) == 403
    assert bob.get_subjects() == []
    # carol may READ the topic: she reads the subject and the schema by id, but may not
    # register or delete.
    assert carol.get_latest_version("orders-value").schema_id == schema_id
    assert json.loads(carol.get_schema(schema_id).schema_str) == json.loads(SCHEMA.schema_str)
    assert carol.get_subjects() == ["orders-value"]
    assert status_of(lambda: carol.register_schema("orders-value", SCHEMA)) == 403
    assert status_of(lambda: carol.delete_subject("orders-value")) == 403
    # Global settings are the cluster's: only the super user here.
    assert status_of(lambda: alice.set_compatibility(level="NONE")) == 403
    admin.set_compatibility(level="FULL")
    assert admin.get_compatibility() == "FULL"


def test_the_cli_speaks_https_with_basic_credentials(secured):
    registry(secured, "alice").register_schema("orders-value", SCHEMA)

    def listed(user_info):
        env = {k: v for k, v in os.environ.items() if k != "SHOAL_REGISTRY_USER_INFO"}
        if user_info:
            env["SHOAL_REGISTRY_USER_INFO"] = user_info
        return subprocess.run([SHOAL_BIN, "schema", "--registry", secured.registry_url,
                               "--registry-ca", secured.ca_cert, "--format", "json", "list"],
                              capture_output=True, text=True, timeout=30, env=env)

    done = listed("carol:carol-secret")
    assert done.returncode == 0, done.stderr
    assert [s["subject"] for s in json.loads(done.stdout)] == ["orders-value"]
    refused = listed(None)
    assert refused.returncode == 1 and "401" in refused.stderr
