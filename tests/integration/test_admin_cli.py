"""The admin CLI (`shoal topic ...`, `shoal group ...`) against the real binary: each
subcommand's JSON output parsed, exit statuses, and offsets reset while the group is empty
read again by a consumer."""

import json
import signal
import subprocess
import time

from confluent_kafka import Consumer, KafkaError, Producer

from conftest import SHOAL_BIN
from test_security import produce_one
from test_security import secured  # noqa: F401 (a fixture: a broker with a SASL listener)


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


def test_acls_are_created_listed_and_deleted(broker):
    from confluent_kafka.admin import (AclBindingFilter, AclOperation, AclPermissionType,
                                       AdminClient, ResourcePatternType, ResourceType)
    code, _, err = shoal(broker, "acl", "create", "--principal", "User:alice", "--operation",
                         "read", "--operation", "write", "--topic", "orders", format="table")
    assert code == 0, err
    assert shoal(broker, "acl", "create", "--principal", "User:bob", "--operation", "read",
                 "--group", "billing-", "--prefixed", "--deny", format="table")[0] == 0
    code, listed, _ = shoal(broker, "acl", "list")
    assert {(a["principal"], a["resource_type"], a["resource_name"], a["pattern"],
             a["operation"], a["permission"]) for a in listed} == {
        ("User:alice", "topic", "orders", "literal", "read", "allow"),
        ("User:alice", "topic", "orders", "literal", "write", "allow"),
        ("User:bob", "group", "billing-", "prefixed", "read", "deny")}
    # The same bindings as another client sees them.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None,
                                  AclOperation.ANY, AclPermissionType.ANY)
    assert len(admin.describe_acls(everything).result(10)) == 3

    code, deleted, _ = shoal(broker, "acl", "delete", "--principal", "User:alice", "--topic",
                             "orders", "--operation", "write")
    assert code == 0 and deleted == {"deleted": 1}
    code, listed, _ = shoal(broker, "acl", "list", "--principal", "User:alice")
    assert [a["operation"] for a in listed] == ["read"]
    code, _, err = shoal(broker, "acl", "create", "--operation", "read", "--topic", "x")
    assert code == 2 and "--principal" in err, err


