"""ACLs with Kafka's semantics against the real binary: Create/Describe/DeleteAcls from
confluent-kafka's AdminClient, cluster operations refused to principals without them, the
internal Diskless APIs closed to all but ClusterAction, ACLs surviving kill -9."""

import socket
import struct
import time
import uuid

import kafka
import kafka.admin
import kafka.errors
import pytest
from confluent_kafka import (OFFSET_END, Consumer, KafkaError, KafkaException, Producer,
                             TopicPartition)
from confluent_kafka.admin import (AclBinding, AclBindingFilter, AclOperation,
                                   AclPermissionType, AdminClient, AlterConfigOpType,
                                   ConfigEntry, ConfigResource, NewTopic, ResourcePatternType,
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
    alice_admin = kafka_python_admin(authorized, "alice")
    with pytest.raises(kafka.errors.ClusterAuthorizationFailedError):
        alice_admin.describe_acls(everything_kafka_python())
    alice_admin.close()
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
    """DisklessDeleteTopics (1094) v0 from an unauthenticated PLAINTEXT client."""
    topic = topic_id.bytes + b"\x00"
    body = b"\x02" + topic + struct.pack(">i", 30000) + b"\x00"
    header = struct.pack(">hhi", 1094, 0, 1) + struct.pack(">h", -1) + b"\x00"
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack(">i", len(header) + len(body)) + header + body)
        return s.recv(4)


def test_internal_diskless_apis_are_closed_to_clients_without_cluster_action(authorized):
    assert diskless_delete_topics(authorized.port, uuid.uuid4()) == b"", "connection closed"
    assert "internal API refused" in authorized.log()


def create_topic(broker, name, partitions=1):
    admin = AdminClient(client(broker, "admin"))
    for future in admin.create_topics([NewTopic(name, partitions)]).values():
        future.result(10)


def produce_error(broker, user, topic):
    """The error a single acks=all produce gets, or None."""
    errors = []
    producer = Producer({**client(broker, user), "message.timeout.ms": 5000,
                         "allow.auto.create.topics": False})
    producer.produce(topic, b"v", on_delivery=lambda err, _msg: errors.append(err))
    producer.flush(10)
    return errors[0]


def consume_error(broker, user, topic, group):
    consumer = Consumer({**client(broker, user), "group.id": group,
                         "auto.offset.reset": "earliest"})
    consumer.assign([TopicPartition(topic, 0, 0)])
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None:
                return msg.error()
        return None
    finally:
        consumer.close()


