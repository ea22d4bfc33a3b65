"""The clients users run, at their defaults, against one broker: the matrix of issue 63 that
`kafka_compare.py` runs on every broker of a round. Each phase returns its figures with the
broker's CPU seconds per GB it moved and how busy the client kept its one CPU (a client at
>= 0.95 is the bound, not the broker).

- pp1, pp4: Kafka's ProducerPerformance (the Java producer's defaults: idempotent, acks=all,
  batch.size 16384, linger.ms 5, five requests in flight), 1 KiB records, on 1 and 4 partitions;
- pp1_noidem, pp4_noidem: the same with enable.idempotence=false;
- pp4_txn: the same on 4 partitions in transactions of 100 ms (ProducerPerformance's
  --transaction-duration-ms), each committed: the Java producer runs transactions V2 where the
  broker finalizes transaction.version 2 (Kafka 4.4 and Shoal do by default);
- rdk4: confluent-kafka's Producer with no settings at all (librdkafka's defaults: acks=all,
  linger.ms 5, idempotence off), 1 KiB messages into 4 partitions, every one waited for;
- low: ProducerPerformance at 200 records/s: the acknowledgement latency of a small produce
  (send() to callback, the producer's linger included on every broker alike);
- e2e: Kafka's EndToEndLatency (one 512 B record at a time, acks=all, produce to consume);
- cp, rdk_consume: Kafka's ConsumerPerformance (the Java consumer's defaults) and a
  confluent-kafka consumer at its defaults, each reading --consume-mb written just before by
  shoal-bench into 4 partitions.
"""

import re
import resource
import shutil
import subprocess
import sys
import time

from benchlib import ROOT, cpu_seconds

CLASSPATH = ROOT / "tests" / "java" / "target" / "kafka.classpath"
PHASES = ["pp1", "pp4", "pp1_noidem", "pp4_noidem", "pp4_txn", "rdk4", "low", "e2e", "cp",
          "rdk_consume"]
# Not run unless asked for (--clients): each phase costs a minute a broker.
OPTIONAL_PHASES = ["pp4_txn"]
RECORD_BYTES = 1024
PERF_LINE = re.compile(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), "
                       r"([\d.]+) ms avg latency, ([\d.]+) ms max latency, (\d+) ms 50th, "
                       r"(\d+) ms 95th, (\d+) ms 99th")


def java(cpus, main_class, *args, jvm=()):
    return ["taskset", "-c", cpus, shutil.which("java"), *jvm, "-cp",
            CLASSPATH.read_text().strip(), main_class, *map(str, args)]


class Measured:
    """The broker's CPU and the client's (this script's waited-for children) over a phase."""

    def __init__(self, broker_pid):
        self.pid = broker_pid

    def __enter__(self):
        self.started = time.monotonic()
        self.broker = cpu_seconds(self.pid)
        self.client = resource.getrusage(resource.RUSAGE_CHILDREN)
        return self

    def __exit__(self, *_):
        self.seconds = time.monotonic() - self.started
        self.broker_cpu = cpu_seconds(self.pid) - self.broker
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        self.client_cpu = (after.ru_utime - self.client.ru_utime
                           + after.ru_stime - self.client.ru_stime)

    def figures(self, moved_bytes):
        """Broker CPU per GB moved, and the client's share of its one CPU."""
        return {"broker_cpu_s_per_gb": round(self.broker_cpu * 1e9 / max(moved_bytes, 1), 3),
                "client_cpu_busy": round(self.client_cpu / max(self.seconds, 1e-3), 2)}


def run(command, timeout):
    return subprocess.run(list(map(str, command)), check=True, capture_output=True, text=True, timeout=timeout)


def producer_performance(port, pid, cpus, topic, records, *props, throughput=-1, tool_args=()):
    with Measured(pid) as measured:
        done = run(java(cpus, "org.apache.kafka.tools.ProducerPerformance", "--topic", topic,
                        "--num-records", records, "--record-size", RECORD_BYTES,
                        "--throughput", throughput, *tool_args, "--producer-props",
                        f"bootstrap.servers=127.0.0.1:{port}", "acks=all", *props), 300)
    line = PERF_LINE.findall(done.stdout)[-1]
    return {"mb_per_s": float(line[2]), "p50_ms": int(line[5]), "p99_ms": int(line[7]),
            **measured.figures(records * RECORD_BYTES)}


def librdkafka_produce(port, pid, cpus, topic, records):
    with Measured(pid) as measured:
        done = run(["taskset", "-c", cpus, sys.executable, ROOT / "scripts" / "rdk_defaults.py",
                    "produce", f"127.0.0.1:{port}", topic, records], 300)
    seconds = float(done.stdout.strip())
    return {"mb_per_s": round(records * RECORD_BYTES / 1e6 / seconds, 1),
            **measured.figures(records * RECORD_BYTES)}


