"""The consumer group protocol (KIP-848, `group.protocol=consumer`) with confluent-kafka: the
broker assigns partitions, members reconcile by heartbeat, and scaling out and in moves only
what must move, with no record read twice under synchronous commits."""

import threading
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupType, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from test_groups import Member, all_reads, create_topic, produce, wait_for

# Members heartbeat every 500 ms so tests see rebalances quickly.
CONFIG = "[groups]\nconsumer_heartbeat_interval_ms = 500\nconsumer_session_timeout_ms = 6000\n"


class SteadyProducer:
    """Produces `rate` records a second round-robin over the partitions until stopped, and
    remembers every record it was acknowledged as (partition, offset)."""

    def __init__(self, bootstrap, topic, partitions, rate=200):
        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
        self.topic, self.partitions, self.rate = topic, partitions, rate
        self.acked = set()
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _delivered(self, error, message):
        if error is None:
            self.acked.add((message.partition(), message.offset()))

    def _run(self):
        i = 0
        while self.running:
            self.producer.produce(self.topic, value=f"v{i}".encode(), partition=i % self.partitions,
                                  on_delivery=self._delivered)
            self.producer.poll(0)
            i += 1
            time.sleep(1 / self.rate)
        self.producer.flush(30)

    def stop(self):
        self.running = False
        self.thread.join(timeout=60)


def owned_sets(members):
    return [m.snapshot()[0] for m in members]


def balanced(members, partitions):
    owned = owned_sets(members)
    sizes = sorted(len(o) for o in owned)
    return (set().union(*owned) == set(range(partitions)) and sizes[-1] - sizes[0] <= 1
            and sum(sizes) == partitions)


def test_members_scale_one_to_four_to_two_and_no_record_is_read_twice(make_broker):
    broker = make_broker(extra_config=CONFIG).start()
    topic, group, partitions = "orders", "shipping", 8
    create_topic(broker.bootstrap, topic, partitions)
    producer = SteadyProducer(broker.bootstrap, topic, partitions)
    members = [Member(broker.bootstrap, group, topic, strategy="consumer")]
    try:
        wait_for(lambda: balanced(members, partitions), 30, "the first member owning all")
        joined_at = time.time()
        members += [Member(broker.bootstrap, group, topic, strategy="consumer") for _ in range(3)]
        wait_for(lambda: balanced(members, partitions), 60, "four members with two each")
        fourth_first_read = wait_for(lambda: members[3].snapshot()[1], 30, "a read by the fourth")
        wait_for(lambda: all(m.snapshot()[1] for m in members), 30, "a read by each of four")
        print(f"four members balanced; the fourth read its first record "
              f"{fourth_first_read - joined_at:.1f}s after it started")
        # Two leave gracefully: the others take over their partitions.
        for m in members[2:]:
            m.close()
        wait_for(lambda: balanced(members[:2], partitions), 60, "two members with four each")
        time.sleep(1)
        producer.stop()
        wait_for(lambda: set(all_reads(members)) >= producer.acked, 60, "every acked record")
        reads = all_reads(members)
        twice = {r for r in reads if reads.count(r) > 1}
        assert not twice, f"read twice: {sorted(twice)[:10]}"
        assert len(producer.acked) > 100
    finally:
        producer.running = False
        for m in members:
            if m.process.poll() is None:
                m.kill()


def test_a_member_commits_with_its_epoch_and_a_new_consumer_resumes_there(make_broker):
    broker = make_broker(extra_config=CONFIG).start()
    create_topic(broker.bootstrap, "ledger", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        producer.produce("ledger", value=b"x", partition=i % 2)
    producer.flush(10)

    def consumer():
        return Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "books",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})

    def read(member, count, commit):
        """Up to `count` records within 30 s (each committed when asked); how many came."""
        got = 0
        deadline = time.time() + 30
        while got < count and time.time() < deadline:
            m = member.poll(0.5)
            if m is not None and not m.error():
                got += 1
                if commit:
                    member.commit(message=m, asynchronous=False)
        return got

    first = consumer()
    first.subscribe(["ledger"])
    assert read(first, 12, commit=True) == 12
    # Admin clients see it as a consumer-protocol group.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    listed = admin.list_consumer_groups().result(timeout=10).valid
    books = [g for g in listed if g.group_id == "books"]
    assert books and books[0].type == ConsumerGroupType.CONSUMER, listed
    committed = first.committed([TopicPartition("ledger", p) for p in range(2)], timeout=10)
    first.close()
    assert sum(tp.offset for tp in committed) == 12

    second = consumer()
    second.subscribe(["ledger"])
    assert read(second, 8, commit=False) == 8, "resumed from the committed offsets"
    assert second.poll(2) is None
    second.close()


def test_a_regex_subscription_picks_up_a_topic_created_later(make_broker):
    broker = make_broker(extra_config=CONFIG).start()
    create_topic(broker.bootstrap, "orders-eu", 2)
    create_topic(broker.bootstrap, "payments", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "audit",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "topic.metadata.refresh.interval.ms": 1000})
    consumer.subscribe(["^orders-.*"])
    seen = set()

    def read_until(wanted, timeout):
        deadline = time.time() + timeout
        while not wanted <= seen and time.time() < deadline:
            producer.poll(0)
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                seen.add(m.topic())

    try:
        for topic in ("orders-eu", "payments"):
            producer.produce(topic, value=b"x")
        producer.flush(10)
        read_until({"orders-eu"}, 30)
        assert seen == {"orders-eu"}
        create_topic(broker.bootstrap, "orders-us", 2)
        deadline = time.time() + 30
        while "orders-us" not in seen and time.time() < deadline:
            producer.produce("orders-us", value=b"y")
            producer.flush(10)
            read_until({"orders-us"}, 1)
        assert seen == {"orders-eu", "orders-us"}, "payments never matched"
    finally:
        consumer.close()