def test_a_principal_without_acls_sees_nothing_and_is_refused_everything(authorized):
    create_topic(authorized, "secret")
    Producer(client(authorized, "admin")).produce("secret", b"x")
    alice = AdminClient(client(authorized, "alice"))
    assert "secret" not in alice.list_topics(timeout=10).topics

    assert produce_error(authorized, "alice", "secret").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert consume_error(authorized, "alice", "secret", "g").code() == \
        KafkaError.GROUP_AUTHORIZATION_FAILED

    # DESCRIBE only, so clients find the partition and the broker sees each request itself.
    create_acls(authorized, [acl("secret", "User:alice", AclOperation.DESCRIBE)])
    alice = AdminClient(client(authorized, "alice"))  # no cached "not authorized" metadata
    refusals = {
        "create topic": alice.create_topics([NewTopic("mine", 1)])["mine"],
        "delete topic": alice.delete_topics(["secret"])["secret"],
        "alter configs": list(alice.incremental_alter_configs([ConfigResource(
            "topic", "secret", incremental_configs=[ConfigEntry(
                "retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])]).values())[0],
        "delete records": list(alice.delete_records(
            [TopicPartition("secret", 0, OFFSET_END)]).values())[0],
    }
    for action, future in refusals.items():
        with pytest.raises(KafkaException) as refused:
            future.result(10)
        assert "AUTHORIZATION_FAILED" in str(refused.value), (action, refused.value)

    with pytest.raises(kafka.errors.GroupAuthorizationFailedError):
        consumer = kafka.KafkaConsumer(
            "secret", group_id="g", bootstrap_servers=authorized.sasl_bootstrap,
            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
            sasl_plain_username="alice", sasl_plain_password=USERS["alice"],
            consumer_timeout_ms=5000)
        try:
            consumer.poll(5000)
            consumer.commit({kafka.TopicPartition("secret", 0): kafka.OffsetAndMetadata(0, "", -1)})
        finally:
            consumer.close()
    # With the group allowed, the fetch itself is refused.
    create_acls(authorized, [acl("g2", "User:alice", AclOperation.READ,
                                 resource=ResourceType.GROUP)])
    assert consume_error(authorized, "alice", "secret", "g2").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    # Nothing was changed by the refused requests.
    assert "secret" in AdminClient(client(authorized, "admin")).list_topics(timeout=10).topics


def test_prefixed_allows_and_a_deny_that_beats_them(authorized):
    for name in ("logs-app", "logs-audit", "metrics"):
        create_topic(authorized, name)
    create_acls(authorized, [
        acl("logs-", "User:bob", AclOperation.WRITE, pattern=ResourcePatternType.PREFIXED),
        acl("logs-", "User:bob", AclOperation.READ, pattern=ResourcePatternType.PREFIXED),
        acl("logs-audit", "User:bob", AclOperation.WRITE, permission=AclPermissionType.DENY),
        acl("bob-", "User:bob", AclOperation.READ, pattern=ResourcePatternType.PREFIXED,
            resource=ResourceType.GROUP),
    ])
    visible = AdminClient(client(authorized, "bob")).list_topics(timeout=10).topics
    assert {"logs-app", "logs-audit"} <= set(visible) and "metrics" not in visible
    assert produce_error(authorized, "bob", "logs-app") is None
    assert produce_error(authorized, "bob", "logs-audit").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert produce_error(authorized, "bob", "metrics").code() == \
        KafkaError.TOPIC_AUTHORIZATION_FAILED
    # The prefixed READ covers the topic and the group: bob consumes what he wrote.
    msg_error = consume_error(authorized, "bob", "logs-app", "bob-readers")
    assert msg_error is None or msg_error.code() == KafkaError._PARTITION_EOF


def test_the_anonymous_actions_of_the_issue_are_all_refused(authorized):
    """On the PLAINTEXT listener with the authorizer on, ANONYMOUS has no ACLs: the attacks
    that worked before this change (delete, truncate, retention, foreign groups) fail."""
    create_topic(authorized, "victim")
    producer = Producer(client(authorized, "admin"))
    for i in range(5):
        producer.produce("victim", str(i).encode())
    producer.flush(10)
    # DESCRIBE, so the client finds the partition and each attack reaches the broker.
    create_acls(authorized, [acl("victim", "User:ANONYMOUS", AclOperation.DESCRIBE)])
    anonymous = AdminClient({"bootstrap.servers": authorized.bootstrap})
    for future in (anonymous.delete_topics(["victim"])["victim"],
                   list(anonymous.delete_records(
                       [TopicPartition("victim", 0, OFFSET_END)]).values())[0],
                   list(anonymous.incremental_alter_configs([ConfigResource(
                       "topic", "victim", incremental_configs=[ConfigEntry(
                           "retention.ms", "1",
                           incremental_operation=AlterConfigOpType.SET)])]).values())[0],
                   anonymous.delete_consumer_groups(["victims"])["victims"]):
        with pytest.raises(KafkaException) as refused:
            future.result(10)
        assert "AUTHORIZATION_FAILED" in str(refused.value)
    low, high = Consumer({**client(authorized, "admin"), "group.id": "w"}).get_watermark_offsets(
        TopicPartition("victim", 0), timeout=10)
    assert (low, high) == (0, 5), "nothing was truncated"

    # Reading the topic without a group: the Fetch itself is refused.
    reader = kafka.KafkaConsumer(bootstrap_servers=authorized.bootstrap, group_id=None,
                                 enable_auto_commit=False)
    victim = kafka.TopicPartition("victim", 0)
    reader.assign([victim])
    reader.seek(victim, 0)
    with pytest.raises(kafka.errors.TopicAuthorizationFailedError):
        reader.poll(timeout_ms=5000)
    reader.close()

    # Committing into a group that is not ours: the group's own committed offset stays.
    owner = Consumer({**client(authorized, "admin"), "group.id": "victims"})
    owner.commit(offsets=[TopicPartition("victim", 0, 5)], asynchronous=False)
    # DESCRIBE lets FindCoordinator answer, so the OffsetCommit itself reaches the broker.
    create_acls(authorized, [acl("victims", "User:ANONYMOUS", AclOperation.DESCRIBE,
                                 resource=ResourceType.GROUP)])
    intruder = kafka.KafkaConsumer(bootstrap_servers=authorized.bootstrap, group_id="victims",
                                   enable_auto_commit=False)
    with pytest.raises(kafka.errors.GroupAuthorizationFailedError):
        intruder.commit({victim: kafka.OffsetAndMetadata(0, "", -1)})
    intruder.close()
    committed = owner.committed([TopicPartition("victim", 0)], timeout=10)
    assert committed[0].offset == 5
    owner.close()


def test_describe_reports_the_operations_each_principal_may_do(authorized):
    from confluent_kafka import TopicCollection
    create_topic(authorized, "ops")
    create_acls(authorized, [acl("ops", "User:alice", AclOperation.READ),
                             acl("readers", "User:alice", AclOperation.READ,
                                 resource=ResourceType.GROUP)])
    everything_on_a_topic = {AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
                             AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE,
                             AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS}

    def topic_operations(user):
        admin = AdminClient(client(authorized, user))
        described = admin.describe_topics(TopicCollection(["ops"]),
                                          include_authorized_operations=True)
        return set(described["ops"].result(10).authorized_operations)

    def cluster_operations(user):
        admin = AdminClient(client(authorized, user))
        described = admin.describe_cluster(include_authorized_operations=True).result(10)
        return set(described.authorized_operations or [])

    assert topic_operations("admin") == everything_on_a_topic
    # READ implies DESCRIBE, as in Kafka; nothing else is allowed.
    assert topic_operations("alice") == {AclOperation.READ, AclOperation.DESCRIBE}
    assert AclOperation.CLUSTER_ACTION in cluster_operations("admin")
    assert len(cluster_operations("admin")) == 7
    create_acls(authorized, [acl("kafka-cluster", "User:alice", AclOperation.DESCRIBE,
                                 resource=ResourceType.BROKER)])
    assert cluster_operations("alice") == {AclOperation.DESCRIBE}
    admin = AdminClient(client(authorized, "alice"))
    group = admin.describe_consumer_groups(["readers"], include_authorized_operations=True)
    assert set(group["readers"].result(10).authorized_operations) == {
        AclOperation.READ, AclOperation.DESCRIBE}


def test_a_consumer_protocol_member_needs_read_on_the_group_and_describe_on_its_topics(
        authorized):
    admin = AdminClient(client(authorized, "admin"))
    for topic in ("open", "hidden"):
        admin.create_topics([NewTopic(topic, num_partitions=1)])[topic].result(10)
    create_acls(authorized, [acl("open", "User:alice", AclOperation.READ),
                             acl("team", "User:alice", AclOperation.READ,
                                 resource=ResourceType.GROUP)])

    def first_event(topic, group):
        consumer = Consumer({**client(authorized, "alice"), "group.id": group,
                             "group.protocol": "consumer"})
        consumer.subscribe([topic])
        try:
            deadline = time.time() + 20
            while time.time() < deadline:
                msg = consumer.poll(0.5)
                if msg is not None and msg.error():
                    return msg.error().code()
                if consumer.assignment():
                    return "assigned"
            return "nothing"
        finally:
            consumer.close()

    assert first_event("open", "team") == "assigned"
    assert first_event("hidden", "team") == KafkaError.TOPIC_AUTHORIZATION_FAILED
    assert first_event("open", "other-team") == KafkaError.GROUP_AUTHORIZATION_FAILED
    # An expression matching both gets only the topic alice may describe.
    consumer = Consumer({**client(authorized, "alice"), "group.id": "team",
                         "group.protocol": "consumer"})
    consumer.subscribe(["^(open|hidden)$"])
    try:
        deadline = time.time() + 20
        while not consumer.assignment() and time.time() < deadline:
            consumer.poll(0.5)
        time.sleep(2)  # more heartbeats: nothing else comes
        consumer.poll(0.5)
        assert {tp.topic for tp in consumer.assignment()} == {"open"}
        # The broker's side (the client could not name a topic it may not see anyway).
        [member] = admin.describe_consumer_groups(["team"])["team"].result(10).members
        assert {tp.topic for tp in member.assignment.topic_partitions} == {"open"}
    finally:
        consumer.close()
