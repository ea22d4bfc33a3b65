#!/usr/bin/env python3
"""Shard scaling on a many-core machine: max produce with 1, 2, 4, 8, 14 shards, the load
generator pinned to the CPUs the broker does not use. Made to run in a few minutes on a
16-CPU machine from prebuilt binaries (no cargo needed there):

    python3 scripts/scaling.py [--shards 1,2,4,8,14] [--seconds 8] [--bin-dir target/release]
                               [--stores disk,tmpfs]

Core use: shard i runs on CPU i, the coordinator shares CPU 0 with shard 0, the generator
(shoal-bench) gets every CPU from N to the last. Each shard count gets 8 partitions per shard
and 4 connections per shard (SO_REUSEPORT spreads them), 1 KiB records, 100 per batch,
acks=all. `disk` keeps the data directory on the machine's disk (O_DIRECT writes, fsync);
`tmpfs` puts it in /dev/shm, which shows the CPU side alone. The broker's and the generator's
CPU use are recorded, so a generator that ran out of CPUs is visible. Writes
perf-results/<date>-scaling-<cpus>cpu.json.
"""

import argparse
import json
import os
import pathlib
import resource
import shutil
import subprocess
import tempfile
import time

from benchlib import ROOT, cpu_seconds, free_port, wait_for_port, write_results


def allow_locked_memory():
    """io_uring registers memory per executor; root may lift the limit, others must fit it."""
    try:
        resource.setrlimit(resource.RLIMIT_MEMLOCK,
                           (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    except (ValueError, OSError):
        pass
    return resource.getrlimit(resource.RLIMIT_MEMLOCK)[0]


def io_memory_per_executor(executors, memlock):
    if memlock == resource.RLIM_INFINITY:
        return 2 << 20
    return max(256 << 10, min(2 << 20, memlock // (executors + 1)) // 4096 * 4096)


def start_broker(bin_dir, work, shards, memlock):
    port, metrics = free_port(), free_port()
    cores = ", ".join(str(c) for c in range(shards))
    config = work / "shoal.toml"
    config.write_text(
        f'listen = "127.0.0.1:{port}"\nmetrics_listen = "127.0.0.1:{metrics}"\n'
        f'data_dir = "{work / "data"}"\n'
        f"[shards]\ncores = [{cores}]\n"
        f"io_memory_bytes = {io_memory_per_executor(shards + 1, memlock)}\n"
        f"[coordinator]\ncore = 0\n")
    log = open(work / "shoal.log", "wb")
    process = subprocess.Popen([bin_dir / "shoal", "--config", config],
                               stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_for_port(port)
    except RuntimeError:
        process.kill()
        raise SystemExit(f"the broker did not start:\n{(work / 'shoal.log').read_text()[-3000:]}")
    return process, port, metrics, config


def run_one(args, store_root, shards, generator_cpus, memlock):
    work = pathlib.Path(tempfile.mkdtemp(prefix=f"scale{shards}-", dir=store_root))
    try:
        process, port, metrics, config = start_broker(args.bin_dir, work, shards, memlock)
        output = work / "bench.json"
        command = [args.bin_dir / "shoal-bench", "produce", "--bootstrap", f"127.0.0.1:{port}",
                   "--topic", "scale", "--create", "--partitions", str(8 * shards),
                   "--connections", str(4 * shards), "--duration-s", str(args.seconds),
                   "--message-bytes", "1024", "--records-per-batch", "100", "--acks", "-1",
                   "--cpus", ",".join(map(str, generator_cpus)), "--broker-config", str(config),
                   "--label", f"scaling-{shards}shards", "--output", str(output)]
        broker_cpu, started = cpu_seconds(process.pid), time.time()
        bench = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True, timeout=args.seconds * 4 + 60)
        wall = time.time() - started
        broker_cpu = cpu_seconds(process.pid) - broker_cpu
        process.terminate()
        process.wait(timeout=30)
        if bench.returncode != 0:
            raise SystemExit(f"shoal-bench failed with {shards} shards: {bench.stderr[-2000:]}")
        results = json.loads(output.read_text())["results"]
        produce = results["produce"]
        return {
            "shards": shards, "generator_cpus": len(generator_cpus),
            "mb_per_s": produce["mb_per_s"], "records_per_s": produce["records_per_s"],
            "produce_errors": results["produce_errors"],
            "latency_ms": results["produce_latency_ms"],
            # CPU seconds per wall second, over topic creation, warm-up and the measured run.
            "broker_cpus_busy": round(broker_cpu / wall, 2),
        }
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", default="1,2,4,8,14")
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--bin-dir", type=pathlib.Path, default=ROOT / "target" / "release")
    ap.add_argument("--stores", default="disk,tmpfs")
    args = ap.parse_args()
    cpus = os.cpu_count()
    memlock = allow_locked_memory()
    counts = [int(n) for n in args.shards.split(",") if int(n) < cpus]
    roots = {"disk": None, "tmpfs": "/dev/shm"}
    results, runs = {}, []
    for store in args.stores.split(","):
        per_count = []
        for shards in counts:
            generator = list(range(shards, cpus))
            run = run_one(args, roots[store], shards, generator, memlock)
            run["store"] = store
            runs.append(run)
            per_count.append(run)
            print(json.dumps(run), flush=True)
        one = per_count[0]["mb_per_s"]
        results[store] = {
            f"{r['shards']}_shards": {"mb_per_s": r["mb_per_s"],
                                      "speedup_vs_1": round(r["mb_per_s"] / one, 2),
                                      "p99_ms": r["latency_ms"]["p99"],
                                      "broker_cpus_busy": r["broker_cpus_busy"],
                                      "generator_cpus": r["generator_cpus"]}
            for r in per_count}
    workload = {"mode": "produce (closed loop)", "message_bytes": 1024, "records_per_batch": 100,
                "acks": -1, "partitions": "8 per shard", "connections": "4 per shard",
                "max_in_flight_per_connection": 8, "seconds": args.seconds,
                "core_use": "shard i on CPU i, coordinator on CPU 0, generator on CPUs N..last",
                "memlock_limit": "unlimited" if memlock == resource.RLIM_INFINITY else memlock}
    write_results(f"scaling-{cpus}cpu", "scripts/scaling.py", workload, results, runs)


if __name__ == "__main__":
    main()
