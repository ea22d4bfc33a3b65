#!/usr/bin/env python3
"""What rewriting (merging and compaction, issue 27) costs and buys, in one run of one build:

1. rewrite throughput: a partition's data written with rewriting off, then the broker
   restarted with it on; each pass's bytes read per second (its log line), the broker's CPU
   per GB rewritten, and its peak memory (VmHWM) over the pass;
2. the key-map bound: a compaction of many unique keys with dedupe_buffer_bytes small enough
   to take several passes, against one large enough for one pass: peak memory of each;
3. produce with merging running against without: alternating rounds of closed-loop
   shoal-bench produce, throughput and p99 (merging every 200 ms whatever the bytes);
4. a catch-up read on s3s-fs before and after merging: objects in the bucket and GETs (the
   broker's store reads, `shoal_fetch_cache_misses_total`, cold cache) per GB read.

Broker: one shard and the coordinator on CPU 0; load generators (and s3s-fs) on CPU 1.

    python3 scripts/rewrite_bench.py [--seconds 8] [--rounds 3] [--phases 1234] [--label L]

Writes perf-results/<date>-rewrite.json."""

import argparse
import json
import pathlib
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from benchlib import ROOT, cpu_seconds, free_port, scrape_metrics, wait_for_port, write_results

SHOAL = ROOT / "target" / "release" / "shoal"
BENCH = ROOT / "target" / "release" / "shoal-bench"
KEY, SECRET, BUCKET = "KEY", "SECRET", "shoal"
REWRITE_OFF = "[rewrite]\ncheck_interval_ms = 0\n"
# Every share of every object, whatever its size (the local store's default merges only
# shares under 16 KiB).
MERGE_ALL_SHARES = "merge_below_bytes = 1099511627776\n"
MERGE_ALWAYS = ("[rewrite]\ncheck_interval_ms = 200\nmerge_min_bytes = 1\nmerge_max_age_ms = 0\n"
                + MERGE_ALL_SHARES)
UNLIMITED = "io_max_bytes_per_second = 0\n"
COMPACT = {"cleanup.policy": "compact", "min.cleanable.dirty.ratio": "0.01", "segment.ms": "1"}
PASS_LINE = re.compile(r'rewrote a partition topic="([^"]+)" partition=(\d+) kind=(\w+) '
                       r"bytes_read=(\d+) objects=(\d+) records_removed=(\d+) keys=(\d+) "
                       r"lost_race=(\w+) ms=(\d+)")


class Broker:
    def __init__(self, work, extra, s3_endpoint=None):
        self.work = pathlib.Path(work)
        self.work.mkdir(parents=True, exist_ok=True)
        self.port, self.metrics_port = free_port(), free_port()
        self.log = self.work / "shoal.log"
        store = ""
        if s3_endpoint:
            store = (f'[object_store]\nkind = "s3"\nendpoint = "{s3_endpoint}"\n'
                     f'bucket = "{BUCKET}"\n')
        self.config = self.work / "shoal.toml"
        self.config.write_text(
            f'listen = "127.0.0.1:{self.port}"\ndata_dir = "{self.work / "data"}"\n'
            f'metrics_listen = "127.0.0.1:{self.metrics_port}"\n'
            "[shards]\ncores = [0]\n[coordinator]\ncore = 0\nfile_cleaner_interval_ms = 500\n"
            f"file_cleaner_grace_ms = 1000\n{store}{extra}")
        self.process = None

    @property
    def bootstrap(self):
        return f"127.0.0.1:{self.port}"

    def start(self):
        env = {"AWS_ACCESS_KEY_ID": KEY, "AWS_SECRET_ACCESS_KEY": SECRET, "PATH": "/usr/bin:/bin",
               "NO_COLOR": "1"}
        self.process = subprocess.Popen(["taskset", "-c", "0", SHOAL, "--config", self.config],
                                        env=env, stdout=open(self.log, "ab"),
                                        stderr=subprocess.STDOUT)
        wait_for_port(self.port)
        return self

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(60)

    def metric(self, name):
        return scrape_metrics(self.metrics_port).get(name, 0.0)

    def peak_memory_bytes(self):
        status = pathlib.Path(f"/proc/{self.process.pid}/status").read_text()
        return int(re.search(r"VmHWM:\s+(\d+) kB", status).group(1)) * 1024

    def passes(self):
        text = re.sub(r"\x1b\[[0-9;]*m", "", self.log.read_text(errors="replace"))
        return [dict(zip(("topic", "partition", "kind", "bytes_read", "objects",
                          "records_removed", "keys", "lost_race", "ms"), m.groups()))
                for m in PASS_LINE.finditer(text)]


