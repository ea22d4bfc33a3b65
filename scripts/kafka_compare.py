#!/usr/bin/env python3
"""Shoal against Apache Kafka (and Tansu, when installed), one run, same cores, alternating
rounds: the yardstick of the performance issues.

Brokers, each fresh every round, on --broker-cpus (load on --bench-cpus):
- shoal: the local store with its defaults (objects appended with O_DIRECT to preallocated
  segment files; every produce acknowledged once its object is fsynced and committed);
- shoal-files: the same with `local_layout = "files"` (one file per object, through the page
  cache), only with --files;
- kafka-flush: Apache Kafka 4.4 (KRaft, one node) with log.flush.interval.messages=1, so an
  acknowledged batch is on disk as Shoal's is;
- kafka: Apache Kafka with its defaults (acknowledged in the page cache, flushed later);
- tansu: Tansu 0.6's memory engine, only with --tansu (needs `tansu` on the PATH).

Per broker and round, after a 3 s warm-up produce (the JVM's JIT, Shoal's buffers):
- max produce: shoal-bench produce, default flags (closed loop, 1 KiB records, acks=all):
  MB/s, p50/p99, and the broker's CPU seconds per GB produced;
- half load: shoal-bench produce at half of that broker's own max records/s (open loop): p50/p99;
- catch-up: shoal-bench consume of everything the max produce wrote, from offset 0: MB/s, the
  broker's and the consumer's CPU seconds per GB, and how busy the consumer kept its CPU;
- the clients users run, at their defaults (`client_matrix.py`): Kafka's ProducerPerformance on
  1 and 4 partitions, with and without idempotence, confluent-kafka's Producer, the latency of a
  small produce at low load, EndToEndLatency, ConsumerPerformance and a confluent-kafka consumer
  reading --consume-mb just written; each with the broker's CPU per GB and the client's CPU.

    python3 scripts/kafka_compare.py [--seconds 8] [--rounds 2] [--perf-records 300000] [--tansu]
        [--files] [--variant NAME=extra.toml] [--binary NAME=path/to/shoal]
        [--only shoal,kafka,...] [--no-bench]
        [--clients pp1,pp4,...]
        [--consume-mb 2000] [--label NAME]

Kafka runs from tests/java's pinned jars (`scripts/java_tests.sh -Dtest=NoSuchTest
-Dsurefire.failIfNoSpecifiedTests=false` writes their classpath). Writes
perf-results/<date>-kafka-compare.json.
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
import uuid

import client_matrix
from benchlib import cpu_seconds, free_port, stop, wait_for_port, write_results
from client_matrix import CLASSPATH, java
from peer_compare import bench, start_shoal, start_tansu

# As kafka-server-start.sh and kafka-run-class.sh start the broker.
KAFKA_JVM = ["-Xmx1G", "-Xms1G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
             "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
             "-Djava.awt.headless=true"]
LOG4J = """status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = warn
rootLogger.appenderRef.out.ref = out
"""


def start_kafka(work, cpus, flush_each_message, quick_group_joins=True):
    """quick_group_joins: group.initial.rebalance.delay.ms=0 (the platform scripts' groups
    start at once); False keeps Kafka's default 3 s, as Shoal's default is."""
    port, controller = free_port(), free_port()
    lines = [
        "process.roles=broker,controller", "node.id=1",
        f"controller.quorum.voters=1@127.0.0.1:{controller}",
        f"listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller}",
        f"advertised.listeners=PLAINTEXT://127.0.0.1:{port}",
        "controller.listener.names=CONTROLLER",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
        f"log.dirs={work / 'logs'}", "num.partitions=1",
        "offsets.topic.replication.factor=1", "transaction.state.log.replication.factor=1",
        "transaction.state.log.min.isr=1", "share.coordinator.state.topic.replication.factor=1",
        "share.coordinator.state.topic.min.isr=1",
    ]
    if quick_group_joins:
        lines.append("group.initial.rebalance.delay.ms=0")
        lines.append("group.streams.initial.rebalance.delay.ms=0")
    if flush_each_message:
        lines.append("log.flush.interval.messages=1")
    (work / "server.properties").write_text("\n".join(lines) + "\n")
    (work / "log4j2.properties").write_text(LOG4J)
    log4j = f"-Dlog4j2.configurationFile={work / 'log4j2.properties'}"
    subprocess.run(java(cpus, "kafka.tools.StorageTool", "format", "-t", uuid_base64(), "-c",
                        work / "server.properties", jvm=[log4j]),
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)
    process = subprocess.Popen(
        java(cpus, "kafka.Kafka", work / "server.properties", jvm=[*KAFKA_JVM, log4j]),
        stdout=open(work / "kafka.log", "wb"), stderr=subprocess.STDOUT)
    return process, port


def uuid_base64():
    """A cluster id in Kafka's form (a UUID in URL-safe base64 without padding). Like Kafka's
    Uuid.randomUuid, never one that starts with "-": StorageTool would read it as an option."""
    import base64
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def create(port, work, args, topic, *flags, timeout=90):
    """Creates `topic` by producing to it for a moment, again until no error is met: Kafka
    listens before it serves, and answers NOT_LEADER_OR_FOLLOWER for a new topic until its
    metadata has spread."""
    deadline = time.time() + timeout
    while True:
        try:
            bench("produce", port, work, args, "--topic", topic, "--create", "--duration-s", 0.2,
                  *flags)
            return
        except subprocess.CalledProcessError:
            if time.time() > deadline:
                raise
            time.sleep(0.5)


TOPIC_PARTITIONS = {"pp1": 1, "pp1_noidem": 1, "pp4": 4, "pp4_noidem": 4, "pp4_txn": 4,
                    "rdk4": 4, "low": 1, "e2e": 1}


def one_round(name, start, args):
    work = pathlib.Path(tempfile.mkdtemp())
    process, port = start(work)
    try:
        wait_for_port(port, 90)
        # The measured topics exist before their runs.
        for topic in ("peer", "half"):
            create(port, work, args, topic)
        for phase in args.client_phases:
            if phase in TOPIC_PARTITIONS:
                create(port, work, args, phase, "--partitions", TOPIC_PARTITIONS[phase])
        bench("produce", port, work, args, "--topic", "warmup", "--create", "--duration-s", 3)
        result = bench_phases(process, port, work, args) if args.bench else {}

        def write_for_consumers(topic, records):
            create(port, work, args, topic, "--partitions", 4)
            # Large batches, so the write is quick on every broker; the count is exact.
            client_matrix.producer_performance(port, process.pid, args.bench_cpus, topic,
                                               records, "batch.size=1048576", "linger.ms=20")
            os.sync()

        result["clients"] = client_matrix.run_phases(port, process.pid, args,
                                                     args.client_phases, write_for_consumers)
        return result
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def bench_phases(process, port, work, args):
    """shoal-bench's phases: max produce, half load, catch-up."""
    # Each measured phase starts with nothing left to write back from the one before.
    os.sync()
    before = cpu_seconds(process.pid)
    produce = bench("produce", port, work, args, "--topic", "peer", "--create",
                    "--duration-s", args.seconds)
    cpu = cpu_seconds(process.pid) - before
    written = produce["produce"]["records"]
    half_rate = max(1, int(written / args.seconds / 2))
    os.sync()
    half = bench("produce", port, work, args, "--topic", "half", "--create", "--rate", half_rate,
                 "--duration-s", args.seconds)
    os.sync()
    # The consumer's CPU shows whether catch-up is bound by the broker or by the one client.
    client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    broker_before = cpu_seconds(process.pid)
    catchup = bench("consume", port, work, args, "--topic", "peer", "--records", written,
                    "--duration-s", 60)
    broker_catchup_cpu = cpu_seconds(process.pid) - broker_before
    client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    client_cpu = (client_after.ru_utime - client_before.ru_utime
                  + client_after.ru_stime - client_before.ru_stime)
    catchup_bytes = max(catchup["consume"]["bytes"], 1)
    return {
        "produce_mb_per_s": produce["produce"]["mb_per_s"],
        "produce_p50_ms": produce["produce_latency_ms"]["p50"],
        "produce_p99_ms": produce["produce_latency_ms"]["p99"],
        "produce_errors": produce.get("produce_errors"),
        "broker_cpu_s_per_gb": round(cpu * 1e9 / max(produce["produce"]["bytes"], 1), 3),
        "half_load_records_per_s": half_rate,
        "half_load_p50_ms": half["produce_latency_ms"]["p50"],
        "half_load_p99_ms": half["produce_latency_ms"]["p99"],
        "catchup_mb_per_s": catchup["consume"]["mb_per_s"],
        "catchup_broker_cpu_s_per_gb": round(broker_catchup_cpu * 1e9 / catchup_bytes, 3),
        "catchup_client_cpu_s_per_gb": round(client_cpu * 1e9 / catchup_bytes, 3),
        # Of the consumer's one CPU, the share it kept busy while it read.
        "catchup_client_cpu_busy": round(client_cpu / max(catchup["consume"]["seconds"], 1e-3),
                                         2),
        "catchup_records": catchup["consume"]["records"], "records_written": written,
    }


