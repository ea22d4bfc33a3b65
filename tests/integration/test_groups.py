"""Consumer groups with real clients: rebalances with several members, a member killed or
leaving, committed offsets across a broker restart, static membership, and the admin APIs."""

import pathlib
import subprocess
import sys
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

GROUP_CONFIG = "[groups]\ninitial_rebalance_delay_ms = 1000\n"
SESSION_TIMEOUT_S = 6
CONSUMER_SCRIPT = str(pathlib.Path(__file__).with_name("group_consumer.py"))


class Member:
    """One group_consumer.py process and what it has reported so far."""

    def __init__(self, bootstrap, group, topic, instance_id="-", strategy="range"):
        self.process = subprocess.Popen(
            [sys.executable, CONSUMER_SCRIPT, bootstrap, group, topic, instance_id, strategy],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.assigned = None
        self.assignments = []
        self.reads = []
        self.commits = {}
        self.lines = []
        self.lock = threading.Lock()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self):
        for line in self.process.stdout:
            words = line.split()
            with self.lock:
                self.lines.append(line.rstrip())
                if not words:
                    continue
                if words[0] == "assigned":
                    parts = set() if words[1] == "-" else {int(p) for p in words[1].split(",")}
                    self.assigned = parts
                    self.assignments.append((time.time(), parts))
                elif words[0] == "read":
                    self.reads.append((int(words[1]), int(words[2])))
                elif words[0] == "committed":
                    self.commits[int(words[1])] = int(words[2])

    def snapshot(self):
        with self.lock:
            return set(self.assigned or ()), list(self.reads), dict(self.commits)

    def kill(self):
        self.process.kill()
        self.process.wait()

    def close(self):
        self.process.send_signal(2)  # SIGINT: the consumer closes and leaves the group
        self.process.wait(timeout=30)


def wait_for(condition, timeout, what):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return time.time()
        time.sleep(0.1)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def produce(bootstrap, topic, count, partitions, start=0):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, value=f"v{i}".encode(), partition=i % partitions)
    assert producer.flush(30) == 0


def create_topic(bootstrap, name, partitions):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, num_partitions=partitions)]).values():
        future.result(timeout=15)


def all_reads(members):
    reads = []
    for m in members:
        reads.extend(m.snapshot()[1])
    return reads


