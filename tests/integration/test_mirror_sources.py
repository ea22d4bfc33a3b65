"""Mirroring from Kafka-protocol brokers that are not Shoal.

Tansu 0.6 with its memory engine (`cargo install --locked tansu --version 0.6.0
--no-default-features --features dynostore`; its test is skipped where it is not installed, as
in CI, whose time would not hold its 15-minute build) answers some flexible versions with tagged
fields a strict decoder refuses, drops the connection on others, and has no KIP-1279 APIs: the
mirror steps down to pre-flexible versions, starts at offset 0 and copies compressed, idempotent
batches.

librdkafka's mock cluster (confluent-kafka's `test.mock.num.brokers`) takes idempotent and
transactional producers, but writes its transaction markers with a CRC of 0: the mirror copies
everything before such a marker and refuses the marker, as it must a damaged batch, so the
transaction stays open on the mirror (read_committed consumers wait at its first offset)."""

import os
import pathlib
import shutil
import socket
import subprocess
import sys
import textwrap
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
import pytest

from conftest import free_port
from test_mirror import FAST_RETRIES, cli, describe, end_offsets, wait_for

TANSU = shutil.which("tansu") or next(
    (str(p) for p in [pathlib.Path.home() / ".cargo" / "bin" / "tansu"] if p.exists()), None)

needs_tansu = pytest.mark.skipif(TANSU is None, reason="tansu is not installed")


class TansuSource:
    """What the mirror tests' helpers need of a broker: a bootstrap address."""

    def __init__(self, port):
        self.port = port
        self.bootstrap = f"127.0.0.1:{port}"


@pytest.fixture
def tansu(tmp_path):
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    process = subprocess.Popen(
        [TANSU, "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/"],
        stdout=open(tmp_path / "tansu.log", "wb"), stderr=subprocess.STDOUT,
        env=dict(os.environ))
    deadline = time.time() + 20
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            assert time.time() < deadline, "tansu did not start"
            time.sleep(0.05)
    yield TansuSource(port)
    process.kill()
    process.wait()


def produce(bootstrap, topic, count, start=0, partitions=3):
    """Idempotent, lz4-compressed, keyed records spread over the partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                         "compression.type": "lz4", "linger.ms": 5})
    for i in range(start, start + count):
        producer.produce(topic, key=f"k{i}".encode(), value=f"v{i}".encode(),
                         partition=i % partitions)
    assert producer.flush(30) == 0


def records(bootstrap, topic, partitions, expected, isolation="read_committed"):
    """Every (partition, offset, key, value) from offset 0, until `expected` are read."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "compare",
                         "enable.auto.commit": False, "isolation.level": isolation})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = {}
    deadline = time.time() + 30
    while len(seen) < expected and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and not m.error():
            seen[(m.partition(), m.offset())] = (m.key(), m.value())
    consumer.close()
    return seen


@needs_tansu
def test_a_tansu_topic_is_mirrored_at_identical_offsets_under_load_and_fails_over(
        tansu, make_broker):
    admin = AdminClient({"bootstrap.servers": tansu.bootstrap})
    admin.create_topics([NewTopic("orders", num_partitions=3)])["orders"].result(15)
    produce(tansu.bootstrap, "orders", 600)
    destination = make_broker("destination").start()
    cli(destination, "create", "dr", "--source", tansu.bootstrap, *FAST_RETRIES)
    assert "orders: mirroring" in cli(destination, "add", "dr", "orders").stdout
    # More records while the mirror runs.
    for round_ in range(3):
        produce(tansu.bootstrap, "orders", 150, start=600 + 150 * round_)
    # Tansu's ListOffsets answers a high watermark short of its Fetch's (301 where Fetch says
    # 350), so lag is judged by what was produced: 350 records per partition.
    wait_for(lambda: all(row[1] == 350 and row[3] == "MIRRORING"
                         for row in describe(destination).values()),
             60, "every partition mirrored to offset 350")
    source_records = records(tansu.bootstrap, "orders", 3, expected=1050)
    assert len(source_records) == 1050
    assert records(destination.bootstrap, "orders", 3, expected=1050) == source_records
    log = destination.log()
    assert "last version before the flexible encoding" in log, "the step down is logged"
    # Failover: the destination takes writes after the source's offsets.
    assert "orders: removed" in cli(destination, "remove", "dr", "orders").stdout
    produce(destination.bootstrap, "orders", 30, start=10_000)
    assert sum(end_offsets(destination, "orders", 3)) == 1080


MOCK_CLUSTER = textwrap.dedent("""
    import sys, time
    from confluent_kafka import Producer
    # This producer owns a one-broker mock cluster for as long as the process lives.
    owner = Producer({"test.mock.num.brokers": 1, "bootstrap.servers": ""})
    broker = next(iter(owner.list_topics(timeout=10).brokers.values()))
    print(f"{broker.host}:{broker.port}", flush=True)
    time.sleep(300)
""")


@pytest.fixture
def mock_cluster():
    process = subprocess.Popen([sys.executable, "-c", MOCK_CLUSTER], stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True)
    yield TansuSource(int(process.stdout.readline().strip().rsplit(":", 1)[1]))
    process.kill()
    process.wait()


def test_librdkafkas_mock_cluster_is_mirrored_up_to_its_crc_less_transaction_marker(
        mock_cluster, make_broker):
    source = mock_cluster.bootstrap
    # The mock creates the topic on first use, with four partitions.
    produce(source, "orders", 300)
    transactional = Producer({"bootstrap.servers": source, "transactional.id": "tx",
                              "compression.type": "lz4"})
    transactional.init_transactions(10)
    transactional.begin_transaction()
    for i in range(30):
        transactional.produce("orders", value=f"c{i}".encode(), partition=i % 3)
    transactional.commit_transaction(10)
    destination = make_broker("destination").start()
    cli(destination, "create", "dr", "--source", source, *FAST_RETRIES)
    cli(destination, "add", "dr", "orders")
    # Each of partitions 0-2: 100 idempotent records, 10 transactional ones, then the mock's
    # commit marker, whose CRC field is 0.
    wait_for(lambda: all(describe(destination)[("orders", p)][1] == 110 for p in range(3)),
             60, "everything before the markers mirrored")
    time.sleep(1)
    rows = describe(destination)
    assert all(rows[("orders", p)][1] == 110 for p in range(3)), rows
    assert "record batch CRC mismatch: stored 0x00000000" in destination.log()
    everything = records(source, "orders", 3, expected=330, isolation="read_uncommitted")
    assert records(destination.bootstrap, "orders", 3, expected=330,
                   isolation="read_uncommitted") == everything
    # The transaction's records are copied, but its commit marker is not: read_committed
    # consumers of the mirror wait at the transaction's first offset, as they must.
    committed = records(destination.bootstrap, "orders", 3, expected=330)
    assert committed == {k: v for k, v in everything.items() if k[1] < 100}
