#!/usr/bin/env python3
"""Where a small produce's time and the broker's CPU go, for issue 63's profiles.

1. Low load (ProducerPerformance at 200 records/s, one request at a time): the kernel's
   io_uring and scheduler tracepoints on the broker's CPU for 2 s, and for each WAL object
   the time between its steps: the segment write, its fsync, the hop to the coordinator, the
   coordinator's log write and its fsync, and the hop back to the shard.
2. Full speed (ProducerPerformance at the Java producer's defaults on one partition): the
   broker's CPU per object and per write, split by thread (shard, coordinator, the io_uring
   workers) and between kernel and user space (perf, cpu-clock samples).

    python3 scripts/produce_breakdown.py --label NAME [--extra-toml FILE] [BIN]

Broker on CPU 0 (one shard and the coordinator, on the shard's thread unless the extra TOML
says own_executor), the producer on CPU 1. Needs perf
and the Java classpath (see kafka_compare.py). Writes
perf-results/<date>-produce-breakdown-<label>.json.
"""

import argparse
import pathlib
import re
import shutil
import statistics
import subprocess
import tempfile

import client_matrix
from ab_java_producer import create_topic
from ab_produce import start
from benchlib import ROOT, cpu_seconds, free_port, scrape_metrics, stop, write_results

TRACEPOINTS = ["io_uring:io_uring_submit_req", "io_uring:io_uring_complete",
               "io_uring:io_uring_queue_async_work", "sched:sched_switch", "sched:sched_wakeup"]
STEPS = ["segment write", "segment fsync", "hop to the coordinator", "log write",
         "log fsync", "hop back to the shard", "total"]
EVENT = re.compile(r"\s*(\S+)\s+\d+\s+([\d.]+):\s+(\S+):\s*(.*)")


def start_with_topic(binary, work, extra_toml):
    """The broker with /metrics and a one-partition topic "t": (process, port, metrics port)."""
    metrics = free_port()
    process, bootstrap, _ = start(binary, work, extra_toml, metrics)
    create_topic(bootstrap, 1)
    return process, int(bootstrap.rsplit(":", 1)[1]), metrics


def steps_of_objects(trace_text):
    """Per WAL object, the microseconds of each step, read from the tracepoints: the shard's
    WRITE_FIXED (the segment write), its FSYNC and that FSYNC's completion, the coordinator's
    write punted to a worker (the log append), its FSYNC and that one's completion, and the
    shard running again. The coordinator's steps come from its own thread or, where it runs
    on the shard's executor, from the shard's."""
    events = []
    for line in trace_text.splitlines():
        match = EVENT.match(line)
        if match:
            comm, at, name, rest = match.groups()
            events.append((comm, float(at) * 1e6, name, rest))
    found, i = [], 0
    while i < len(events):
        comm, at, _, rest = events[i]
        if not (comm.startswith("shard") and "opcode WRITE_FIXED" in rest):
            i += 1
            continue
        marks, request, j = [at], None, i + 1
        while j < len(events) and events[j][1] - at < 20_000 and len(marks) < 7:
            c, t, name, r = events[j]
            step = len(marks)
            if step in (1, 4) and "opcode FSYNC" in r and c.startswith(
                    "shard" if step == 1 else ("coord", "shard")):
                marks.append(t)
                request = re.search(r"req (\S+),", r).group(1)
            elif step in (2, 5) and "io_uring_complete" in name and request in r:
                marks.append(t)
            elif step == 3 and c.startswith(("coord", "shard")) and "hashed queue" in r:
                marks.append(t)
            elif step == 6 and "sched_switch" in name and "next_comm=shard" in r:
                marks.append(t)
            j += 1
        if len(marks) == 7:
            found.append([b - a for a, b in zip(marks, marks[1:])] + [marks[-1] - marks[0]])
        i = j
    return found