@pytest.mark.parametrize("strategy", ["range", "roundrobin", "cooperative-sticky"])
def test_three_members_split_six_partitions_and_survive_a_kill_and_a_leave(make_broker, strategy):
    broker = make_broker(extra_config=GROUP_CONFIG).start()
    topic, group, partitions = "events", "billing", 6
    create_topic(broker.bootstrap, topic, partitions)
    produce(broker.bootstrap, topic, 600, partitions)

    members = [Member(broker.bootstrap, group, topic, strategy=strategy) for _ in range(3)]
    try:
        def balanced(ms, share):
            owned = [m.snapshot()[0] for m in ms]
            return all(len(o) == share for o in owned) and set().union(*owned) == set(
                range(partitions))

        wait_for(lambda: balanced(members, 2), 60, "three members with two partitions each")
        wait_for(lambda: len(set(all_reads(members))) == 600, 60, "the first 600 records")

        # Killed: no LeaveGroup; the survivors take its partitions once its session expires.
        victim, survivors = members[0], members[1:]
        victim_commits = victim.snapshot()[2]
        killed_at = time.time()
        victim.kill()
        produce(broker.bootstrap, topic, 600, partitions, start=600)
        took_over_at = wait_for(lambda: balanced(survivors, 3), 60, "survivors with 3 each")
        takeover_s = took_over_at - killed_at
        print(f"kill -9 to full reassignment: {takeover_s:.1f}s (session {SESSION_TIMEOUT_S}s)")
        assert takeover_s < SESSION_TIMEOUT_S + 5, takeover_s
        wait_for(lambda: len(set(all_reads(members))) == 1200, 60, "all 1200 records")

        # Nothing lost; a record read twice must lie past the victim's last acknowledged
        # commit on its partition (at-least-once, never behind committed offsets).
        reads = all_reads(members)
        assert set(reads) == {(i % partitions, i // partitions) for i in range(1200)}
        seen = {}
        for r in reads:
            seen[r] = seen.get(r, 0) + 1
        for (p, offset), n in seen.items():
            if n > 1:
                assert offset >= victim_commits.get(p, 0), (p, offset, victim_commits)

        # A graceful leave rebalances at once, well within the session timeout.
        leaving, last = survivors
        left_at = time.time()
        leaving.close()
        wait_for(lambda: last.snapshot()[0] == set(range(partitions)), SESSION_TIMEOUT_S,
                 "the last member owning every partition")
        print(f"leave to full reassignment: {time.time() - left_at:.1f}s")
        def committed_to_end():
            # Asked of the broker: a member stopped by SIGINT right after a commit was
            # acknowledged never prints it, and nobody re-reads what it committed.
            reader = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
            try:
                committed = reader.committed(
                    [TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            finally:
                reader.close()
            return all(tp.offset == 200 for tp in committed)

        wait_for(committed_to_end, 30, "every partition committed to its end")
        last.close()
    finally:
        for m in members:
            if m.process.poll() is None:
                m.kill()

    # Committed offsets survive a broker restart.
    broker.stop()
    broker.start()
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group})
    committed = consumer.committed([TopicPartition(topic, p) for p in range(partitions)],
                                   timeout=15)
    consumer.close()
    assert [tp.offset for tp in committed] == [200] * partitions


def test_a_restarted_static_member_gets_its_partitions_back_without_a_rebalance(make_broker):
    broker = make_broker(extra_config=GROUP_CONFIG).start()
    topic, group = "static", "static-group"
    create_topic(broker.bootstrap, topic, 6)
    a = Member(broker.bootstrap, group, topic, instance_id="host-a")
    b = Member(broker.bootstrap, group, topic, instance_id="host-b")
    try:
        wait_for(lambda: len(a.snapshot()[0]) == 3 and len(b.snapshot()[0]) == 3, 60,
                 "two static members with three partitions each")
        owned_by_a = a.snapshot()[0]
        b_rebalances = len(b.assignments)
        a.kill()
        # Back before its session times out, under the same group.instance.id.
        a = Member(broker.bootstrap, group, topic, instance_id="host-a")
        wait_for(lambda: a.snapshot()[0] == owned_by_a, 30, "host-a owning its partitions again")
        time.sleep(SESSION_TIMEOUT_S + 1)
        assert len(b.assignments) == b_rebalances, "host-b saw no rebalance"
        assert a.snapshot()[0] == owned_by_a
    finally:
        for m in (a, b):
            if m.process.poll() is None:
                m.kill()


def test_kafka_python_members_share_partitions_and_admin_clients_see_the_group(broker):
    from kafka import KafkaAdminClient, KafkaConsumer
    from kafka import TopicPartition as KpTopicPartition
    from kafka.errors import CommitFailedError, RebalanceInProgressError
    from kafka.structs import OffsetAndMetadata

    topic, group = "kp-events", "kp-group"
    create_topic(broker.bootstrap, topic, 4)
    produce(broker.bootstrap, topic, 400, 4)
    stop = threading.Event()
    got = [set(), set()]
    assignments = [0, 0]

    def run(i):
        # The usual shape of an application: one thread polls and commits.
        c = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap, group_id=group,
                          enable_auto_commit=False, auto_offset_reset="earliest",
                          session_timeout_ms=6000, heartbeat_interval_ms=500)
        while not stop.is_set():
            for records in c.poll(timeout_ms=200).values():
                got[i].update((r.partition, r.offset) for r in records)
            try:
                c.commit()
            except (CommitFailedError, RebalanceInProgressError):
                pass  # a rebalance is under way: the next poll rejoins
            assignments[i] = len(c.assignment())
        done.wait()
        c.close()

    done = threading.Event()
    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    try:
        wait_for(lambda: len(got[0] | got[1]) == 400 and assignments == [2, 2], 60,
                 "400 records read by two members with two partitions each")
        time.sleep(1)  # a last commit after the last records
    finally:
        stop.set()

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    listed = {g["group_id"]: g for g in admin.list_groups()}
    assert listed[group]["protocol_type"] == "consumer"
    assert listed[group]["group_state"] == "Stable"
    described = admin.describe_groups([group])[group]
    assert described["group_state"] == "Stable" and len(described["members"]) == 2
    offsets = admin.list_group_offsets({group: None})[group]
    assert {tp.partition: meta.offset for tp, meta in offsets.items()} == {
        p: 100 for p in range(4)}
    # Members subscribe to the topic: its offsets cannot be deleted.
    refused = admin.delete_group_offsets(group, [KpTopicPartition(topic, 0)])
    assert "GroupSubscribedToTopic" in str(refused[KpTopicPartition(topic, 0)])
    done.set()
    for t in threads:
        t.join(timeout=30)
    wait_for(lambda: {g["group_id"]: g for g in admin.list_groups()}[group]["group_state"]
             == "Empty", 15, "the group empty after both members left")
    rewound = {KpTopicPartition(topic, 1): OffsetAndMetadata(7, "", -1)}
    admin.alter_group_offsets(group, rewound)
    assert admin.list_group_offsets({group: None})[group][KpTopicPartition(topic, 1)].offset == 7
    deleted = admin.delete_group_offsets(group, [KpTopicPartition(topic, 0)])
    assert "NoError" in str(deleted[KpTopicPartition(topic, 0)])
    assert KpTopicPartition(topic, 0) not in admin.list_group_offsets({group: None})[group]
    assert admin.delete_groups([group])[group] == "OK"
    assert group not in [g["group_id"] for g in admin.list_groups()]
    assert "GroupIdNotFound" in str(admin.delete_groups([group])[group])
    admin.close()


def test_confluent_admin_lists_describes_alters_and_deletes_groups(broker):
    from confluent_kafka import ConsumerGroupTopicPartitions, KafkaException

    topic, group = "admin-events", "admin-group"
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, 30, 3)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False,
                         "session.timeout.ms": 6000})
    consumer.subscribe([topic])
    read = 0
    deadline = time.time() + 30
    while read < 30 and time.time() < deadline:
        m = consumer.poll(0.2)
        if m is not None and m.error() is None:
            read += 1
    assert read == 30
    consumer.commit(asynchronous=False)

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(timeout=15)
    assert group in [g.group_id for g in listed.valid]
    described = admin.describe_consumer_groups([group])[group].result(timeout=15)
    assert str(described.state).endswith("STABLE") and len(described.members) == 1
    assert {tp.partition for tp in described.members[0].assignment.topic_partitions} == {0, 1, 2}
    # A group with members cannot be deleted.
    with pytest.raises(KafkaException, match="NON_EMPTY_GROUP"):
        admin.delete_consumer_groups([group])[group].result(timeout=15)
    consumer.close()

    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(3)])
    offsets = admin.list_consumer_group_offsets([request])[group].result(timeout=15)
    assert [tp.offset for tp in offsets.topic_partitions] == [10, 10, 10]
    # Rewind partition 0 while the group is empty (a "simple" commit, generation -1).
    rewind = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 3)])
    admin.alter_consumer_group_offsets([rewind])[group].result(timeout=15)
    offsets = admin.list_consumer_group_offsets([request])[group].result(timeout=15)
    assert [tp.offset for tp in offsets.topic_partitions] == [3, 10, 10]
    admin.delete_consumer_groups([group])[group].result(timeout=15)
    offsets = admin.list_consumer_group_offsets([request])[group].result(timeout=15)
    assert [tp.offset for tp in offsets.topic_partitions] == [-1001, -1001, -1001]
    with pytest.raises(KafkaException, match="GROUP_ID_NOT_FOUND"):
        admin.delete_consumer_groups([group])[group].result(timeout=15)


