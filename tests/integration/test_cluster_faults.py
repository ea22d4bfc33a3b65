"""Three brokers of one cluster under the faults of a long pause (SIGSTOP: a GC pause, a
stalled VM, a frozen disk). A group's coordinator paused for three leases comes back with
commits it read before the pause; the shared log refuses them, so committed offsets never go
back and no acknowledged record is skipped. A paused broker that held the log's lock does not
hold up the others' commits for longer than the lock bound."""

import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from kafka_wire import Connection, request, string
from test_cluster import cluster  # noqa: F401  (the fixture)

HERE = Path(__file__).parent
LEASE_S = 1.5  # the cluster fixture's lease_ms
# Three leases, and past the members' session timeout (6 s in group_consumer.py), so they
# give the paused coordinator up and the group forms again on another broker meanwhile.
PAUSE_S = max(3 * LEASE_S, 8)


def pause(broker, seconds):
    os.kill(broker.process.pid, signal.SIGSTOP)
    try:
        time.sleep(seconds)
    finally:
        os.kill(broker.process.pid, signal.SIGCONT)


class Members:
    """Consumer-group members as processes (group_consumer.py): each commits synchronously
    after every record and reports what it read and what was acknowledged."""

    def __init__(self, bootstrap, group, topic, count):
        self.read = set()
        self.acknowledged = []  # (time, partition, next offset)
        self.other = []  # assignments, errors, failed commits: to explain a failure
        self.lock = threading.Lock()
        self.processes = [
            subprocess.Popen([sys.executable, str(HERE / "group_consumer.py"), bootstrap, group,
                              topic], stdout=subprocess.PIPE, text=True)
            for _ in range(count)]
        for process in self.processes:
            threading.Thread(target=self._follow, args=(process,), daemon=True).start()

    def _follow(self, process):
        for line in process.stdout:
            words = line.split()
            with self.lock:
                if words[:1] == ["read"]:
                    self.read.add((int(words[1]), int(words[2])))
                elif words[:1] == ["committed"]:
                    self.acknowledged.append((time.time(), int(words[1]), int(words[2])))
                else:
                    self.other.append(f"{time.time():.1f} {process.pid} {line.strip()}")

    def stop(self):
        for process in self.processes:
            process.send_signal(signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()


def produce_steadily(bootstrap, topic, stop, acked):
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5,
                         "client.id": "shoal_az=a"})

    def on_delivery(err, msg):
        if err is None:
            acked.append((msg.partition(), msg.offset(), msg.value().decode()))

    i = 0
    while not stop.is_set():
        producer.produce(topic, value=f"v{i}".encode(), key=str(i).encode(),
                         on_delivery=on_delivery)
        producer.poll(0)
        i += 1
        # ~50 records a second: fewer than the members (one synchronous commit per record)
        # take even while they rebalance, so their lag stays small.
        time.sleep(0.02)
    assert producer.flush(60) == 0


def coordinator_of(bootstrap, key, key_type):
    """The node id FindCoordinator (v1) names for `key` (key type 0: a group, 1: a
    transactional id)."""
    body = string(key) + struct.pack(">b", key_type)
    connection = Connection(bootstrap)
    connection.send(request(10, 1, 7, body))
    _, answer = connection.recv_response()
    error, message_length = struct.unpack(">hh", answer[4:8])
    assert error == 0, f"FindCoordinator error {error}"
    (node_id,) = struct.unpack(">i", answer[8 + max(message_length, 0):12 + max(message_length, 0)])
    return node_id


def transaction_coordinator(bootstrap, transactional_id):
    return coordinator_of(bootstrap, transactional_id, 1)


def committed_offsets(bootstrap, group, topic, partitions):
    checker = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        got = checker.committed([TopicPartition(topic, p) for p in range(partitions)],
                                timeout=5)
        return {tp.partition: tp.offset for tp in got if tp.error is None}
    finally:
        checker.close()


