#!/usr/bin/env python3
"""The platform on top of the broker, on Shoal against Apache Kafka in one run, same cores,
alternating rounds (issue 45's figures):

- streams: tests/java's StreamsBench (the exactly-once PageCountsApp topology: repartition,
  persistent count, table join) over --streams-records clicks written beforehand, against
  `shoal` (local store, fsync before acknowledging) and `kafka` (Apache Kafka 4.4, defaults):
  records/s from start until every output is committed, the stream thread's commit latency
  (Streams' commit-latency-avg/max), and the restore of the store from its changelog with the
  state directory deleted. Broker on --broker-cpus, Streams and its producer on --bench-cpus.
- mirror: Apache Kafka 4.4 as the source (on --bench-cpus, with the generator and MirrorMaker
  2), the destination on --broker-cpus: `shoal-mirror` (Shoal's KIP-1279 mirror), `mm2-shoal`
  (MirrorMaker 2 4.3.1, dedicated mode, identity policy, into Shoal) and `mm2-kafka` (the same
  into a second Kafka). Catch-up: shoal-bench produce fills the source for --seconds, then
  the destination's MB/s from the first sample (every 20 ms) that finds mirrored records to
  the one that finds them all, over the records copied in between; half load: shoal-bench
  produce at half that rate for --seconds, the lag (source end - destination end, records,
  sampled every 100 ms) at p50/p99, and in ms at that rate; then the same at --common-rate
  records/s for every kind (half loads differ by an order of magnitude between them).

    python3 scripts/platform_compare.py [--rounds 2] [--seconds 8] [--streams-records 200000]

Needs the release build and tests/java built (scripts/java_tests.sh writes the classpaths:
target/kafka.classpath, target/connect.classpath; test classes in target/test-classes).
Writes perf-results/<date>-platform-compare.json.
"""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import tempfile
import time

from confluent_kafka import Consumer, TopicPartition

from benchlib import ROOT, percentile, stop, wait_for_port, write_results
from kafka_compare import create, start_kafka
from peer_compare import BIN, bench, start_shoal

JAVA_TESTS = ROOT / "tests" / "java" / "target"
# kafka_compare starts Kafka with group.initial.rebalance.delay.ms=0: Shoal gets the same, or
# its default 3 s would be timed in every Streams start and restore.
SAME_GROUP_DELAY = "[groups]\ninitial_rebalance_delay_ms = 0\n"
PARTITIONS = 8


def java(cpus, classpath, main_class, *args, heap="1g"):
    return ["taskset", "-c", cpus, shutil.which("java"), f"-Xmx{heap}", "-XX:+UseG1GC",
            "-cp", classpath, main_class, *map(str, args)]


def kafka_classpath():
    return f"{JAVA_TESTS / 'test-classes'}:{(JAVA_TESTS / 'kafka.classpath').read_text().strip()}"


def started(start, work):
    process, port = start(work)
    wait_for_port(port, 90)
    return process, port


def java_bench_round(start, args, main_class, bench_args, timeout=600):
    """One round of a tests/java bench (`main_class`) against a broker `start` starts in a
    fresh directory, once it answers Produce: the bench's last line of output, read as JSON.
    `bench_args(work)`: the bench's arguments after the bootstrap address."""
    work = pathlib.Path(tempfile.mkdtemp())
    process, port = started(start, work)
    try:
        create(port, work, args, "ready")  # answers Produce: the broker serves
        done = subprocess.run(
            java(args.bench_cpus, kafka_classpath(), main_class, f"127.0.0.1:{port}",
                 *bench_args(work)),
            check=True, capture_output=True, text=True, timeout=timeout)
        return json.loads(done.stdout.strip().splitlines()[-1])
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def streams_round(start, args):
    return java_bench_round(
        start, args, "dev.shoal.compat.bench.StreamsBench",
        lambda work: (args.streams_records, 1000, work / "state"), timeout=900)


class EndOffsets:
    """The summed end offsets of the topic's partitions on one broker, through one consumer
    kept open (a new one per sample would time its own connection setup)."""

    def __init__(self, port, topic):
        self.topic = topic
        self.consumer = Consumer({"bootstrap.servers": f"127.0.0.1:{port}",
                                  "group.id": "platform-compare"})

    def total(self):
        total = 0
        for p in range(PARTITIONS):
            try:
                total += self.consumer.get_watermark_offsets(TopicPartition(self.topic, p),
                                                             timeout=5, cached=False)[1]
            except Exception:  # noqa: BLE001 - a topic not created yet has no end
                pass
        return total

    def close(self):
        self.consumer.close()


