#!/usr/bin/env python3
"""What TLS and SASL cost on the produce path: one broker with PLAINTEXT, SSL and SASL_SSL
(PLAIN) listeners; shoal-bench produces at full speed through each in turn, rounds
alternating so drift hits all three alike; medians and ratios to PLAINTEXT from the same run
go to perf-results/<date>-security-cost.json.

    python3 scripts/security_bench.py [--seconds 8] [--rounds 3]

Cores on a 2-CPU machine: the broker (one shard, coordinator beside it) on CPU 0, the
generator on CPU 1. TLS costs both sides: the generator encrypts too, on its own core.
"""

import argparse
import json
import pathlib
import shutil
import statistics
import subprocess
import sys
import tempfile

from benchlib import ROOT, cpu_seconds, free_port, wait_for_port, write_results

sys.path.insert(0, str(ROOT / "tests" / "integration"))
from tls_certs import CertificateAuthority  # noqa: E402

BIN = ROOT / "target" / "release"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--broker-cpu", default="0")
    ap.add_argument("--bench-cpu", default="1")
    args = ap.parse_args()
    subprocess.run(["cargo", "build", "--release", "--bin", "shoal", "--bin", "shoal-bench"],
                   cwd=ROOT, check=True)
    work = pathlib.Path(tempfile.mkdtemp())
    ca = CertificateAuthority(work / "ca")
    cert, key = ca.issue("broker", "/CN=localhost", server=True)
    ports = {"PLAINTEXT": free_port(), "SSL": free_port(), "SASL_SSL": free_port()}
    config = work / "shoal.toml"
    config.write_text(
        "listeners = \"" + ",".join(f"{name}://127.0.0.1:{port}" for name, port in ports.items())
        + "\"\n"
        f'data_dir = "{work / "data"}"\n'
        f"[shards]\ncores = [{args.broker_cpu}]\n[coordinator]\ncore = {args.broker_cpu}\n"
        f'[ssl]\ncertificate_file = "{cert}"\nkey_file = "{key}"\n'
        '[sasl]\nenabled_mechanisms = ["PLAIN"]\n[sasl.plain_users]\nbench = "bench-secret"\n')
    broker = subprocess.Popen([BIN / "shoal", "--config", config],
                              stdout=open(work / "shoal.log", "wb"), stderr=subprocess.STDOUT)
    try:
        for port in ports.values():
            wait_for_port(port)
        flags = {
            "PLAINTEXT": [],
            "SSL": ["--security-protocol", "SSL", "--ssl-ca-file", str(ca.ca_cert)],
            # As Kafka's tools take it: the password in a properties file, not on the command line.
            "SASL_SSL": ["--command-config", str(work / "sasl_ssl.properties")],
        }
        (work / "sasl_ssl.properties").write_text(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=bench\n"
            f"sasl.password=bench-secret\nssl.ca.location={ca.ca_cert}\n")
        runs = {name: [] for name in ports}
        for round_index in range(args.rounds):
            for name, port in ports.items():
                out = work / f"{name}-{round_index}.json"
                cpu_before = cpu_seconds(broker.pid)
                subprocess.run(
                    [BIN / "shoal-bench", "produce", "--bootstrap", f"127.0.0.1:{port}",
                     "--create", "--topic", "security-bench", "--duration-s", str(args.seconds),
                     "--cpus", args.bench_cpu, "--output", out, "--label", name, *flags[name]],
                    check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                result = json.loads(out.read_text())
                produced = result["results"]["produce"]
                result["broker_cpu_seconds"] = round(cpu_seconds(broker.pid) - cpu_before, 2)
                result["broker_cpu_ms_per_gb"] = round(
                    result["broker_cpu_seconds"] * 1000 / (produced["bytes"] / 1e9), 1)
                runs[name].append(result)
        summary = {}
        for name, results in runs.items():
            mb = [r["results"]["produce"]["mb_per_s"] for r in results]
            p99 = [r["results"]["produce_latency_ms"]["p99"] for r in results]
            cpu = [r["broker_cpu_ms_per_gb"] for r in results]
            summary[name] = {"mb_per_s_runs": mb, "mb_per_s_median": statistics.median(mb),
                             "p99_ms_runs": p99, "p99_ms_median": statistics.median(p99),
                             "broker_cpu_ms_per_gb_runs": cpu,
                             "broker_cpu_ms_per_gb_median": statistics.median(cpu)}
        base = summary["PLAINTEXT"]
        for name in ("SSL", "SASL_SSL"):
            summary[name]["throughput_vs_plaintext"] = round(
                summary[name]["mb_per_s_median"] / base["mb_per_s_median"], 3)
            summary[name]["p99_vs_plaintext"] = round(
                summary[name]["p99_ms_median"] / base["p99_ms_median"], 3)
            summary[name]["broker_cpu_per_byte_vs_plaintext"] = round(
                summary[name]["broker_cpu_ms_per_gb_median"] / base["broker_cpu_ms_per_gb_median"],
                3)
        workload = {
            "generator": "shoal-bench produce, default flags (1 KiB records, 100 per batch, "
                         "8 partitions, 4 connections x 8 in flight, acks=all, closed loop)",
            "seconds_per_run": args.seconds, "rounds": args.rounds,
            "order": "PLAINTEXT, SSL, SASL_SSL in each round",
            "broker": f"one shard and the coordinator on CPU {args.broker_cpu}, local store",
            "generator_cpu": args.bench_cpu,
            "tls": "rustls (ring), TLS 1.3 negotiated, P-256 ECDSA certificate",
            "sasl": "PLAIN over TLS, one login per connection",
        }
        write_results("security-cost", "scripts/security_bench.py", workload, summary, runs)
    finally:
        broker.terminate()
        broker.wait(30)
        shutil.rmtree(work, ignore_errors=True)  # gigabytes of WAL objects


if __name__ == "__main__":
    main()
