"""shoal-bench against the real broker: what it reports must match what the broker stored."""

import json
import os
import subprocess

from conftest import ROOT

BENCH = os.environ.get("SHOAL_BENCH_BIN", str(ROOT / "target" / "release" / "shoal-bench"))


def bench(*args):
    out = subprocess.run([BENCH, *args], check=True, capture_output=True, text=True, timeout=120)
    return out


def test_produce_then_consume_counts_agree(broker, tmp_path):
    report = tmp_path / "produce.json"
    bench("produce", "--bootstrap", broker.bootstrap, "--topic", "b", "--partitions", "3",
          "--create", "--duration-s", "1.5", "--rate", "20000", "--records-per-batch", "50",
          "--connections", "2", "--compression", "lz4", "--output", str(report))
    produced = json.loads(report.read_text())
    assert produced["workload"]["rate_records_per_s"] == 20000
    assert produced["machine"]["cores"] >= 1
    results = produced["results"]
    assert results["produce_errors"] == 0
    records = results["produce"]["records"]
    # Open loop at 20,000 records/s for 1.5 s, in batches of 50.
    assert 25_000 <= records <= 30_000, records
    assert results["produce_latency_ms"]["count"] == records // 50
    consumed_path = tmp_path / "consume.json"
    bench("consume", "--bootstrap", broker.bootstrap, "--topic", "b", "--partitions", "3",
          "--duration-s", "20", "--records", str(records), "--output", str(consumed_path))
    consumed = json.loads(consumed_path.read_text())["results"]["consume"]
    assert consumed["records"] == records


def test_end_to_end_mode_reads_everything_it_wrote(broker, tmp_path):
    report = tmp_path / "e2e.json"
    bench("e2e", "--bootstrap", broker.bootstrap, "--topic", "e", "--partitions", "2",
          "--create", "--duration-s", "1", "--rate", "5000", "--output", str(report))
    results = json.loads(report.read_text())["results"]
    assert results["consume"]["records"] == results["produce"]["records"] > 0
    assert results["end_to_end_latency_ms"]["count"] == results["produce"]["records"]
    assert 0 < results["end_to_end_latency_ms"]["p50"] < 5000


def test_metrics_endpoint_reports_the_load_and_the_bench_saves_a_scrape(make_broker, tmp_path):
    from conftest import free_port

    metrics_port = free_port()
    broker = make_broker("metrics", f'metrics_listen = "127.0.0.1:{metrics_port}"').start()
    report = tmp_path / "run.json"
    bench("produce", "--bootstrap", broker.bootstrap, "--topic", "m", "--partitions", "2",
          "--create", "--duration-s", "1", "--rate", "5000", "--output", str(report),
          "--metrics", f"127.0.0.1:{metrics_port}")
    scrape = (tmp_path / "run.metrics.txt").read_text()
    values = {}
    for line in scrape.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    produced = json.loads(report.read_text())["results"]["produce"]
    assert values['shoal_requests_total{api="Produce"}'] >= produced["records"] / 100
    assert values["shoal_produce_bytes_in_total"] >= produced["bytes"]
    assert values["shoal_wal_objects_uploaded_total"] > 0
    assert values["shoal_coordinator_batches_committed_total"] >= produced["records"] / 100
    assert values["shoal_commit_duration_seconds_count"] > 0
    assert values['shoal_request_duration_seconds_count{api="Produce"}'] > 0
    assert 'shoal_wal_objects_in_flight{shard="0"}' in values