def bench(args, output_name):
    out = pathlib.Path(tempfile.mktemp(suffix=".json"))
    done = subprocess.run(["taskset", "-c", "1", BENCH] + args + ["--output", out],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"shoal-bench {' '.join(map(str, args))} failed: {done.stderr[-2000:]}")
    return json.loads(out.read_text())["results"]


def produce_keyed(bootstrap, topic, records, keys, value_bytes):
    """confluent-kafka on CPU 1: `records` records over `keys` keys, in order."""
    script = f"""
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic
admin = AdminClient({{"bootstrap.servers": "{bootstrap}"}})
admin.create_topics([NewTopic("{topic}", 1, config={json.dumps(COMPACT)})])["{topic}"].result(15)
p = Producer({{"bootstrap.servers": "{bootstrap}", "linger.ms": 20, "batch.size": 1000000,
              "queue.buffering.max.messages": 1000000, "compression.type": "none"}})
value = bytes(range(256)) * ({value_bytes} // 256)
for i in range({records}):
    while True:
        try:
            p.produce("{topic}", key=b"key-%d" % (i % {keys}), value=value)
            break
        except BufferError:
            p.poll(0.01)
p.flush(120)
"""
    subprocess.run(["taskset", "-c", "1", sys.executable, "-c", script], check=True)


def wait_for_passes(broker, count, timeout=600):
    deadline = time.time() + timeout
    while len(broker.passes()) < count:
        assert time.time() < deadline, broker.log.read_text()[-3000:]
        time.sleep(0.5)
    return broker.passes()


def rewrite_throughput(work, seconds):
    """Phase 1: merge and compaction passes over data written with rewriting off."""
    broker = Broker(work, REWRITE_OFF).start()
    produced = bench(["produce", "--bootstrap", broker.bootstrap, "--topic", "merge",
                      "--partitions", "1", "--create", "--duration-s", str(seconds)], "merge")
    produce_keyed(broker.bootstrap, "compact", 300_000, 100_000, 1024)
    broker.stop()
    broker.config.write_text(broker.config.read_text().replace(
        REWRITE_OFF, MERGE_ALWAYS.replace("200", "500") + UNLIMITED))
    broker.start()
    memory_before, cpu_before = broker.peak_memory_bytes(), cpu_seconds(broker.process.pid)
    passes = wait_for_passes(broker, 2)
    cpu = cpu_seconds(broker.process.pid) - cpu_before
    peak = broker.peak_memory_bytes() - memory_before
    broker.stop()
    rows = []
    for p in passes[:2]:
        mb = int(p["bytes_read"]) / 1e6
        rows.append({"kind": p["kind"], "mb_read": round(mb, 1),
                     "mb_per_s": round(mb / (int(p["ms"]) / 1000), 1),
                     "records_removed": int(p["records_removed"]), "keys": int(p["keys"])})
    total_gb = sum(int(p["bytes_read"]) for p in passes[:2]) / 1e9
    return {"passes": rows, "merge_produced_mb": produced["produce"]["bytes"] / 1e6,
            "broker_cpu_s_per_gb_rewritten": round(cpu / total_gb, 2),
            "peak_memory_growth_mb": round(peak / 1e6, 1)}


