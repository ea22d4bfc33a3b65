"""Nothing acknowledged is lost: kill -9 under load, restart on the same data directory."""

import json
import subprocess
import sys
import textwrap
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import ON_POSTGRES, SHOAL_BIN

PRODUCER_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from confluent_kafka import Producer
    bootstrap, topic, out_path = sys.argv[1:4]
    out = open(out_path, "w", buffering=1)
    def on_delivery(err, msg):
        if err is None:
            out.write(json.dumps([msg.partition(), msg.offset(), msg.value().decode()]) + "\\n")
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 2,
                  "message.timeout.ms": 60000, "retries": 0})
    i = 0
    while True:
        try:
            p.produce(topic, value=f"record-{i}".encode(), on_delivery=on_delivery)
            i += 1
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    """
)


def read_acks(path):
    """Acknowledgements written so far. A read racing the producer's append can see a line
    not yet whole (even as zero bytes); such a line is not counted."""
    acks = []
    if not path.exists():
        return acks
    with open(path, errors="replace") as f:
        for line in f:
            if not line.endswith("\n"):
                continue
            try:
                acks.append(tuple(json.loads(line)))
            except json.JSONDecodeError:
                continue
    return acks


def consume_everything(bootstrap, topic, partitions):
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "audit",
                         "enable.auto.commit": False})
    highs = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
             for p in range(partitions)}
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    stored = {}
    deadline = time.time() + 60
    while len(stored) < sum(highs.values()) and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is None:
            continue
        assert m.error() is None, m.error()
        stored[(m.partition(), m.offset())] = m.value().decode()
    consumer.close()
    return stored, highs


# Both layouts of the local store: a file per object, and objects appended to segment files
# (O_DIRECT, one fdatasync per group of puts).
@pytest.mark.parametrize("layout", ["files", "segments"])
def test_kill_9_mid_stream_loses_no_acknowledged_record(make_broker, tmp_path, layout):
    broker = make_broker("victim", extra_config=f'[object_store]\nlocal_layout = "{layout}"').start()
    topic, partitions = "durable", 3
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)

    acks_path = tmp_path / "acks.jsonl"
    producer = subprocess.Popen(
        [sys.executable, "-c", PRODUCER_SCRIPT, broker.bootstrap, topic, str(acks_path)]
    )
    try:
        deadline = time.time() + 60
        while time.time() < deadline and len(read_acks(acks_path)) < 5000:
            time.sleep(0.05)
        assert len(read_acks(acks_path)) >= 5000, "producer made no progress"
        broker.kill()  # SIGKILL while the producer is still sending
        time.sleep(0.5)
    finally:
        producer.kill()
        producer.wait()
    acked = read_acks(acks_path)

    broker.start()
    stored, highs = consume_everything(broker.bootstrap, topic, partitions)
    for partition, offset, value in acked:
        assert stored.get((partition, offset)) == value, (
            f"acknowledged record {value} at {partition}/{offset} is missing or different"
        )
    for p in range(partitions):
        assert sorted(o for (q, o) in stored if q == p) == list(range(highs[p])), (
            f"partition {p} has gaps"
        )

    # New writes after the restart never reuse an offset.
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    after = []
    for i in range(30):
        p.produce(topic, value=f"after-{i}".encode(), partition=i % partitions,
                  on_delivery=lambda err, msg: after.append((err, msg.partition(), msg.offset())))
    assert p.flush(15) == 0
    for err, partition, offset in after:
        assert err is None
        assert offset >= highs[partition]
    assert len({(q, o) for _, q, o in after}) == len(after)
    if layout == "segments":
        assert list((broker.data_dir / "objects" / "segments").glob("*.seg")), "written to segments"
        assert not list((broker.data_dir / "objects" / "wal").glob("*")), "no file per object"
    broker.stop()
    if not ON_POSTGRES:  # `shoal check` reads a data directory's own log
        check = subprocess.run([SHOAL_BIN, "check", "--config", str(broker.config_path)],
                               capture_output=True, text=True, timeout=60)
        assert check.returncode == 0, check.stdout + check.stderr


# The coordinator as tasks on its CPU's shard executor (the default), and on an executor of
# its own: either way it answers the shards' last commits before the broker exits.
@pytest.mark.parametrize("coordinator", ["hosted", "own_executor"])
def test_sigterm_drains_and_exits_cleanly_then_data_survives_restart(make_broker, coordinator):
    extra = "[produce]\ncommit_interval_ms = 200\nrotate_when_idle = false\n"
    if coordinator == "own_executor":
        extra += "[coordinator]\nown_executor = true\n"
    broker = make_broker("graceful", extra_config=extra).start()
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    delivered = []
    # The topic exists and the producer is connected before the burst, so the burst's requests
    # reach the broker within the poll below even on a loaded machine.
    p.produce("graceful", value=b"first", on_delivery=lambda err, msg: delivered.append(err))
    assert p.flush(10) == 0 and delivered == [None]
    for i in range(100):
        p.produce("graceful", value=f"g{i}".encode(),
                  on_delivery=lambda err, msg: delivered.append(err))
    p.poll(0.05)  # requests are in the broker's 200 ms buffer when the signal lands
    assert broker.stop() == 0, broker.log()
    p.flush(5)
    assert "stopped cleanly" in broker.log()
    hosted = "the coordinator runs on the shard's executor" in broker.log()
    assert hosted == (coordinator == "hosted"), broker.log()
    broker.start()
    stored, highs = consume_everything(broker.bootstrap, "graceful", 1)
    acked = sum(1 for e in delivered if e is None)
    assert highs[0] >= acked
    assert len(stored) == highs[0]


def test_a_data_directory_written_with_files_is_served_after_switching_to_segments(make_broker):
    """An upgrade: objects written one file each stay readable when the store writes
    segments, beside the new objects; and back again."""
    layout = '[object_store]\nlocal_layout = "{}"'
    broker = make_broker("upgrade", extra_config=layout.format("files")).start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("kept", num_partitions=2)])["kept"].result(10)

    def produce(tag, count):
        p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "linger.ms": 1})
        for i in range(count):
            p.produce("kept", value=f"{tag}-{i}".encode(), partition=i % 2)
        assert p.flush(15) == 0

    produce("files", 200)
    broker.stop()
    assert list((broker.data_dir / "objects" / "wal").iterdir()), "written one file each"
    broker.config_path.write_text(broker.config_path.read_text().replace(
        layout.format("files"), layout.format("segments")))
    broker.start()
    produce("segments", 200)
    broker.stop()
    assert list((broker.data_dir / "objects" / "segments").glob("*.seg"))
    broker.config_path.write_text(broker.config_path.read_text().replace(
        layout.format("segments"), layout.format("files")))
    broker.start()
    stored, highs = consume_everything(broker.bootstrap, "kept", 2)
    assert sum(highs.values()) == 400
    assert sorted(stored.values()) == sorted(
        [f"files-{i}" for i in range(200)] + [f"segments-{i}" for i in range(200)])
