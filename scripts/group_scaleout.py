#!/usr/bin/env python3
"""Scaling a consumer group out under load, classic protocol against the consumer protocol
(KIP-848), in one run: three members share 8 partitions while a producer writes 300 records a
second; a fourth member starts; measured are the time from its start to its first record,
the time until all four hold two partitions each, and the records read twice (every member
commits synchronously after each record, so a duplicate means a partition was read by a new
owner before its old owner's last commit). Members are tests/integration/group_consumer.py
processes (confluent-kafka); the classic runs use librdkafka's cooperative-sticky assignor and
its eager range assignor.

    python3 scripts/group_scaleout.py [--rounds 3]

Writes perf-results/<date>-group-scaleout.json."""

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from benchlib import ROOT, free_port, stop, wait_for_port, write_results

SHOAL = ROOT / "target" / "release" / "shoal"
MEMBER = ROOT / "tests" / "integration" / "group_consumer.py"
PARTITIONS = 8
PROTOCOLS = ("consumer", "cooperative-sticky", "range")


class Member:
    def __init__(self, bootstrap, group, topic, strategy):
        self.started = time.time()
        self.process = subprocess.Popen(
            [sys.executable, str(MEMBER), bootstrap, group, topic, "-", strategy],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.owned, self.reads, self.first_read = set(), [], None
        self.lock = threading.Lock()
        threading.Thread(target=self._follow, daemon=True).start()

    def _follow(self):
        for line in self.process.stdout:
            words = line.split()
            with self.lock:
                if words and words[0] == "assigned":
                    self.owned = set() if words[1] == "-" else {int(p) for p in words[1].split(",")}
                elif words and words[0] == "read":
                    self.reads.append((int(words[1]), int(words[2])))
                    if self.first_read is None:
                        self.first_read = time.time()

    def snapshot(self):
        with self.lock:
            return set(self.owned), list(self.reads), self.first_read


def wait_for(condition, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if condition():
            return time.time()
        time.sleep(0.05)
    raise RuntimeError("timed out")


def balanced(members):
    owned = [m.snapshot()[0] for m in members]
    return (sum(len(o) for o in owned) == PARTITIONS and set().union(*owned) == set(range(PARTITIONS))
            and max(len(o) for o in owned) - min(len(o) for o in owned) <= 1)


def one_round(bootstrap, protocol, round_):
    topic, group = f"scale-{protocol}-{round_}", f"group-{protocol}-{round_}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS)]).values():
        future.result(timeout=15)
    producing = True

    def produce():
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
        i = 0
        while producing:
            producer.produce(topic, value=b"x" * 100, partition=i % PARTITIONS)
            producer.poll(0)
            i += 1
            time.sleep(1 / 300)
        producer.flush(30)

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    members = [Member(bootstrap, group, topic, protocol) for _ in range(3)]
    try:
        wait_for(lambda: balanced(members), 90)
        time.sleep(2)
        fourth = Member(bootstrap, group, topic, protocol)
        members.append(fourth)
        first_read_at = wait_for(lambda: fourth.snapshot()[2] is not None, 90)
        balanced_at = wait_for(lambda: balanced(members), 90)
        time.sleep(2)
        reads = [r for m in members for r in m.snapshot()[1]]
        counts = {}
        for r in reads:
            counts[r] = counts.get(r, 0) + 1
        return {"fourth_first_record_s": round(first_read_at - fourth.started, 2),
                "fourth_to_balanced_s": round(balanced_at - fourth.started, 2),
                "records_read": len(counts),
                "records_read_twice": sum(1 for n in counts.values() if n > 1)}
    finally:
        producing = False
        thread.join(timeout=30)
        for m in members:
            m.process.kill()
            m.process.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    # The classic members heartbeat every 500 ms (group_consumer.py); the same for the
    # consumer protocol by default, so both learn of a rebalance as soon (Kafka's default: 5 s).
    ap.add_argument("--consumer-heartbeat-ms", type=int, default=500)
    args = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shoal-scaleout-")
    port = free_port()
    config = f"{work}/shoal.toml"
    with open(config, "w") as f:
        f.write(f'listen = "127.0.0.1:{port}"\ndata_dir = "{work}/data"\n'
                "[groups]\ninitial_rebalance_delay_ms = 0\n"
                f"consumer_heartbeat_interval_ms = {args.consumer_heartbeat_ms}\n")
    broker = subprocess.Popen([SHOAL, "--config", config], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    runs = {p: [] for p in PROTOCOLS}
    try:
        wait_for_port(port)
        for round_ in range(args.rounds):
            order = PROTOCOLS if round_ % 2 == 0 else tuple(reversed(PROTOCOLS))
            for protocol in order:
                result = one_round(f"127.0.0.1:{port}", protocol, round_)
                print(protocol, result, flush=True)
                runs[protocol].append(result)
    finally:
        stop(broker)
    results = {p: {key: statistics.median(r[key] for r in rs) for key in rs[0]}
               for p, rs in runs.items()}
    workload = {
        "group": "3 members on 8 partitions, then a 4th; tests/integration/group_consumer.py "
                 "(confluent-kafka), synchronous commit after every record",
        "load": "one producer, 300 records/s of 100 bytes, round-robin over the partitions",
        "protocols": "consumer = group.protocol=consumer (broker's uniform assignor, "
                     f"consumer_heartbeat_interval_ms {args.consumer_heartbeat_ms}); classic with "
                     "cooperative-sticky and with range (heartbeat.interval.ms 500, session 6 s "
                     "in the member script); initial_rebalance_delay_ms 0",
        "broker": "defaults (2 shards), local store; everything shares the 2 vCPUs",
        "rounds": f"{args.rounds}, protocol order alternating; medians",
    }
    write_results("group-scaleout", "scripts/group_scaleout.py", workload, results, runs)


if __name__ == "__main__":
    main()