def test_kcat_group_consumer_resumes_from_its_committed_offsets(broker):
    topic, group = "kcat-events", "kcat-group"
    create_topic(broker.bootstrap, topic, 3)
    produce(broker.bootstrap, topic, 30, 3)

    def kcat_group_read():
        out = subprocess.run(
            ["kcat", "-b", broker.bootstrap, "-G", group, "-X", "auto.offset.reset=earliest",
             "-e", "-q", "-f", "%p %o\\n", topic],
            capture_output=True, text=True, timeout=60, check=True)
        return [tuple(map(int, line.split())) for line in out.stdout.splitlines()]

    first = kcat_group_read()
    assert sorted(first) == sorted((i % 3, i // 3) for i in range(30))
    # kcat commits on exit; the next member of the group starts where it stopped.
    assert kcat_group_read() == []
    produce(broker.bootstrap, topic, 3, 3, start=30)
    assert sorted(kcat_group_read()) == [(0, 10), (1, 10), (2, 10)]


def test_a_refused_offset_delete_keeps_every_committed_offset(make_broker):
    from kafka import KafkaAdminClient
    from kafka import TopicPartition as KpTopicPartition

    broker = make_broker(extra_config=GROUP_CONFIG).start()
    group = "keep-offsets"
    create_topic(broker.bootstrap, "subscribed", 2)
    create_topic(broker.bootstrap, "unsubscribed", 1)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "enable.auto.commit": False, "session.timeout.ms": 6000})
    consumer.subscribe(["subscribed"])
    wait_for(lambda: consumer.poll(0.1) is None and len(consumer.assignment()) == 2, 30,
             "the member owning both partitions")
    consumer.commit(offsets=[TopicPartition("subscribed", 0, 10),
                             TopicPartition("subscribed", 1, 20),
                             TopicPartition("unsubscribed", 0, 30)], asynchronous=False)
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)

    def committed():
        offsets = admin.list_group_offsets({group: None})[group]
        return {(tp.topic, tp.partition): meta.offset for tp, meta in offsets.items()}

    assert committed() == {("subscribed", 0): 10, ("subscribed", 1): 20, ("unsubscribed", 0): 30}
    refused = admin.delete_group_offsets(group, [KpTopicPartition("subscribed", 1)])
    assert "GroupSubscribedToTopic" in str(refused[KpTopicPartition("subscribed", 1)])
    assert committed() == {("subscribed", 0): 10, ("subscribed", 1): 20, ("unsubscribed", 0): 30}
    # Deleting an offset of a topic nobody subscribes to removes that one offset only.
    deleted = admin.delete_group_offsets(group, [KpTopicPartition("unsubscribed", 0)])
    assert "NoError" in str(deleted[KpTopicPartition("unsubscribed", 0)])
    assert committed() == {("subscribed", 0): 10, ("subscribed", 1): 20}
    admin.close()
    consumer.close()

    # What the log replays after a restart is the same.
    broker.stop()
    broker.start()
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    assert committed() == {("subscribed", 0): 10, ("subscribed", 1): 20}
    admin.close()