def medians_of(rounds):
    """The median of each figure over the rounds that have it: shoal-bench's flat, the clients'
    as "phase.figure"."""
    samples = {}
    for one in rounds:
        flat = {k: v for k, v in one.items() if k in FIGURES}
        for phase, figures in one.get("clients", {}).items():
            flat.update({f"{phase}.{k}": v for k, v in figures.items()
                         if isinstance(v, (int, float))})
        for key, value in flat.items():
            if value is not None:
                samples.setdefault(key, []).append(value)
    return {key: statistics.median(values) for key, values in samples.items()}


FIGURES = ["produce_mb_per_s", "produce_p50_ms", "produce_p99_ms", "broker_cpu_s_per_gb",
           "half_load_p50_ms", "half_load_p99_ms", "catchup_mb_per_s",
           "catchup_broker_cpu_s_per_gb", "catchup_client_cpu_s_per_gb", "catchup_client_cpu_busy"]


def shoal_variant(cpus, extra_toml):
    return lambda work: start_shoal(work, cpus, None, extra_toml)


def shoal_binary(cpus, path):
    return lambda work: start_shoal(work, cpus, None, binary=path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--perf-records", type=int, default=300000)
    ap.add_argument("--tansu", action="store_true")
    ap.add_argument("--label", default="", help="the result file's name ends -LABEL")
    ap.add_argument("--files", action="store_true",
                    help="also Shoal with its local store's file-per-object layout")
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    ap.add_argument("--only", default="", help="comma-separated brokers to run (default: all)")
    ap.add_argument("--no-bench", dest="bench", action="store_false",
                    help="skip shoal-bench's phases (max produce, half load, catch-up)")
    ap.add_argument("--clients", default=",".join(p for p in client_matrix.PHASES
                                                   if p not in client_matrix.OPTIONAL_PHASES),
                    help="comma-separated client phases (client_matrix.PHASES), '' for none")
    ap.add_argument("--consume-mb", type=float, default=2000)
    ap.add_argument("--e2e-records", type=int, default=2000)
    ap.add_argument("--binary", action="append", default=[], metavar="NAME=PATH",
                    help="also run shoal-NAME: another build of shoal (the one before a change) "
                         "with the same config")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=FILE",
                    help="also Shoal with FILE's TOML added to its config, as broker shoal-NAME")
    args = ap.parse_args()
    args.client_phases = [p for p in args.clients.split(",") if p]
    if not CLASSPATH.exists():
        raise SystemExit(f"{CLASSPATH} is missing; see this script's docstring")
    cpus = args.broker_cpus
    variants = {name: pathlib.Path(file).read_text()
                for name, file in (v.split("=", 1) for v in args.variant)}
    binaries = dict(b.split("=", 1) for b in args.binary)
    brokers = {
        "shoal": lambda work: start_shoal(work, cpus, None),
        **({"shoal-files": lambda work: start_shoal(
            work, cpus, None, '[object_store]\nlocal_layout = "files"\n')} if args.files else {}),
        **{f"shoal-{name}": shoal_variant(cpus, toml) for name, toml in variants.items()},
        **{f"shoal-{name}": shoal_binary(cpus, path) for name, path in binaries.items()},
        "kafka-flush": lambda work: start_kafka(work, cpus, True, quick_group_joins=False),
        "kafka": lambda work: start_kafka(work, cpus, False, quick_group_joins=False),
    }
    if args.tansu:
        brokers["tansu"] = lambda work: start_tansu(work, cpus, None)
    if args.only:
        brokers = {name: brokers[name] for name in args.only.split(",")}
    runs = {name: [] for name in brokers}
    for round_ in range(args.rounds):
        # Alternate the order so drift on a shared machine hits every broker alike.
        order = list(brokers) if round_ % 2 == 0 else list(reversed(brokers))
        for name in order:
            run = one_round(name, brokers[name], args)
            print(round_, name, json.dumps(run), flush=True)
            runs[name].append(run)
    medians = {name: medians_of(rs) for name, rs in runs.items()}
    results = dict(medians)
    shoals = [name for name in brokers if name.startswith("shoal")]
    for ours in shoals:
        for peer in brokers:
            if peer != ours and (peer not in shoals or ours != "shoal"):
                results[f"{ours.replace('-', '_')}_over_{peer.replace('-', '_')}"] = {
                    k: round(medians[ours][k] / medians[peer][k], 2)
                    for k in medians[ours] if medians[peer].get(k) and medians[ours][k]}
    workload = {
        "produce": "shoal-bench produce, default flags (1 KiB records, 100 per batch, 8 "
                   "partitions, 4 connections x 8 in flight, acks=all, closed loop), after a 3 s "
                   "warm-up produce on every broker",
        "half_load": "shoal-bench produce --rate at half of the same broker's max records/s",
        "catchup": "shoal-bench consume of every record the max produce wrote, from offset 0",
        **client_matrix.WORKLOAD,
        "perf_records": args.perf_records, "consume_mb": args.consume_mb,
        "e2e_records": args.e2e_records,
        "seconds": args.seconds, "rounds": args.rounds,
        "shoal": "local store, one shard and the coordinator on the broker CPU, defaults "
                 "(local_layout segments, commit_interval_ms 5, fsync before acknowledging)",
        "shoal-files": "the same with [object_store] local_layout = \"files\" (with --files)",
        **{f"shoal-{name}": f"the same with {toml!r} added" for name, toml in variants.items()},
        **{f"shoal-{name}": f"the same config run by {path}" for name, path in binaries.items()},
        "kafka-flush": "Apache Kafka 4.4.0, KRaft single node, log.flush.interval.messages=1 "
                       "(acknowledged on disk), JVM flags as kafka-server-start.sh",
        "kafka": "the same with Kafka's defaults (acknowledged in the page cache; "
                 "group.initial.rebalance.delay.ms 3000 as Shoal's)",
        "broker_cpus": args.broker_cpus, "generator_cpus": args.bench_cpus,
    }
    name = "kafka-compare" + (f"-{args.label}" if args.label else "")
    write_results(name, "scripts/kafka_compare.py", workload, results, runs)


if __name__ == "__main__":
    main()