def test_a_group_coordinator_paused_for_three_leases_cannot_move_offsets_back(cluster):
    brokers = cluster()
    everyone = ",".join(b.bootstrap for b in brokers)
    topic, partitions, group = "work", 6, "paused"
    admin = AdminClient({"bootstrap.servers": everyone})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    stop, acked = threading.Event(), []
    producing = threading.Thread(target=produce_steadily, args=(everyone, topic, stop, acked))
    producing.start()
    members = Members(everyone, group, topic, 2)
    try:
        check_group_under_pauses(brokers, admin, everyone, topic, partitions, group, members,
                                 stop, acked, producing)
    finally:
        stop.set()
        members.stop()


def check_group_under_pauses(brokers, admin, everyone, topic, partitions, group, members, stop,
                             acked, producing):
    # What the group's offsets read back as, over time, through every broker.
    samples = []
    watching = threading.Event()

    def watch():
        while not watching.is_set():
            for broker in brokers:
                if broker.process.poll() is None:
                    try:
                        samples.append((time.time(), committed_offsets(
                            broker.bootstrap, group, topic, partitions)))
                    except KafkaException:
                        pass
            time.sleep(0.2)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    paused = []
    try:
        deadline = time.time() + 60
        while len(members.acknowledged) < 150:
            assert time.time() < deadline, "the group never committed"
            time.sleep(0.2)
        for _ in range(2):
            coordinator = admin.describe_consumer_groups([group])[group].result(10).coordinator.id
            paused.append(coordinator)
            pause(brokers[coordinator - 1], PAUSE_S)
            before = len(members.acknowledged)
            deadline = time.time() + 60
            while len(members.acknowledged) < before + 150:
                assert time.time() < deadline, "the group made no progress after the pause"
                time.sleep(0.2)
    finally:
        stop.set()
        producing.join()
    # Everything acknowledged is read and committed.
    produced = {(p, o) for p, o, _ in acked}
    deadline = time.time() + 90
    ends = {p: max([o for q, o in produced if q == p], default=-1) + 1 for p in range(partitions)}
    while True:
        final = committed_offsets(everyone, group, topic, partitions)
        if all(final.get(p, -1) >= ends[p] for p in range(partitions)):
            break
        if time.time() > deadline:
            acknowledged = {}
            for _, p, offset in members.acknowledged:
                acknowledged[p] = max(acknowledged.get(p, -1), offset)
            last = samples[-6:]
            logs = "\n".join(b.log()[-4000:] for b in brokers)
            reads = {p: len([o for q, o in members.read if q == p]) for p in range(partitions)}
            events = "\n".join(members.other[:40] + ["..."] + members.other[-40:])
            raise AssertionError(
                f"committed {final}, produced up to {ends}, acknowledged to members "
                f"{acknowledged}, records read {reads}; last reads {last}; paused {paused}\n"
                f"{events}\n{logs}")
        time.sleep(0.5)
    watching.set()
    watcher.join()
    missing = produced - members.read
    assert not missing, f"{len(missing)} acknowledged records never read, e.g. {sorted(missing)[:5]}"
    # The idempotent producer's retries through a paused and returning broker: each record
    # is stored once.
    from test_transactions import read
    stored = read(everyone, topic, partitions, "read_uncommitted", len(acked))
    values = [v for _, v in stored]
    assert len(values) == len(set(values)), "a record is stored twice"
    assert set(values) == {v for _, _, v in acked}
    # No read of the group's offsets, on any broker, went back from an earlier one.
    highest = {}
    for at, offsets in sorted(samples, key=lambda s: s[0]):
        for p, offset in offsets.items():
            if offset < 0:
                continue
            assert offset >= highest.get(p, (0, 0))[0], (
                f"partition {p}: committed {highest[p][0]} read at {highest[p][1]:.1f}, then "
                f"{offset} at {at:.1f} (coordinators paused: {paused})")
            highest[p] = (offset, at)
    for broker in brokers:
        assert broker.process.poll() is None, f"{broker.bootstrap} stopped:\n{broker.log()[-3000:]}"


