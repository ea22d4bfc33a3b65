"""What the benchmark scripts share: ports, waiting for a broker, its CPU time and metrics (histograms
too), an s3s-fs server, sample percentiles, and writing a result document (workload, machine, results) to perf-results/."""

import datetime
import json
import os
import pathlib
import platform
import re
import shutil
import socket
import subprocess
import time
import urllib.request

ROOT = pathlib.Path(__file__).resolve().parents[1]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=30):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port} after {timeout}s")


def s3s_fs_binary():
    return shutil.which("s3s-fs") or str(pathlib.Path.home() / ".cargo" / "bin" / "s3s-fs")


def start_s3s_fs(root, key, secret, cpus="1", binary=None):
    """An s3s-fs server over `root` (a bucket is a directory in it) on `cpus`, ready to serve:
    (its process, its endpoint URL)."""
    port = free_port()
    process = subprocess.Popen(["taskset", "-c", cpus, binary or s3s_fs_binary(), "--host",
                                "127.0.0.1", "--port", str(port), "--access-key", key,
                                "--secret-key", secret, str(root)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port)
    except RuntimeError:
        process.kill()
        raise
    return process, f"http://127.0.0.1:{port}"


def alternating_rounds(rounds):
    """(round, side) for A/B runs: a b, then b a, ..., so drift hits both sides alike."""
    for round_ in range(rounds):
        for side in ("ab" if round_ % 2 == 0 else "ba"):
            yield round_, side


def stop(process, timeout=30):
    """SIGTERM, then SIGKILL if the process has not exited within `timeout` seconds."""
    process.terminate()
    try:
        process.wait(timeout)
    except subprocess.TimeoutExpired:
        process.kill()


def scrape_metrics(port):
    """The broker's Prometheus metrics at 127.0.0.1:`port`, each name's samples summed over
    their labels (a histogram's `_sum` and `_count` are names of their own)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read()
    values = {}
    for line in text.decode().splitlines():
        if not line or line.startswith("#"):
            continue
        sample, value = line.rsplit(" ", 1)
        name = sample.split("{", 1)[0]
        values[name] = values.get(name, 0.0) + float(value)
    return values


def histogram_buckets(text, family, selector=""):
    """A Prometheus histogram's cumulative counts in a scrape's `text`, {upper bound s: count}
    (+Inf as float("inf")), summed over the family's series whose labels contain `selector`
    (such as 'api="Produce"')."""
    found = {}
    for labels, value in re.findall(rf'^{re.escape(family)}_bucket\{{(.*)\}} (\S+)$', text, re.M):
        if selector in labels:
            bound = re.search(r'le="([^"]+)"', labels).group(1)
            bound = float("inf") if bound == "+Inf" else float(bound)
            found[bound] = found.get(bound, 0) + float(value)
    return found


def percentile(values, q):
    """The nearest-rank `q` quantile (0.5, 0.99) of the samples, None when there are none."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else None


def cpu_seconds(pid):
    """User + system CPU time of a process so far (its io-wq workers included)."""
    fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def write_results(name, tool, workload, results, runs):
    """perf-results/<date>-<name>.json; prints the results."""
    document = {
        "tool": tool, "workload": workload,
        "machine": {"cpus": os.cpu_count(), "kernel": platform.release()},
        "results": results, "runs": runs,
    }
    path = ROOT / "perf-results" / f"{datetime.date.today().isoformat()}-{name}.json"
    path.write_text(json.dumps(document, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    print(f"wrote {path}")