def low_load(binary, work, extra_toml):
    process, port, _ = start_with_topic(binary, work, extra_toml)
    trace = work / "trace.data"
    try:
        # From 2 s in (the producer's JVM started and sending) for 2 s.
        events = " ".join(f"-e {t}" for t in TRACEPOINTS)
        recorder = subprocess.Popen(
            ["sh", "-c", f"sleep 2; exec perf record {events} -C 0 -o {trace} -- sleep 2"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        client_matrix.producer_performance(port, process.pid, "1", "t", 1000, throughput=200)
        recorder.wait(60)
    finally:
        stop(process)
    text = subprocess.run(["perf", "script", "-i", trace, "-F", "comm,tid,time,event,trace"],
                          capture_output=True, text=True, check=True).stdout
    objects = steps_of_objects(text)
    return {"objects": len(objects),
            **{step: {"p50_us": round(statistics.median(o[k] for o in objects)),
                      "mean_us": round(statistics.mean(o[k] for o in objects))}
               for k, step in enumerate(STEPS)}} if objects else {"objects": 0}


def full_speed(binary, work, records, extra_toml):
    process, port, metrics = start_with_topic(binary, work, extra_toml)
    profile = work / "cpu.data"
    try:
        before = scrape_metrics(metrics)
        recorder = subprocess.Popen(
            ["perf", "record", "-e", "cpu-clock", "-F", "999", "-p", str(process.pid), "-o",
             profile, "--", "sleep", "8"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        cpu_before = cpu_seconds(process.pid)
        run = client_matrix.producer_performance(port, process.pid, "1", "t", records)
        cpu = cpu_seconds(process.pid) - cpu_before
        recorder.wait(60)
        after = scrape_metrics(metrics)
    finally:
        stop(process)
    objects = after["shoal_wal_objects_uploaded_total"] - before.get(
        "shoal_wal_objects_uploaded_total", 0)
    writes = after["shoal_coordinator_batches_committed_total"] - before.get(
        "shoal_coordinator_batches_committed_total", 0)
    shares = {}
    for sort in ("comm", "dso"):
        report = subprocess.run(["perf", "report", "-i", profile, "--no-children", "--sort", sort,
                                 "--stdio", "-g", "none"], capture_output=True, text=True).stdout
        for percent, name in re.findall(r"^\s+([\d.]+)%\s+(\S+)", report, re.M):
            # io_uring's workers are named after the thread they serve: one family.
            key = sort + ":" + re.sub(r"-\d+$", "", name)
            shares[key] = round(shares.get(key, 0) + float(percent), 1)
    return {**run, "objects": objects, "writes": writes,
            "writes_per_object": round(writes / max(objects, 1), 2),
            "broker_cpu_us_per_object": round(cpu * 1e6 / max(objects, 1)),
            "broker_cpu_us_per_write": round(cpu * 1e6 / max(writes, 1)),
            "cpu_share_percent": shares}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", required=True)
    ap.add_argument("--records", type=int, default=600_000)
    ap.add_argument("--extra-toml", type=pathlib.Path, help="TOML added to the broker's config")
    ap.add_argument("binary", nargs="?", default=str(ROOT / "target" / "release" / "shoal"))
    args = ap.parse_args()
    if not shutil.which("perf"):
        raise SystemExit("perf is missing (apt-get install linux-perf)")
    extra_toml = args.extra_toml.read_text() if args.extra_toml else ""
    work = pathlib.Path(tempfile.mkdtemp())
    try:
        (work / "low").mkdir()
        (work / "full").mkdir()
        results = {"low_load": low_load(args.binary, work / "low", extra_toml),
                   "full_speed": full_speed(args.binary, work / "full", args.records,
                                            extra_toml)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    workload = {
        "low_load": "ProducerPerformance --throughput 200 --num-records 1000, 1 KiB records, the "
                    "Java producer's defaults, one partition; io_uring and sched tracepoints on "
                    "CPU 0 for 2 s from 2 s in; each step's time from the previous step's mark",
        "full_speed": f"ProducerPerformance --throughput -1 --num-records {args.records}, the "
                      "same producer; perf cpu-clock samples of the broker for 8 s",
        "binary": args.binary, "broker": "one shard and the coordinator on CPU 0, local store "
        "(segments), defaults", "extra_toml": extra_toml, "client_cpus": "1",
    }
    write_results(f"produce-breakdown-{args.label}", "scripts/produce_breakdown.py", workload,
                  results, {})


if __name__ == "__main__":
    main()
