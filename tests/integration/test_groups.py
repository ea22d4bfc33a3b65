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
            commits = [m.snapshot()[2] for m in members]
            return all(max(c.get(p, 0) for c in commits) == 200 for p in range(partitions))

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