def assignment_changes(member, since):
    """The assignments a member reported after `since` (a time)."""
    with member.lock:
        return [parts for at, parts in member.assignments if at > since]


def test_a_static_member_that_restarts_gets_its_partitions_back_and_the_others_keep_theirs(
        make_broker):
    broker = make_broker(extra_config=CONFIG).start()
    topic, group, partitions = "parcels", "couriers", 4
    create_topic(broker.bootstrap, topic, partitions)
    members = [Member(broker.bootstrap, group, topic, instance_id=f"courier-{i}",
                      strategy="consumer") for i in range(2)]
    try:
        wait_for(lambda: balanced(members, partitions), 60, "two members with two each")
        before = owned_sets(members)
        members[0].close()  # leaves with epoch -2: its place is kept
        left_at = time.time()
        members[0] = Member(broker.bootstrap, group, topic, instance_id="courier-0",
                            strategy="consumer")
        wait_for(lambda: owned_sets(members)[0] == before[0], 30, "the same partitions back")
        time.sleep(2)
        assert owned_sets(members) == before
        assert assignment_changes(members[1], left_at) == [], "the other member was rebalanced"
    finally:
        for m in members:
            if m.process.poll() is None:
                m.kill()


def test_a_group_moves_between_the_protocols_when_it_has_no_members(make_broker):
    """Kafka's offline migration: the committed offsets carry over from a classic group to
    a consumer-protocol one and back."""
    broker = make_broker(extra_config=CONFIG).start()
    create_topic(broker.bootstrap, "journal", 1)
    produce(broker.bootstrap, "journal", 10, 1)

    def read_and_commit(protocol, count):
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "readers",
                             "group.protocol": protocol, "auto.offset.reset": "earliest",
                             "enable.auto.commit": False})
        consumer.subscribe(["journal"])
        offsets = []
        deadline = time.time() + 30
        while len(offsets) < count and time.time() < deadline:
            m = consumer.poll(0.2)
            if m is not None and not m.error():
                offsets.append(m.offset())
                consumer.commit(message=m, asynchronous=False)
        consumer.close()
        return offsets

    assert read_and_commit("classic", 4) == [0, 1, 2, 3]
    assert read_and_commit("consumer", 3) == [4, 5, 6]
    assert read_and_commit("classic", 3) == [7, 8, 9]


def print_rebalances(members):
    """What each member was assigned and which commits failed, to tell why a record was read
    twice."""
    for i, m in enumerate(members):
        with m.lock:
            for line in m.lines:
                if line.startswith(("assigned", "commit-failed", "error")):
                    print(i, line)


def group_type(bootstrap, group):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    listed = admin.list_consumer_groups().result(timeout=10).valid
    return next((g.type for g in listed if g.group_id == group), None)


@pytest.mark.parametrize("classic_strategy", ["range", "cooperative-sticky"])
def test_a_group_migrates_online_with_classic_and_consumer_members_together(
        make_broker, classic_strategy):
    """Kafka's online migration: a consumer-protocol member joins a classic group with live
    members, which becomes a consumer-protocol group; the classic members go on (the broker
    assigns them) and share the partitions with it; when it leaves, the group goes back to
    the classic protocol. Under synchronous commits no record is read twice throughout."""
    broker = make_broker(extra_config=CONFIG).start()
    topic, group, partitions = "invoices", "accounts", 6
    create_topic(broker.bootstrap, topic, partitions)
    producer = SteadyProducer(broker.bootstrap, topic, partitions)
    members = [Member(broker.bootstrap, group, topic, strategy=classic_strategy)
               for _ in range(2)]
    try:
        wait_for(lambda: balanced(members, partitions), 60, "two classic members")
        assert group_type(broker.bootstrap, group) == ConsumerGroupType.CLASSIC
        members.append(Member(broker.bootstrap, group, topic, strategy="consumer"))
        wait_for(lambda: balanced(members, partitions), 60, "two classic and one consumer member")
        wait_for(lambda: members[2].snapshot()[1], 30, "a read by the consumer-protocol member")
        assert group_type(broker.bootstrap, group) == ConsumerGroupType.CONSUMER
        # The consumer-protocol member leaves: the classic members take its partitions, in a
        # classic group again.
        members[2].close()
        wait_for(lambda: balanced(members[:2], partitions), 60, "the classic members alone")
        wait_for(lambda: group_type(broker.bootstrap, group) == ConsumerGroupType.CLASSIC, 30,
                 "the group back to the classic protocol")
        time.sleep(1)
        producer.stop()
        wait_for(lambda: set(all_reads(members)) >= producer.acked, 60, "every acked record")
        reads = all_reads(members)
        twice = {r for r in reads if reads.count(r) > 1}
        if twice:
            print_rebalances(members)
        assert not twice, f"read twice: {sorted(twice)[:10]}"
        assert len(producer.acked) > 100
    finally:
        producer.running = False
        for m in members:
            if m.process.poll() is None:
                m.kill()
