"""Consumer-protocol groups in the coordinator's log (KIP-848): members keep their partitions
across kill -9, admin clients describe groups and their configs, and a group's session timeout
is a group config. Also run on PostgreSQL and as one-broker clusters (scripts/test.sh)."""

import time

from confluent_kafka import Consumer, ConsumerGroupType, KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource,
                                   ResourceType)

from test_consumer_groups import CONFIG, assignment_changes, balanced, owned_sets
from test_groups import Member, all_reads, create_topic, produce, wait_for


def test_members_keep_their_partitions_when_the_broker_is_killed_and_restarted(make_broker):
    """Group epochs, targets and members are in the coordinator's log: after kill -9 the
    restarted broker continues the group, so no member loses or gives up a partition."""
    broker = make_broker(extra_config=CONFIG).start()
    topic, group, partitions = "stock", "pickers", 6
    create_topic(broker.bootstrap, topic, partitions)
    members = [Member(broker.bootstrap, group, topic, strategy="consumer") for _ in range(3)]
    try:
        wait_for(lambda: balanced(members, partitions), 60, "three members with two each")
        before = owned_sets(members)
        time.sleep(2)  # settled: every member heartbeated at the group's epoch
        broker.kill()
        restarted_at = time.time()
        broker.start()
        produce(broker.bootstrap, topic, 60, partitions)
        wait_for(lambda: len(set(all_reads(members))) >= 60, 60, "the records after the restart")
        time.sleep(3)  # several heartbeats with the restarted broker
        assert owned_sets(members) == before
        changes = [assignment_changes(m, restarted_at) for m in members]
        assert changes == [[], [], []], f"rebalanced after the restart: {changes}"
        # The group is the same one: described with all three members at one epoch.
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        described = admin.describe_consumer_groups([group]).get(group).result(timeout=10)
        assert len(described.members) == 3
        assert {tp.partition for m in described.members
                for tp in m.assignment.topic_partitions} == set(range(partitions))
    finally:
        for m in members:
            if m.process.poll() is None:
                m.kill()


def test_admin_clients_describe_a_consumer_group_and_delete_it_only_when_empty(make_broker):
    broker = make_broker(extra_config=CONFIG).start()
    create_topic(broker.bootstrap, "rates", 3)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "quotes",
                         "group.protocol": "consumer", "client.id": "quoter",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["rates"])
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def described():
        return admin.describe_consumer_groups(["quotes"]).get("quotes").result(timeout=10)

    produce(broker.bootstrap, "rates", 3, 3)
    read = []

    def poll_all():
        m = consumer.poll(0.2)
        if m is not None and not m.error():
            read.append(m)
            consumer.commit(message=m, asynchronous=False)
        return len(read) == 3 and len(consumer.assignment()) == 3

    try:
        wait_for(poll_all, 30, "the member reading all three partitions")
        group = described()
        assert group.type == ConsumerGroupType.CONSUMER
        assert str(group.state).endswith("STABLE"), group.state
        [member] = group.members
        assert member.client_id == "quoter"
        assert {tp.topic for tp in member.assignment.topic_partitions} == {"rates"}
        assert len(member.assignment.topic_partitions) == 3
        refused = admin.delete_consumer_groups(["quotes"])["quotes"]
        try:
            refused.result(timeout=10)
            raise AssertionError("a group with a member was deleted")
        except Exception as e:  # noqa: BLE001 - the client's KafkaException
            assert "NON_EMPTY_GROUP" in str(e), e
    finally:
        consumer.close()
    wait_for(lambda: "EMPTY" in str(described().state) or "DEAD" in str(described().state), 30,
             "the group without members")
    admin.delete_consumer_groups(["quotes"])["quotes"].result(timeout=10)


def test_a_groups_session_timeout_is_a_group_config_that_takes_effect_and_survives_a_kill_9(
        make_broker):
    """The broker's default session is 45 s; the group's own 6 s removes a killed member in
    seconds. The config is described as the group's, survives kill -9, and bad values are
    refused."""
    broker = make_broker(extra_config="[groups]\nconsumer_heartbeat_interval_ms = 500\n").start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})

    def alter(name, value):
        op = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
        resource = ConfigResource(ResourceType.GROUP, "movers", incremental_configs=[
            ConfigEntry(name, value, incremental_operation=op)])
        return admin.incremental_alter_configs([resource])[resource].result(10)

    def described(name):
        resource = ConfigResource(ResourceType.GROUP, "movers")
        entry = admin.describe_configs([resource])[resource].result(10)[name]
        return entry.value, entry.source

    session = "consumer.session.timeout.ms"
    assert described(session) == ("45000", 5)  # DEFAULT_CONFIG
    alter(session, "6000")
    for refused in ("1000", "soon"):
        try:
            alter(session, refused)
            raise AssertionError(f"{refused} was accepted")
        except KafkaException as e:
            assert "INVALID_CONFIG" in str(e), e
    broker.kill()
    broker.start()
    assert described(session) == ("6000", 8)  # DYNAMIC_GROUP_CONFIG, after kill -9
    topic, partitions = "boxes", 4
    create_topic(broker.bootstrap, topic, partitions)
    members = [Member(broker.bootstrap, "movers", topic, strategy="consumer") for _ in range(2)]
    try:
        wait_for(lambda: balanced(members, partitions), 60, "two members with two each")
        members[1].kill()
        killed_at = time.time()
        wait_for(lambda: balanced(members[:1], partitions), 20, "the survivor owning all")
        print(f"the killed member's partitions moved {time.time() - killed_at:.1f}s later")
    finally:
        for m in members:
            if m.process.poll() is None:
                m.kill()
    alter(session, None)
    assert described(session) == ("45000", 5)


def test_a_migrating_group_with_classic_and_consumer_members_survives_a_kill_9(make_broker):
    """A classic group upgraded by a consumer-protocol member is stored with its classic
    members: after kill -9 the restarted broker continues it, the classic members' heartbeats
    and commits are accepted at their generation, and no member's partitions change."""
    broker = make_broker(extra_config=CONFIG).start()
    topic, group, partitions = "tickets", "desks", 6
    create_topic(broker.bootstrap, topic, partitions)
    members = [Member(broker.bootstrap, group, topic, strategy="cooperative-sticky")
               for _ in range(2)]
    try:
        wait_for(lambda: balanced(members, partitions), 60, "two classic members")
        members.append(Member(broker.bootstrap, group, topic, strategy="consumer"))
        wait_for(lambda: balanced(members, partitions), 60, "two classic and one consumer member")
        before = owned_sets(members)
        time.sleep(3)  # settled: every member heartbeated at the group's epoch
        broker.kill()
        restarted_at = time.time()
        broker.start()
        produce(broker.bootstrap, topic, 60, partitions)
        wait_for(lambda: len(set(all_reads(members))) >= 60, 60, "the records after the restart")
        time.sleep(3)
        assert owned_sets(members) == before
        changes = [assignment_changes(m, restarted_at) for m in members]
        assert changes == [[], [], []], f"rebalanced after the restart: {changes}"
        failed = [line for m in members for line in m.lines if line.startswith("commit-failed")]
        assert not failed, failed
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        described = admin.describe_consumer_groups([group]).get(group).result(timeout=10)
        assert described.type == ConsumerGroupType.CONSUMER
        assert len(described.members) == 3
    finally:
        for m in members:
            if m.process.poll() is None:
                m.kill()