def test_a_broker_paused_while_it_may_hold_the_log_holds_up_the_others_about_a_second(cluster):
    """Broker 1 commits as fast as a producer can drive it, so it holds the log's lock much of
    the time; it is paused four times. A producer writing through broker 2 waits at most
    about the lock bound (1 s) for each of its records, not the pause."""
    brokers = cluster()
    topic = "busy"
    admin = AdminClient({"bootstrap.servers": brokers[0].bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=4)])[topic].result(10)
    stop = threading.Event()

    def drive_broker_1():
        producer = Producer({"bootstrap.servers": brokers[0].bootstrap, "acks": "all",
                             "client.id": "shoal_az=a", "linger.ms": 0,
                             "queue.buffering.max.messages": 20000})
        while not stop.is_set():
            try:
                producer.produce(topic, value=b"x" * 200)
            except BufferError:
                producer.poll(0.01)
            producer.poll(0)
        producer.flush(60)

    latencies = []  # (sent, waited) of each probe record through broker 2

    def probe_broker_2():
        producer = Producer({"bootstrap.servers": brokers[1].bootstrap, "acks": "all",
                             "client.id": "shoal_az=b", "linger.ms": 0})
        while not stop.is_set():
            sent = time.time()
            producer.produce(topic, value=b"probe", on_delivery=lambda err, msg, sent=sent:
                             latencies.append((sent, time.time() - sent, err)))
            producer.poll(0.05)
        assert producer.flush(60) == 0

    threads = [threading.Thread(target=drive_broker_1), threading.Thread(target=probe_broker_2)]
    for thread in threads:
        thread.start()
    pauses = []
    try:
        time.sleep(3)
        for _ in range(4):
            started = time.time()
            pause(brokers[0], 3.0)
            pauses.append((started, time.time()))
            time.sleep(2)
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert all(err is None for _, _, err in latencies), [e for _, _, e in latencies if e][:3]
    during = [waited for sent, waited, _ in latencies
              if any(start - 0.5 <= sent <= end for start, end in pauses)]
    assert len(during) > 40, f"only {len(during)} probe records were sent during the pauses"
    worst = max(during)
    print(f"probe records through broker 2 during broker 1's pauses: {len(during)}, "
          f"longest wait {worst:.2f} s")
    assert worst < 2.0, f"a record through broker 2 waited {worst:.2f} s for paused broker 1"
    for broker in brokers:
        assert broker.process.poll() is None, f"{broker.bootstrap} stopped:\n{broker.log()[-3000:]}"


def test_a_paused_transaction_coordinator_comes_back_to_one_outcome(cluster):
    """A transaction is open on its coordinator when that broker is paused for three leases.
    Whatever the producer is told when it commits afterwards, read_committed readers on every
    broker see all of the transaction's records or none, and the transactional id goes on."""
    from confluent_kafka import KafkaException as Failed
    from test_transactions import read, transactional_producer

    brokers = cluster()
    every = ",".join(b.bootstrap for b in brokers)
    admin = AdminClient({"bootstrap.servers": every})
    admin.create_topics([NewTopic("ledger", num_partitions=6)])["ledger"].result(15)
    producer = transactional_producer(every, "paused-tx")
    producer.begin_transaction()
    for i in range(30):
        producer.produce("ledger", value=f"open-{i}", partition=i % 6)
    producer.flush(15)
    pause(brokers[transaction_coordinator(brokers[0].bootstrap, "paused-tx") - 1], 3 * LEASE_S)
    try:
        producer.commit_transaction(30)
        committed = True
    except Failed:
        committed = False
    # The id goes on, through any broker: a new producer fences the old one.
    successor = transactional_producer(every, "paused-tx")
    successor.begin_transaction()
    successor.produce("ledger", value="after", partition=0)
    successor.commit_transaction(30)
    opened = [f"open-{i}" for i in range(30)]
    for broker in brokers:
        got = sorted(v for _, v in read(broker.bootstrap, "ledger", 6, "read_committed",
                                        31 if committed else 1))
        kept = [v for v in got if v.startswith("open-")]
        assert kept in ([], sorted(opened)), f"{len(kept)} of the transaction's 30 records"
        if committed:
            assert kept == sorted(opened), "a commit the producer was told of is not visible"
        assert "after" in got
    for broker in brokers:
        assert broker.process.poll() is None, f"{broker.bootstrap} stopped:\n{broker.log()[-3000:]}"
