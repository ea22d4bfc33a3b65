"""The admin CLI (`shoal topic ...`, `shoal group ...`) against the real binary: each
subcommand's JSON output parsed, exit statuses, and offsets reset while the group is empty
read again by a consumer."""

import json
import subprocess
import time

from confluent_kafka import Consumer, Producer

from conftest import SHOAL_BIN


def shoal(broker, *args, format="json"):
    """(exit status, parsed JSON or text, stderr)"""
    done = subprocess.run([SHOAL_BIN, *args[:1], "--bootstrap", broker.bootstrap,
                           "--format", format, *args[1:]],
                          capture_output=True, text=True, timeout=60)
    out = done.stdout
    if format == "json" and done.returncode == 0 and out.strip():
        out = json.loads(out)
    return done.returncode, out, done.stderr


def test_topics_are_created_listed_described_altered_and_deleted(broker):
    code, created, _ = shoal(broker, "topic", "create", "cli-t", "--partitions", "3",
                             "--topic-config", "retention.ms=60000")
    assert code == 0 and created == [{"name": "cli-t", "error_code": 0, "error": ""}]
    code, _, err = shoal(broker, "topic", "create", "cli-t")
    assert code == 1 and "TopicAlreadyExists" in err, err

    code, listed, _ = shoal(broker, "topic", "list")
    assert code == 0 and {"name": "cli-t", "partitions": 3, "internal": False} in listed

    code, [described], _ = shoal(broker, "topic", "describe", "cli-t")
    assert [p["partition"] for p in described["partitions"]] == [0, 1, 2]
    assert described["configs"] == {"retention.ms": "60000"}

    code, _, _ = shoal(broker, "topic", "alter", "cli-t", "--set", "retention.bytes=1000",
                       "--delete", "retention.ms", format="table")
    assert code == 0
    code, [described], _ = shoal(broker, "topic", "describe", "cli-t")
    assert described["configs"] == {"retention.bytes": "1000"}

    code, table, _ = shoal(broker, "topic", "list", format="table")
    assert code == 0 and table.splitlines()[0].split() == ["NAME", "PARTITIONS"]
    assert ["cli-t", "3"] in [line.split() for line in table.splitlines()]

    code, deleted, _ = shoal(broker, "topic", "delete", "cli-t")
    assert code == 0 and deleted[0]["error_code"] == 0
    code, _, err = shoal(broker, "topic", "describe", "cli-t")
    assert code == 1 and "UnknownTopicOrPartition" in err, err

    done = subprocess.run([SHOAL_BIN, "topic", "--bootstrap", "127.0.0.1:1", "list"],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "cannot connect" in done.stderr, done.stderr


def consume(broker, group, count, close=True):
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["cli-g"])
    got = []
    deadline = time.time() + 30
    while len(got) < count and time.time() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg.value())
            consumer.commit(msg, asynchronous=False)
    if close:
        consumer.close()
    return got, consumer


def test_a_groups_lag_is_described_and_its_offsets_reset_only_while_it_is_empty(broker):
    assert shoal(broker, "topic", "create", "cli-g", "--partitions", "2")[0] == 0
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("cli-g", f"v{i}".encode(), partition=i % 2)
    producer.flush(15)

    got, member = consume(broker, "readers", 10, close=False)
    assert len(got) == 10
    code, described, _ = shoal(broker, "group", "describe", "readers")
    assert code == 0 and described["state"] == "Stable" and len(described["members"]) == 1
    assert sorted((o["partition"], o["committed"], o["lag"]) for o in described["offsets"]) == \
        [(0, 5, 0), (1, 5, 0)]
    assert {p["partition"] for p in described["members"][0]["partitions"]} == {0, 1}
    code, groups, _ = shoal(broker, "group", "list")
    assert {"group": "readers", "state": "Stable", "protocol_type": "consumer"} in groups

    # A group with a member is not reset, as Kafka refuses it.
    code, _, err = shoal(broker, "group", "reset-offsets", "readers", "--to-earliest",
                         "--execute")
    assert code == 1 and "inactive" in err, err
    member.close()

    # A dry run changes nothing; --execute commits.
    code, plan, _ = shoal(broker, "group", "reset-offsets", "readers", "--shift-by", "-2")
    assert code == 0 and not plan["executed"]
    assert sorted(o["offset"] for o in plan["offsets"]) == [3, 3]
    for args, expected in [(["--to-offset", "4"], [4, 4]), (["--shift-by", "-1"], [3, 3]),
                           (["--to-latest"], [5, 5]), (["--to-datetime", "2000-01-01T00:00:00Z"],
                                                      [0, 0]),
                           (["--to-earliest", "--topic", "cli-g"], [0, 0])]:
        code, done, err = shoal(broker, "group", "reset-offsets", "readers", *args, "--execute")
        assert code == 0 and done["executed"], err
        _, described, _ = shoal(broker, "group", "describe", "readers")
        assert sorted(o["committed"] for o in described["offsets"]) == expected, args
        assert described["lag"] == sum(5 - c for c in expected)

    # Reset to the earliest: the group reads everything again.
    again, _ = consume(broker, "readers", 10)
    assert sorted(again) == sorted(f"v{i}".encode() for i in range(10))
