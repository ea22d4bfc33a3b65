"""ACLs with Kafka's semantics against the real binary: Create/Describe/DeleteAcls from
confluent-kafka's AdminClient, cluster operations refused to principals without them, the
internal Diskless APIs closed to all but ClusterAction, ACLs surviving kill -9."""

import socket
import struct
import uuid

import kafka.admin
import kafka.errors
import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, ResourcePatternType,
                                   ResourceType)

from conftest import free_port

USERS = {"admin": "admin-secret", "alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture
def authorized(make_broker):
    """Authorizer on; `admin` is a super user; clients log in with SASL/PLAIN. The PLAINTEXT
    listener (the readiness probe's) is ANONYMOUS, which no ACL names."""
    sasl_port = free_port()
    users = "\n".join(f'{name} = "{password}"' for name, password in USERS.items())
    broker = make_broker("authorized")
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        f'data_dir = "{broker.data_dir}"\n'
        "[authorizer]\n"
        "enabled = true\n"
        'super_users = ["User:admin"]\n'
        "[sasl.plain_users]\n"
        f"{users}\n"
    )
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    return broker


def client(broker, user):
    return {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN", "sasl.username": user, "sasl.password": USERS[user]}


def acl(name, principal, operation, permission=AclPermissionType.ALLOW,
        pattern=ResourcePatternType.LITERAL, resource=ResourceType.TOPIC):
    return AclBinding(resource, name, pattern, principal, "*", operation, permission)


def create_acls(broker, bindings, user="admin"):
    admin = AdminClient(client(broker, user))
    for future in admin.create_acls(bindings).values():
        future.result(10)


def describe_all(broker, user="admin"):
    admin = AdminClient(client(broker, user))
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    return admin.describe_acls(everything).result(10)


def test_acls_are_created_described_deleted_and_survive_a_kill_9(authorized):
    bindings = [acl("orders", "User:alice", AclOperation.READ),
                acl("logs-", "User:bob", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED)]
    create_acls(authorized, bindings)
    assert sorted(map(str, describe_all(authorized))) == sorted(map(str, bindings))

    authorized.kill()
    authorized.start()
    assert sorted(map(str, describe_all(authorized))) == sorted(map(str, bindings))

    admin = AdminClient(client(authorized, "admin"))
    only_bob = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, "User:bob",
                                None, AclOperation.ANY, AclPermissionType.ANY)
    deleted = admin.delete_acls([only_bob])[only_bob].result(10)
    assert [str(b) for b in deleted] == [str(bindings[1])]
    assert [str(b) for b in describe_all(authorized)] == [str(bindings[0])]


def test_a_principal_without_cluster_acls_cannot_change_or_read_acls(authorized):
    with pytest.raises(KafkaException) as refused:
        create_acls(authorized, [acl("x", "User:alice", AclOperation.ALL)], user="alice")
    assert "CLUSTER_AUTHORIZATION_FAILED" in str(refused.value)
    # confluent-kafka 2.16 returns an empty list for a refused DescribeAcls; kafka-python
    # raises the error code the broker sent.
    with pytest.raises(kafka.errors.ClusterAuthorizationFailedError):
        kafka_python_admin(authorized, "alice").describe_acls(everything_kafka_python())
    create_acls(authorized, [acl("kafka-cluster", "User:alice", AclOperation.ALTER,
                                resource=ResourceType.BROKER)])
    create_acls(authorized, [acl("y", "User:bob", AclOperation.READ)], user="alice")


def kafka_python_admin(broker, user):
    return kafka.admin.KafkaAdminClient(
        bootstrap_servers=broker.sasl_bootstrap, security_protocol="SASL_PLAINTEXT",
        sasl_mechanism="PLAIN", sasl_plain_username=user, sasl_plain_password=USERS[user])


def everything_kafka_python():
    return kafka.admin.ACLFilter(
        principal=None, host=None, operation=kafka.admin.ACLOperation.ANY,
        permission_type=kafka.admin.ACLPermissionType.ANY,
        resource_pattern=kafka.admin.ResourcePatternFilter(
            kafka.admin.ResourceType.ANY, None, kafka.admin.ACLResourcePatternType.ANY))


def diskless_delete_topics(port, topic_id):
    """DisklessDeleteTopics (94) v0 from an unauthenticated PLAINTEXT client."""
    topic = topic_id.bytes + b"\x00"
    body = b"\x02" + topic + struct.pack(">i", 30000) + b"\x00"
    header = struct.pack(">hhi", 94, 0, 1) + struct.pack(">h", -1) + b"\x00"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        return s.recv(4)


def test_internal_diskless_apis_are_closed_to_clients_without_cluster_action(authorized):
    assert diskless_delete_topics(authorized.port, uuid.uuid4()) == b"", "connection closed"
    assert "internal API refused" in authorized.log()