def mm2_properties(source_port, target_port, topic):
    lines = [
        "clusters = source, target",
        f"source.bootstrap.servers = 127.0.0.1:{source_port}",
        f"target.bootstrap.servers = 127.0.0.1:{target_port}",
        "source->target.enabled = true", "target->source.enabled = false",
        f"source->target.topics = {topic}",
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "tasks.max = 1", "replication.factor = 1", "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1", "offset-syncs.topic.replication.factor = 1",
        "offset.storage.replication.factor = 1", "status.storage.replication.factor = 1",
        "config.storage.replication.factor = 1", "sync.topic.acls.enabled = false",
        "source->target.refresh.topics.interval.seconds = 1",
    ]
    return "\n".join(lines) + "\n"


def start_replication(kind, work, args, source_port, target_port, topic):
    """Shoal's mirror (no process of its own: the destination fetches) or MirrorMaker 2."""
    if kind == "shoal-mirror":
        cli = [BIN / "shoal", "mirror", "--bootstrap", f"127.0.0.1:{target_port}"]
        subprocess.run([*cli, "create", "bench", "--source", f"127.0.0.1:{source_port}"],
                       check=True, capture_output=True, timeout=60)
        subprocess.run([*cli, "add", "bench", topic], check=True, capture_output=True,
                       timeout=60)
        return None
    (work / "mm2.properties").write_text(mm2_properties(source_port, target_port, topic))
    classpath = (JAVA_TESTS / "connect.classpath").read_text().strip()
    return subprocess.Popen(
        java(args.bench_cpus, classpath, "org.apache.kafka.connect.mirror.MirrorMaker",
             work / "mm2.properties"),
        stdout=open(work / "mm2.log", "wb"), stderr=subprocess.STDOUT)