def key_map_bound(work):
    """Phase 2: 400k unique keys compacted with a 4 MiB key map (several passes) and with a
    64 MiB one (one pass); the peak memory each pass grew the broker by."""
    results = {}
    for name, budget in (("4MiB", 4 << 20), ("64MiB", 64 << 20)):
        broker = Broker(work / name, REWRITE_OFF).start()
        produce_keyed(broker.bootstrap, "unique", 400_000, 400_000, 256)
        broker.stop()
        broker.config.write_text(broker.config.read_text().replace(
            REWRITE_OFF, f"[rewrite]\ncheck_interval_ms = 500\ndedupe_buffer_bytes = {budget}\n"
            + UNLIMITED))
        broker.start()
        before = broker.peak_memory_bytes()
        deadline = time.time() + 600
        # Done when a pass maps no new key past the end (the cleaned offset reached it).
        while True:
            passes = broker.passes()
            if passes and sum(int(p["keys"]) for p in passes) >= 400_000:
                break
            assert time.time() < deadline
            time.sleep(0.5)
        results[name] = {"passes": len(passes),
                         "keys_per_pass": [int(p["keys"]) for p in passes],
                         "peak_memory_growth_mb": round(
                             (broker.peak_memory_bytes() - before) / 1e6, 1)}
        broker.stop()
    return results