def test_a_user_created_with_the_cli_logs_in_with_scram(secured):
    broker = secured
    done = subprocess.run([SHOAL_BIN, "user", "--bootstrap", broker.bootstrap, "create", "carol",
                           "--mechanism", "SCRAM-SHA-512"], env={"SHOAL_USER_PASSWORD": "c-pass"},
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    code, users, _ = shoal(broker, "user", "list")
    assert {"user": "carol", "mechanisms": [{"mechanism": "SCRAM-SHA-512",
                                             "iterations": 8192}]} in users

    def sasl(password):
        return {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "carol",
                "sasl.password": password}

    def refused(password):
        errors = []
        producer = Producer({**sasl(password), "error_cb": errors.append})
        deadline = time.time() + 10
        while not errors and time.time() < deadline:
            producer.poll(0.2)
        return any(e.code() == KafkaError._AUTHENTICATION for e in errors)

    assert produce_one(sasl("c-pass"), "scram-cli", b"v") == [None]
    assert refused("wrong")
    assert shoal(broker, "user", "delete", "carol", format="table")[0] == 0
    assert all(u["user"] != "carol" for u in shoal(broker, "user", "list")[1])
    assert refused("c-pass")


def cli(broker, *args, stdin=None, format="json"):
    """`shoal produce|consume` with `stdin` fed to it: (exit status, stdout lines, stderr)."""
    done = subprocess.run([SHOAL_BIN, *args[:1], "--bootstrap", broker.bootstrap,
                           "--format", format, *args[1:]], input=stdin,
                          capture_output=True, text=True, timeout=60)
    lines = done.stdout.splitlines()
    if format == "json" and done.returncode == 0:
        lines = [json.loads(line) for line in lines]
    return done.returncode, lines, done.stderr


def following(broker, *args):
    """`shoal consume --follow` in the background, its output piped."""
    return subprocess.Popen([SHOAL_BIN, "consume", "--bootstrap", broker.bootstrap, "--follow",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_produce_and_consume_with_keys_headers_partitions_and_formats(broker):
    assert shoal(broker, "topic", "create", "cli-pc", "cli-ref", "--partitions", "4")[0] == 0
    keys = [f"key-{i}" for i in range(20)]
    lines = "".join(f"{k}={k.upper()}\n" for k in keys)
    code, [summary], err = cli(broker, "produce", "cli-pc", "--key-separator", "=",
                               "-H", "source=cli", "--compression", "zstd", stdin=lines)
    assert code == 0 and sum(p["records"] for p in summary["partitions"]) == 20, err

    # Keys land where Kafka's Java partitioner (librdkafka's murmur2_random) puts them.
    producer = Producer({"bootstrap.servers": broker.bootstrap, "partitioner": "murmur2_random"})
    expected = {}
    for k in keys:
        producer.produce("cli-ref", key=k.encode(), value=b"x",
                         on_delivery=lambda _e, m: expected.__setitem__(m.key().decode(),
                                                                        m.partition()))
    producer.flush(15)
    code, records, err = cli(broker, "consume", "cli-pc")
    assert code == 0 and len(records) == 20, err
    assert {r["key"]: r["partition"] for r in records} == expected
    assert all(r["value"] == r["key"].upper() and
               r["headers"] == [{"key": "source", "value": "cli"}] for r in records)

    # JSON in, JSON out: bytes that are not UTF-8 travel as base64, partitions as given.
    odd = {"key": None, "value": {"base64": "/wD+"}, "partition": 3,
           "headers": [{"key": "h", "value": None}]}
    code, _, err = cli(broker, "produce", "cli-pc", "--input", "json", stdin=json.dumps(odd))
    assert code == 0, err
    code, [last], _ = cli(broker, "consume", "cli-pc", "-p", "3", "-o", "-1")
    assert {k: last[k] for k in odd} == odd
    code, table, _ = cli(broker, "consume", "cli-pc", "-p", "3", "-o", "-2", "-n", "1",
                         "--template", "%p|%k|%h", format="table")
    assert code == 0 and len(table) == 1 and table[0].endswith("|source=cli"), table
    # kcat's escapes; a template ending in \n ends the line itself (no blank line after).
    code, tabbed, _ = cli(broker, "consume", "cli-pc", "-p", "3", "-o", "-2",
                          "--template", r"%p\t%o\n", format="table")
    assert code == 0 and [line.split("\t")[0] for line in tabbed] == ["3", "3"], tabbed
    code, none, _ = cli(broker, "consume", "cli-pc", "-o", "@2999-01-01T00:00:00Z")
    assert code == 0 and none == []

    # A group starts where it committed and commits where it stopped.
    code, first, _ = cli(broker, "consume", "cli-pc", "--group", "cli-readers", "-n", "5")
    assert code == 0 and len(first) == 5
    code, rest, _ = cli(broker, "consume", "cli-pc", "--group", "cli-readers")
    assert code == 0 and len(rest) == 16
    assert {(r["partition"], r["offset"]) for r in first}.isdisjoint(
        (r["partition"], r["offset"]) for r in rest)
    _, described, _ = shoal(broker, "group", "describe", "cli-readers")
    assert described["lag"] == 0

    # --follow waits for records produced after it started.
    follower = following(broker, "cli-pc", "-p", "0", "-o", "latest", "-n", "2")
    time.sleep(1.5)
    assert cli(broker, "produce", "cli-pc", "-p", "0", stdin="late-1\nlate-2\n")[0] == 0
    out, _ = follower.communicate(timeout=30)
    assert out.split() == ["late-1", "late-2"] and follower.returncode == 0

    # Ctrl-C ends --follow cleanly, and a group commits what was printed.
    follower = following(broker, "cli-pc", "-p", "0", "-o", "latest", "--group", "cli-follower")
    time.sleep(1.5)
    assert cli(broker, "produce", "cli-pc", "-p", "0", stdin="late-3\n")[0] == 0
    assert follower.stdout.readline() == "late-3\n"
    follower.send_signal(signal.SIGINT)
    assert follower.wait(timeout=10) == 0
    _, described, _ = shoal(broker, "group", "describe", "cli-follower")
    assert [(o["partition"], o["lag"]) for o in described["offsets"]] == [(0, 0)], described

    # A reader that stops (`| head`) ends the command quietly, and nothing is committed.
    reader = following(broker, "cli-pc", "-p", "0", "--group", "cli-head")
    assert reader.stdout.readline()
    reader.stdout.close()
    assert cli(broker, "produce", "cli-pc", "-p", "0", stdin="late-4\n")[0] == 0
    assert reader.wait(timeout=10) == 0 and reader.stderr.read() == ""
    assert shoal(broker, "group", "describe", "cli-head")[1]["offsets"] == []

    code, _, err = cli(broker, "produce", "cli-pc", "-p", "9", stdin="x\n")
    assert code == 2 and "partition 9" in err, err

    # A bad line stops the input; the lines before it are sent, and the error names it.
    code, [summary], err = cli(broker, "produce", "cli-pc", "-p", "1", "--key-separator", ":",
                               stdin="a:1\nb:2\nno separator\nc:3\n")
    assert code == 2 and "standard input line 3" in err, err
    assert [p["records"] for p in json.loads(summary)["partitions"]] == [2]
    code, last_two, _ = cli(broker, "consume", "cli-pc", "-p", "1", "-o", "-2")
    assert [(r["key"], r["value"]) for r in last_two] == [("a", "1"), ("b", "2")]


def test_consume_leaves_out_aborted_transactions_unless_asked(broker):
    assert shoal(broker, "topic", "create", "cli-tx")[0] == 0
    producer = Producer({"bootstrap.servers": broker.bootstrap, "transactional.id": "cli-tx"})
    producer.init_transactions(30)
    for value, commit in [(b"aborted", False), (b"kept", True)]:
        producer.begin_transaction()
        producer.produce("cli-tx", value)
        producer.flush(15)
        (producer.commit_transaction if commit else producer.abort_transaction)(30)
    code, committed, err = cli(broker, "consume", "cli-tx", format="table")
    assert code == 0 and committed == ["kept"], err
    code, everything, err = cli(broker, "consume", "cli-tx", "--read-uncommitted", format="table")
    assert code == 0 and everything == ["aborted", "kept"], err


def test_a_consumer_protocol_group_is_described_with_its_members(broker):
    assert shoal(broker, "topic", "create", "cli-848", "--partitions", "2")[0] == 0
    cli(broker, "produce", "cli-848", stdin="a\nb\nc\n")
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "new-protocol",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest"})
    consumer.subscribe(["cli-848"])
    got, deadline = 0, time.time() + 30
    while got < 3 and time.time() < deadline:
        msg = consumer.poll(0.5)
        got += msg is not None and not msg.error()
    consumer.commit(asynchronous=False)
    code, described, err = shoal(broker, "group", "describe", "new-protocol")
    consumer.close()
    assert code == 0 and described["state"] == "Stable", (described, err)
    [member] = described["members"]
    assert sorted(p["partition"] for p in member["partitions"]) == [0, 1]
    assert described["lag"] == 0