def end_to_end_latency(port, pid, cpus, records):
    with Measured(pid) as measured:
        done = run(java(cpus, "org.apache.kafka.tools.EndToEndLatency", "--bootstrap-server",
                        f"127.0.0.1:{port}", "--topic", "e2e", "--num-records", records,
                        "--producer-acks", "all", "--record-size", 512), 300)
    average = re.search(r"Avg latency: ([\d.]+) ms", done.stdout)
    tails = re.search(r"50th = (\d+), 99th = (\d+), 99.9th = (\d+)", done.stdout)
    return {"avg_ms": float(average.group(1)), "p50_ms": int(tails.group(1)),
            "p99_ms": int(tails.group(2)), **measured.figures(records * 512)}


def consumer_performance(port, pid, cpus, topic, records):
    with Measured(pid) as measured:
        done = run(java(cpus, "org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server",
                        f"127.0.0.1:{port}", "--topic", topic, "--num-records", records,
                        "--timeout", 30000), 300)
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    fields = [f.strip() for f in done.stdout.strip().splitlines()[-1].split(",")]
    consumed = float(fields[2]) * 1024 * 1024
    return {"mb_per_s": round(consumed / 1e6 / (float(fields[7]) / 1000), 1),
            "records": int(fields[4]), "rebalance_ms": int(fields[6]),
            **measured.figures(consumed)}


def librdkafka_consume(port, pid, cpus, topic, records):
    with Measured(pid) as measured:
        done = run(["taskset", "-c", cpus, sys.executable, ROOT / "scripts" / "rdk_defaults.py",
                    "consume", f"127.0.0.1:{port}", topic, records], 300)
    seconds, consumed = done.stdout.split()
    return {"mb_per_s": round(int(consumed) / 1e6 / float(seconds), 1),
            **measured.figures(int(consumed))}


def run_phases(port, pid, args, phases, write_for_consumers):
    """{phase: figures} for the phases asked for; write_for_consumers(topic, records) fills a
    4-partition topic for cp and rdk_consume."""
    cpus, records, out = args.bench_cpus, args.perf_records, {}
    idempotence_off = "enable.idempotence=false"
    for phase in phases:
        try:
            if phase in ("pp1", "pp4", "pp1_noidem", "pp4_noidem"):
                props = [idempotence_off] if phase.endswith("noidem") else []
                out[phase] = producer_performance(port, pid, cpus, phase, records, *props)
            elif phase == "pp4_txn":
                transactions = ["--transactional-id", "pp4-txn", "--transaction-duration-ms", 100]
                out[phase] = producer_performance(port, pid, cpus, phase, records,
                                                  tool_args=transactions)
            elif phase == "rdk4":
                out[phase] = librdkafka_produce(port, pid, cpus, phase, records)
            elif phase == "low":
                out[phase] = producer_performance(port, pid, cpus, "low", 2000, throughput=200)
            elif phase == "e2e":
                out[phase] = end_to_end_latency(port, pid, cpus, args.e2e_records)
            elif phase in ("cp", "rdk_consume"):
                count = int(args.consume_mb * 1e6 / RECORD_BYTES)
                if "consume" not in out:
                    write_for_consumers("consume", count)
                    out["consume"] = {"records": count}
                out[phase] = (consumer_performance if phase == "cp" else librdkafka_consume)(
                    port, pid, cpus, "consume", count)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as failed:
            out[phase] = {"failed": (str(failed) + str(getattr(failed, "stderr", "")))[-300:]}
        print("  ", phase, out[phase], flush=True)
    return out


WORKLOAD = {
    "pp1/pp4": "ProducerPerformance 4.4.0, --record-size 1024 --throughput -1, acks=all, the "
               "Java producer's other defaults (idempotent, batch.size 16384, linger.ms 5, "
               "max.in.flight 5), topic of 1 / 4 partitions",
    "pp1_noidem/pp4_noidem": "the same with enable.idempotence=false",
    "pp4_txn": "the pp4 producer with --transactional-id pp4-txn --transaction-duration-ms 100 "
               "(a commit every 100 ms; transactions V2 on both brokers)",
    "rdk4": "confluent-kafka Producer with only bootstrap.servers (librdkafka defaults: acks=all, "
            "linger.ms 5, batch.size 1000000, idempotence off), 1 KiB values, 4 partitions, "
            "every message acknowledged",
    "low": "ProducerPerformance --num-records 2000 --throughput 200, producer defaults: send() "
           "to acknowledgement, linger.ms 5 included",
    "e2e": "EndToEndLatency 4.4.0, acks all, 512 B records, one at a time",
    "cp": "ConsumerPerformance 4.4.0 at the Java consumer's defaults (a group, fetch.min.bytes "
          "1, max.poll.records 500), reading records shoal-bench just wrote into 4 partitions; "
          "MB/s over its fetch time (group join excluded, reported apart)",
    "rdk_consume": "confluent-kafka Consumer with a group and auto.offset.reset=earliest, else "
                   "defaults, reading the same records",
    "broker_cpu_s_per_gb": "broker CPU seconds per GB the phase produced or consumed",
    "client_cpu_busy": "the client's CPU seconds over the phase's wall seconds (it runs on one "
                       "CPU: >= 0.95 means the client is the bound)",
}