def produce_impact(work, seconds, rounds):
    """Phase 3: closed-loop produce with merging running every 200 ms (at the default read
    rate limit, and without one; and with the local store's default merge_below_bytes, which
    leaves this producer's shares alone) against without merging."""
    variants = (("off", REWRITE_OFF), ("merging", MERGE_ALWAYS),
                ("merging_unlimited", MERGE_ALWAYS + UNLIMITED),
                ("local_default_shares", MERGE_ALWAYS.replace(MERGE_ALL_SHARES, "")))
    runs = {name: [] for name, _ in variants}
    for r in range(rounds):
        for name, extra in variants:
            broker = Broker(work / f"{name}-{r}", extra).start()
            result = bench(["produce", "--bootstrap", broker.bootstrap, "--topic", "load",
                            "--partitions", "4", "--create", "--duration-s", str(seconds)], name)
            rewritten = broker.metric("shoal_rewrite_bytes_read_total")
            broker.stop()
            # Each run writes gigabytes; nine of them would fill a small disk.
            shutil.rmtree(broker.work, ignore_errors=True)
            runs[name].append({"mb_per_s": result["produce"]["mb_per_s"],
                               "p99_ms": result["produce_latency_ms"]["p99"],
                               "rewritten_mb": round(rewritten / 1e6, 1)})
    median = lambda xs: sorted(xs)[len(xs) // 2]  # noqa: E731
    summary = {name: {"mb_per_s": median([x["mb_per_s"] for x in rs]),
                      "p99_ms": median([x["p99_ms"] for x in rs])} for name, rs in runs.items()}
    for name in ("merging", "merging_unlimited", "local_default_shares"):
        summary[name]["throughput_ratio"] = round(
            summary[name]["mb_per_s"] / summary["off"]["mb_per_s"], 2)
        summary[name]["p99_delta_ms"] = round(
            summary[name]["p99_ms"] - summary["off"]["p99_ms"], 2)
    return {"summary": summary, "rounds": runs}


def catch_up_gets(work, seconds, s3s_fs):
    """Phase 4: a catch-up read of everything on s3s-fs, before and after merging."""
    s3_root = work / "s3"
    (s3_root / BUCKET).mkdir(parents=True)
    s3_port = free_port()
    s3 = subprocess.Popen(["taskset", "-c", "1", s3s_fs, "--host", "127.0.0.1", "--port",
                           str(s3_port), "--access-key", KEY, "--secret-key", SECRET, s3_root],
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{s3_port}"
    objects = lambda: sum(1 for p in (s3_root / BUCKET).rglob("*") if p.is_file())  # noqa
    try:
        wait_for_port(s3_port)
        broker = Broker(work / "broker", REWRITE_OFF, endpoint).start()
        produced = bench(["produce", "--bootstrap", broker.bootstrap, "--topic", "catchup",
                          "--partitions", "4", "--create", "--duration-s", str(seconds)], "p")
        records = produced["produce"]["records"]
        broker.stop()

        def read():
            broker.start()  # a cold object cache
            misses = broker.metric("shoal_fetch_cache_misses_total")
            consumed = bench(["consume", "--bootstrap", broker.bootstrap, "--topic", "catchup",
                              "--partitions", "4", "--records", str(records),
                              "--duration-s", "300"], "c")["consume"]
            gets = broker.metric("shoal_fetch_cache_misses_total") - misses
            broker.stop()
            gb = consumed["bytes"] / 1e9
            return {"objects_in_bucket": objects(), "gets": int(gets),
                    "gets_per_gb": round(gets / gb, 1), "mb_per_s": consumed["mb_per_s"],
                    "read_mb": round(consumed["bytes"] / 1e6, 1)}

        before = read()
        broker.config.write_text(broker.config.read_text().replace(
            REWRITE_OFF, MERGE_ALWAYS + UNLIMITED))
        broker.start()
        wait_for_passes(broker, 4)
        deadline = time.time() + 120
        while any(not p.name.startswith("rw-") for p in (s3_root / BUCKET).rglob("wal/*")):
            assert time.time() < deadline, "WAL objects left after merging"
            time.sleep(0.5)
        broker.stop()
        broker.config.write_text(broker.config.read_text().replace(
            MERGE_ALWAYS + UNLIMITED, REWRITE_OFF))
        after = read()
        return {"produced_mb": round(produced["produce"]["bytes"] / 1e6, 1),
                "before_merge": before, "after_merge": after,
                "gets_ratio": round(after["gets"] / max(before["gets"], 1), 3)}
    finally:
        s3.terminate()
        s3.wait()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--phases", default="1234")
    ap.add_argument("--label", default="", help="the result file's name ends -LABEL")
    ap.add_argument("--s3s-fs-bin", default=shutil.which("s3s-fs") or
                    str(pathlib.Path.home() / ".cargo" / "bin" / "s3s-fs"))
    args = ap.parse_args()
    work = pathlib.Path(tempfile.mkdtemp(prefix="shoal-rewrite-bench-"))
    results = {}
    try:
        if "1" in args.phases:
            results["rewrite_throughput"] = rewrite_throughput(work / "one", args.seconds)
        if "2" in args.phases:
            results["key_map_bound"] = key_map_bound(work / "two")
        if "3" in args.phases:
            results["produce_impact"] = produce_impact(work / "three", args.seconds, args.rounds)
        if "4" in args.phases:
            results["catch_up_read"] = catch_up_gets(work / "four", args.seconds, args.s3s_fs_bin)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    workload = {
        "cores": "broker: one shard and the coordinator on CPU 0; shoal-bench, the Python "
                 "producer and s3s-fs on CPU 1",
        "rewrite_throughput": f"merge: shoal-bench produce {args.seconds}s to 1 partition "
                              "(1 KiB records, 100 a batch); compaction: 300k 1 KiB records over "
                              "100k keys (confluent-kafka); written with rewriting off, then "
                              "rewritten after a restart",
        "key_map_bound": "400k unique keys, 256-byte values, one partition, compacted with "
                         "dedupe_buffer_bytes 4 MiB and 64 MiB",
        "produce_impact": f"shoal-bench produce {args.seconds}s, 4 partitions, default flags, "
                          "closed loop; [rewrite] off vs merging every 200 ms "
                          "(merge_min_bytes 1, every share of every object) at the default "
                          "io_max_bytes_per_second (32 MiB/s) and unlimited, and with the local "
                          "store's default merge_below_bytes (16 KiB), "
                          f"{args.rounds} rounds, medians",
        "catch_up_read": f"shoal-bench produce {args.seconds}s to 4 partitions on s3s-fs "
                         "(commit_interval_ms 5), then a catch-up shoal-bench consume of every "
                         "record after a restart (cold cache), before and after merging",
    }
    name = "rewrite" + (f"-{args.label}" if args.label else "")
    write_results(name, "scripts/rewrite_bench.py", workload, results, [])


if __name__ == "__main__":
    main()