def lag_under_load(kind, work, args, source_port, topic, source_end, target_end, rate):
    """shoal-bench produce at `rate` records/s for --seconds while the lag (records the source
    has and the destination not yet) is sampled every 100 ms."""
    lags = []
    generator = subprocess.Popen(
        [BIN / "shoal-bench", "produce", "--bootstrap", f"127.0.0.1:{source_port}",
         "--cpus", args.bench_cpus, "--topic", topic, "--rate", str(rate),
         "--duration-s", str(args.seconds), "--output", work / "load.json"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while generator.poll() is None:
        # The destination first: a record it has is on the source already, so the
        # difference never counts the time between the two samples as lag.
        copied = target_end.total()
        lags.append(max(0, source_end.total() - copied))
        time.sleep(0.1)
    if generator.returncode != 0:
        raise RuntimeError(f"{kind}: the generator at {rate} records/s failed")
    achieved = json.loads((work / "load.json").read_text())["results"]["produce"]
    p50, p99 = percentile(lags, 0.5), percentile(lags, 0.99)
    return {"records_per_s": rate, "achieved_records_per_s": round(achieved["records"] / args.seconds),
            "lag_samples": len(lags), "lag_p50_records": p50, "lag_p99_records": p99,
            "lag_p50_ms": round(p50 / rate * 1000, 1), "lag_p99_ms": round(p99 / rate * 1000, 1)}


def mirror_round(kind, args):
    work = pathlib.Path(tempfile.mkdtemp())
    (work / "source").mkdir()
    (work / "target").mkdir()
    source, source_port = started(lambda w: start_kafka(w, args.bench_cpus, False),
                                  work / "source")
    if kind == "shoal-mirror" or kind == "mm2-shoal":
        target, target_port = started(lambda w: start_shoal(w, args.broker_cpus, None, SAME_GROUP_DELAY),
                                      work / "target")
    else:
        target, target_port = started(lambda w: start_kafka(w, args.broker_cpus, False),
                                      work / "target")
    replication = None
    ends = []
    try:
        topic = "mirrored"
        filled = bench("produce", source_port, work, args, "--topic", topic, "--create",
                       "--partitions", PARTITIONS, "--duration-s", args.seconds)["produce"]
        source_end, target_end = EndOffsets(source_port, topic), EndOffsets(target_port, topic)
        ends.extend([source_end, target_end])
        total = source_end.total()
        replication = start_replication(kind, work, args, source_port, target_port, topic)
        # Timed from the first sample that finds records on the destination to the one that
        # finds them all, over the records copied in between: a first sample that comes late
        # (the replication started between two) does not inflate the rate.
        first = None
        deadline = time.time() + 600
        while True:
            copied = target_end.total()
            now = time.time()
            if copied > 0 and first is None:
                first, copied_at_first = now, copied
            if copied >= total:
                break
            if now > deadline:
                raise RuntimeError(f"{kind}: {copied} of {total} records after 600 s")
            time.sleep(0.02)
        if copied_at_first >= total:
            raise RuntimeError(f"{kind}: every record was copied before the first sample")
        seconds = now - first
        copied_records = total - copied_at_first
        catchup_mb_per_s = filled["bytes"] * copied_records / total / seconds / 1e6
        rate = max(1, int(copied_records / seconds / 2))
        half = lag_under_load(kind, work, args, source_port, topic, source_end, target_end, rate)
        common = lag_under_load(kind, work, args, source_port, topic, source_end, target_end,
                                args.common_rate)
        return {"catchup_mb_per_s": round(catchup_mb_per_s, 1),
                "catchup_records": copied_records, "catchup_s": round(seconds, 2),
                **{f"half_load_{k}": v for k, v in half.items()},
                **{f"common_rate_{k}": v for k, v in common.items()}}
    finally:
        for end in ends:
            end.close()
        if replication is not None:
            stop(replication)
        stop(target)
        stop(source)
        shutil.rmtree(work, ignore_errors=True)


STREAMS_FIGURES = ["records_per_s", "commit_latency_avg_ms", "commit_latency_max_ms",
                   "restore_s"]
MIRROR_FIGURES = ["catchup_mb_per_s", "half_load_records_per_s", "half_load_lag_p50_ms",
                  "half_load_lag_p99_ms", "common_rate_lag_p50_ms", "common_rate_lag_p99_ms"]


def medians(runs, figures):
    return {name: {k: statistics.median(r[k] for r in rs) for k in figures}
            for name, rs in runs.items()}


def ratios(med, base, figures):
    return {name: {k: round(m[k] / med[base][k], 2) for k in figures if med[base][k]}
            for name, m in med.items() if name != base}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--streams-records", type=int, default=200000)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    ap.add_argument("--only", default="streams,mirror")
    ap.add_argument("--common-rate", type=int, default=4000,
                    help="records/s every mirror is also measured at (below MirrorMaker 2's half)")
    args = ap.parse_args()
    for needed in ("kafka.classpath", "connect.classpath", "test-classes"):
        if not (JAVA_TESTS / needed).exists():
            raise SystemExit(f"{JAVA_TESTS / needed} is missing: run scripts/java_tests.sh first")
    brokers = {"shoal": lambda w: start_shoal(w, args.broker_cpus, None, SAME_GROUP_DELAY),
               "kafka": lambda w: start_kafka(w, args.broker_cpus, False)}
    streams_runs = {name: [] for name in brokers}
    mirror_runs = {kind: [] for kind in ("shoal-mirror", "mm2-shoal", "mm2-kafka")}
    for round_ in range(args.rounds):
        if "streams" in args.only:
            order = list(brokers) if round_ % 2 == 0 else list(reversed(brokers))
            for name in order:
                run = streams_round(brokers[name], args)
                print(round_, "streams", name, json.dumps(run), flush=True)
                streams_runs[name].append(run)
        if "mirror" in args.only:
            order = list(mirror_runs) if round_ % 2 == 0 else list(reversed(mirror_runs))
            for kind in order:
                run = mirror_round(kind, args)
                print(round_, "mirror", kind, json.dumps(run), flush=True)
                mirror_runs[kind].append(run)
    results = {}
    if "streams" in args.only:
        med = medians(streams_runs, STREAMS_FIGURES)
        results["streams"] = med
        results["streams_shoal_over_kafka"] = ratios(med, "kafka", STREAMS_FIGURES)["shoal"]
    if "mirror" in args.only:
        med = medians(mirror_runs, MIRROR_FIGURES)
        results["mirror"] = med
        results["mirror_over_mm2_kafka"] = ratios(med, "mm2-kafka", MIRROR_FIGURES)
    workload = {
        "streams": f"StreamsBench: {args.streams_records} clicks over 1000 pages into 3 "
                   "partitions, then PageCountsApp (exactly_once_v2, cache off, commit.interval.ms "
                   "100) from start until every output is committed; restore with the state "
                   "directory deleted, until RUNNING",
        "mirror": f"shoal-bench produce fills an {PARTITIONS}-partition topic on Apache Kafka "
                  f"for {args.seconds} s (1 KiB records, acks=all); catch-up from the first "
                  "sample (every 20 ms) finding mirrored records to the one finding all, over the "
                  "records copied in between; half load: shoal-bench produce --rate at half the "
                  f"catch-up records/s for {args.seconds} s, then at {args.common_rate} records/s "
                  f"for every kind, lag sampled every 100 ms",
        "shoal": "local store, defaults (fsync before acknowledging) but "
                 "initial_rebalance_delay_ms 0, as Kafka's",
        "kafka": "Apache Kafka 4.4.0, KRaft single node, defaults but "
                 "group.initial.rebalance.delay.ms 0",
        "mm2": "MirrorMaker 2 4.3.1, dedicated mode, identity policy, tasks.max 1, on the "
               "generator CPU (Shoal's mirror runs inside the destination broker, on its CPU)",
        "rounds": args.rounds, "broker_cpus": args.broker_cpus,
        "generator_cpus": args.bench_cpus,
    }
    write_results("platform-compare", "scripts/platform_compare.py", workload, results,
                  {"streams": streams_runs, "mirror": mirror_runs})


if __name__ == "__main__":
    main()