def join_group_v5(group, member_id, session_timeout_ms=6000, rebalance_timeout_ms=60000):
    """JoinGroup v5 for the consumer protocol with one 'range' protocol and empty metadata."""
    import struct

    from kafka_wire import string
    body = string(group) + struct.pack(">ii", session_timeout_ms, rebalance_timeout_ms)
    body += string(member_id) + string(None) + string("consumer")
    body += struct.pack(">i", 1) + string("range") + struct.pack(">i", 0)
    return body


def test_a_member_id_never_used_delays_a_rebalance_only_until_it_expires(make_broker):
    """A client that takes a member id (MEMBER_ID_REQUIRED) and never rejoins with it must not
    hold the next rebalance for the whole rebalance timeout."""
    import struct

    from kafka_wire import Connection, request

    broker = make_broker(extra_config=GROUP_CONFIG).start()
    topic, group = "ghost-events", "ghost-group"
    create_topic(broker.bootstrap, topic, 4)
    first = Member(broker.bootstrap, group, topic)
    try:
        wait_for(lambda: first.snapshot()[0] == {0, 1, 2, 3}, 30, "the first member owning all")
        ghost = Connection(broker.bootstrap)
        ghost.send(request(11, 5, 1, join_group_v5(group, "")))
        _, body = ghost.recv_response()
        (_throttle, error) = struct.unpack_from(">ih", body)
        assert error == 79  # MEMBER_ID_REQUIRED: the id is handed out and never used
        ghost_at = time.time()
        second = Member(broker.bootstrap, group, topic)
        try:
            balanced_at = wait_for(
                lambda: first.snapshot()[0] | second.snapshot()[0] == {0, 1, 2, 3}
                and len(first.snapshot()[0]) == 2 and len(second.snapshot()[0]) == 2,
                45, "two members with two partitions each")
        finally:
            second.close()
        ghost.close()
    finally:
        first.close()
    # The ghost's id lapses after its 6 s session timeout; the members' rebalance timeout
    # (librdkafka's max.poll.interval.ms) is 300 s.
    waited = balanced_at - ghost_at
    assert waited < SESSION_TIMEOUT_S + 10, waited
