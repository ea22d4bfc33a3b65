"""Operating the broker: its log as a file or JSON lines, `--version`, and the health and
readiness probes (and `shoal status`) following the object store as it goes and comes back."""

import json
import pathlib
import re
import subprocess
import time
import urllib.error
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import SHOAL_BIN, free_port


def get(port, path):
    """(status code, body) of a GET on the metrics listener."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=10) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as refused:
        return refused.code, refused.read().decode()


def status(port):
    """(exit status, output) of `shoal status`."""
    done = subprocess.run([SHOAL_BIN, "status", "--metrics", f"127.0.0.1:{port}"],
                          capture_output=True, text=True, timeout=30)
    return done.returncode, done.stdout


def test_version_names_the_commit():
    out = subprocess.run([SHOAL_BIN, "--version"], capture_output=True, text=True, check=True)
    assert re.fullmatch(r"shoal \d+\.\d+\.\d+ \(([0-9a-f]{12}(-dirty)?|unknown)\)\n",
                        out.stdout), out.stdout


def test_a_log_written_to_a_file_has_no_colour_and_json_logs_are_one_object_a_line(
        make_broker):
    text = make_broker("text").start()
    text.stop()
    assert "starting shoal" in text.log()
    assert "\x1b[" not in text.log(), text.log()[:300]

    broker = make_broker("json", "[log]\nformat = \"json\"\n").start()
    broker.stop()
    lines = broker.log().splitlines()
    assert lines
    events = [json.loads(line) for line in lines]
    for event in events:
        assert {"timestamp", "level", "target", "fields"} <= event.keys(), event
    started = next(e for e in events if e["fields"].get("message") == "starting shoal")
    assert started["level"] == "INFO" and started["fields"]["version"].startswith("0.")


def test_a_healthy_start_serve_and_stop_logs_no_error(make_broker):
    """Operators page on ERROR lines: a broker that starts on a new data directory, serves a
    producer and a consumer and stops as it should writes none (each start logged one, from
    glommio's probe of the disk through a write-only segment file)."""
    broker = make_broker("healthy").start()
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(100):
        producer.produce("healthy", key=f"k{i}".encode(), value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "healthy",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe(["healthy"])
    read, deadline = 0, time.time() + 30
    while read < 100 and time.time() < deadline:
        message = consumer.poll(0.5)
        read += message is not None and message.error() is None
    consumer.close()
    assert read == 100
    assert broker.stop() == 0
    errors = [line for line in broker.log().splitlines() if " ERROR " in line]
    assert errors == [], errors


def test_readiness_follows_the_object_store_and_shoal_status_says_why(make_broker, s3_server):
    metrics = free_port()
    broker = make_broker("probed", f'metrics_listen = "127.0.0.1:{metrics}"\n'
                         + s3_server.broker_config()).start()
    assert get(metrics, "/health") == (200, "ok\n")
    assert get(metrics, "/ready") == (200, "ready\n")
    assert status(metrics) == (0, "health: ok\nready: ready\n")

    s3_server.kill()
    # A store check is reused for 5 s: not ready within that and a check's own deadline.
    deadline = time.time() + 30
    while get(metrics, "/ready")[0] == 200 and time.time() < deadline:
        time.sleep(0.5)
    code, body = get(metrics, "/ready")
    assert code == 503 and "object store" in body, (code, body)
    assert get(metrics, "/health") == (200, "ok\n")
    exit_status, out = status(metrics)
    assert exit_status == 1 and "object store" in out, out

    s3_server.start()
    deadline = time.time() + 30
    while get(metrics, "/ready")[0] != 200 and time.time() < deadline:
        time.sleep(0.5)
    assert get(metrics, "/ready") == (200, "ready\n")
    # The outage shows in the object store's request counts.
    text = get(metrics, "/metrics")[1]
    failed = re.search(r'^shoal_object_store_requests_total\{operation="HeadBucket",'
                       r'outcome="(transport|timeout)"\} (\d+)$', text, re.M)
    ok = re.search(r'^shoal_object_store_requests_total\{operation="HeadBucket",'
                   r'outcome="ok"\} (\d+)$', text, re.M)
    assert failed and ok and int(ok.group(1)) >= 2, text

    broker.stop()
    exit_status, out = status(metrics)
    assert exit_status == 2 and "no answer" in out, out


def test_the_dashboard_and_the_metrics_doc_name_only_metrics_the_broker_exports(make_broker):
    metrics = free_port()
    broker = make_broker("scraped", f'metrics_listen = "127.0.0.1:{metrics}"\n').start()
    # A group 4 records behind on one partition and 3 on the other: its lag is exported.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("lagged", 2)])["lagged"].result(15)
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("lagged", b"x", partition=i % 2)
    producer.flush(15)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "laggards"})
    consumer.commit(offsets=[TopicPartition("lagged", 0, 1), TopicPartition("lagged", 1, 2)],
                    asynchronous=False)
    consumer.close()
    code, text = get(metrics, "/metrics")
    assert 'shoal_group_lag_records{group="laggards"} 7' in text, text
    assert 'shoal_group_lag_max_records{group="laggards"} 4' in text
    assert code == 200
    exported = set(re.findall(r"^# TYPE (\S+) ", text, re.M))
    helped = set(re.findall(r"^# HELP (\S+) ", text, re.M))
    assert exported and helped == exported, exported ^ helped
    connections = re.search(r'^shoal_connections\{shard="\d+"\} (\d+)$', text, re.M)
    assert connections, "shoal_connections is not exported per shard"

    docs = pathlib.Path(__file__).resolve().parents[2] / "docs"
    documented = set(re.findall(r"^\| `(shoal_\w+)` \|", (docs / "metrics.md").read_text(), re.M))
    assert documented == exported, documented ^ exported

    dashboard = json.loads((docs / "grafana" / "shoal.json").read_text())
    named = set()
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            for name in re.findall(r"shoal_\w+", target["expr"]):
                named.add(re.sub(r"_(bucket|sum|count)$", "", name)
                          if name not in exported else name)
    assert named and named <= exported, named - exported
    # What the dashboard shows of an operator's daily questions.
    for wanted in ("shoal_produce_bytes_in_total", "shoal_request_duration_seconds",
                   "shoal_commit_duration_seconds", "shoal_wal_object_bytes",
                   "shoal_wal_upload_duration_seconds", "shoal_wal_upload_failures_total",
                   "shoal_request_memory_bytes", "shoal_connections",
                   "shoal_mirror_lag_records", "shoal_compaction_lag_seconds",
                   "shoal_group_lag_records", "shoal_object_store_requests_total"):
        assert wanted in named, wanted
