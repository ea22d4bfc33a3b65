"""A share group (KIP-932) across the three brokers of a cluster: its members heartbeat to the
group's coordinator but fetch each partition from the broker Metadata names for it, which
holds that share-partition's live state. A broker killed with kill -9 is replaced as the
holder of its share-partitions (the next reads their state from the shared log): every record
is delivered, and none whose acceptance was answered is delivered again. One paused past its
lease comes back holding states others have moved on: the log refuses its next write, so it
reads them again instead of handing out records accepted meanwhile."""

import threading

import time

from confluent_kafka import AcknowledgeType
from confluent_kafka.admin import AdminClient, NewTopic

from test_cluster import RACKS, cluster, produce, wait_for_brokers  # noqa: F401  (the fixture)
from test_cluster_faults import PAUSE_S, coordinator_of, pause
from test_share_groups import (SHORTEST_LOCK_MS, configure, listed_groups, poll_values,
                               share_consumer)

GROUP_KEY_TYPE = 0


class Deliveries:
    """What each member was handed, and which records' acceptance was answered."""

    def __init__(self):
        self.delivered = []  # (partition, offset, time)
        self.accepted_at = {}  # (partition, offset) -> when the broker answered the ACCEPT

    def poll_accept(self, members, until, stop):
        deadline = time.time() + until
        while time.time() < deadline and not stop():
            for member in members:
                batch = poll_values(member, 0.2)
                for m in batch:
                    self.delivered.append((m.partition(), m.offset(), time.time()))
                    member.acknowledge(m, AcknowledgeType.ACCEPT)
                if not batch:
                    continue
                try:
                    results = member.commit_sync(10)
                except Exception:  # noqa: BLE001 (a broker gone: those are not answered)
                    continue
                answered = time.time()
                ok = {tp.partition for tp, error in results.items() if error is None}
                for m in batch:
                    if m.partition() in ok:
                        self.accepted_at.setdefault((m.partition(), m.offset()), answered)

    def all_delivered_and_none_again(self, members, expected):
        """Polls until every record of `expected` was delivered, then closes the members:
        none missing, and none delivered after its acceptance was answered."""
        self.poll_accept(members, 90, lambda: self.records() >= expected)
        for member in members:
            member.close()
        missing = expected - self.records()
        assert not missing, f"{len(missing)} records never delivered, e.g. {sorted(missing)[:5]}"
        again = self.delivered_again()
        assert not again, f"{len(again)} accepted, then delivered again, e.g. {again[:5]}"

    def records(self):
        return {(p, o) for p, o, _ in self.delivered}

    def delivered_again(self):
        """Records handed out after their acceptance was answered."""
        return sorted((p, o) for p, o, t in self.delivered
                      if (p, o) in self.accepted_at and t > self.accepted_at[(p, o)])


TOPIC, PARTITIONS, GROUP, COUNT = "queue", 6, "sharers", 600


def start_group(brokers, zone_of=None):
    """The topic with COUNT records, and a member bootstrapped through each broker that has
    accepted all of them; a broker holding share-partitions that does not coordinate the
    group (so the group keeps its members when it goes). `zone_of`: the members name that
    broker's zone in their client.id (`shoal_az=`), so it holds every share-partition."""
    everyone = ",".join(b.bootstrap for b in brokers)
    admin = AdminClient({"bootstrap.servers": everyone})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS)])[TOPIC].result(10)
    configure(everyone, GROUP, share_auto_offset_reset="earliest",
              share_record_lock_duration_ms=SHORTEST_LOCK_MS)
    first = {(p, o) for p, o, _ in produce(everyone, TOPIC, COUNT, zone="a")}
    coordinator = coordinator_of(brokers[0].bootstrap, GROUP, GROUP_KEY_TYPE)
    leaders = {p.leader for p in admin.list_topics(TOPIC, timeout=10).topics[TOPIC]
               .partitions.values()}
    holder_id = next(n for n in sorted(leaders) if n != coordinator)
    config = {"client_id": f"shoal_az={RACKS[holder_id - 1]}"} if zone_of else {}
    members = [share_consumer(b.bootstrap, GROUP, TOPIC, explicit=True, **config)
               for b in brokers]
    seen = Deliveries()
    seen.poll_accept(members, 60, lambda: set(seen.accepted_at) >= first)
    assert set(seen.accepted_at) >= first, f"{len(seen.accepted_at)} accepted of {COUNT}"
    return members, seen, holder_id, config


def test_members_on_every_broker_share_a_topic_and_a_killed_holder_loses_no_acceptance(cluster):
    brokers = cluster()
    members, seen, victim_id, _ = start_group(brokers)
    # Every broker holds the group's states in the log, and members visit each; only its
    # coordinator lists it, as in Kafka (an admin client asks every broker).
    coordinator = coordinator_of(brokers[0].bootstrap, GROUP, GROUP_KEY_TYPE)
    listing = {i + 1: listed_groups(b.bootstrap).get(GROUP) for i, b in enumerate(brokers)}
    assert listing == {n: ("share", "Stable") if n == coordinator else None
                       for n in listing}, listing
    # Its share-partitions move to the brokers Metadata names next, which read their
    # states from the log.
    brokers[victim_id - 1].kill()  # node ids are 1, 2, 3 in order
    survivors = ",".join(b.bootstrap for i, b in enumerate(brokers) if i + 1 != victim_id)
    second = {(p, o) for p, o, _ in produce(survivors, TOPIC, COUNT, zone="a")}
    seen.all_delivered_and_none_again(members, second)


def test_a_holder_paused_past_its_lease_cannot_hand_out_what_was_accepted_meanwhile(cluster):
    brokers = cluster()
    everyone = ",".join(b.bootstrap for b in brokers)
    # Members of the paused broker's zone: it holds every share-partition before the pause
    # and after it; in between, with no broker in their zone, they fetch from the others.
    members, seen, paused_id, zone = start_group(brokers, zone_of=True)
    # Members fetch from the broker they reach until their Metadata changes: each phase has
    # new members, which go by Metadata.
    for member in members:
        member.close()
    paused = brokers[paused_id - 1]
    live = [b for b in brokers if b is not paused]
    stopped = threading.Thread(target=pause, args=(paused, PAUSE_S))
    stopped.start()
    try:
        wait_for_brokers(live[0].bootstrap, sorted({1, 2, 3} - {paused_id}), within=10)
        members = [share_consumer(b.bootstrap, GROUP, TOPIC, explicit=True, **zone)
                   for b in live]
        second = {(p, o) for p, o, _ in produce(live[0].bootstrap, TOPIC, COUNT, zone="a")}
        seen.poll_accept(members, 60, lambda: set(seen.accepted_at) >= second)
        for member in members:
            member.close()
    finally:
        stopped.join()
    assert set(seen.accepted_at) >= second, "the others did not take the paused broker's records"
    # Back in the cluster, it holds the states as they were before the pause.
    for broker in brokers:
        wait_for_brokers(broker.bootstrap, [1, 2, 3], within=10)
    members = [share_consumer(b.bootstrap, GROUP, TOPIC, explicit=True, **zone)
               for b in brokers]
    third = {(p, o) for p, o, _ in produce(everyone, TOPIC, COUNT, zone="a")}
    seen.all_delivered_and_none_again(members, third)
