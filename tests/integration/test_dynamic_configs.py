"""Dynamic broker configs (the BROKER config resource): changed with the admin clients while
the broker runs, in effect on the next connection or request, kept across a restart, and
described with their sources; the config file's settings refused as Kafka refuses them."""

import gc
import struct
import time

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, ConfigSource)

import kafka_wire as wire

INVALID_CONFIG = 40
INVALID_REQUEST = 42
BROKER = 4
SET, DELETE = 0, 1
# Kafka's ConfigSource values.
DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT = 2, 3, 4, 5


def node_id(bootstrap):
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return str(next(iter(admin.list_topics(timeout=10).brokers)))


def call(bootstrap, request, timeout=10):
    """The answer's body, on a connection of its own; one refused (the limits below count
    the connections of a moment ago until the broker notices them closed) is tried again."""
    deadline = time.time() + timeout
    while True:
        conn = wire.Connection(bootstrap)
        try:
            conn.send(request)
            answer = conn.recv_response()
        except (ConnectionResetError, BrokenPipeError):
            answer = None
        finally:
            conn.close()
        if answer is not None:
            return answer[1]
        assert time.time() < deadline, "every connection was refused"
        time.sleep(0.1)


def alter(bootstrap, resource_name, configs):
    """IncrementalAlterConfigs v0 (SET, or DELETE where the value is None) on its own
    connection, closed on return: the connection limits below count every connection from
    here. Raw, as no client here sends the cluster default's name ("")."""
    ops = [(k, SET if v is not None else DELETE, v) for k, v in configs.items()]
    body = call(bootstrap, wire.request(44, 0, 1, wire.incremental_alter_configs_v0(
        [(BROKER, resource_name, ops)])))
    [(error, message, _, _)] = wire.parse_incremental_alter_configs_v0(body)
    assert error == 0, message


def described(bootstrap, resource_name, keys=None):
    """{config: (value, read only, source, [(source, value)] synonyms)} (DescribeConfigs v1)"""
    body = call(bootstrap,
                wire.request(32, 1, 1, wire.describe_configs_v1([(BROKER, resource_name, keys)])))
    [(error, message, configs)] = wire.parse_describe_configs_v1(body)
    assert error == 0, message
    return configs


def admitted(bootstrap):
    """A connection answered (ApiVersions), or None when the broker closed it at once."""
    try:
        conn = wire.Connection(bootstrap, timeout=5)
        request = struct.pack(">hhih", 18, 0, 1, -1)
        conn.send(struct.pack(">i", len(request)) + request)
        if conn.recv_response() is not None:
            return conn
        conn.close()
    except (ConnectionResetError, BrokenPipeError):
        pass
    return None


def connections_admitted(bootstrap, expected, most=6, timeout=10):
    """How many connections from here the broker keeps open at once (at most `most`): tried
    until it is `expected` or the time is up, as earlier clients' closed connections are
    counted out once the broker notices them."""
    deadline = time.time() + timeout
    while True:
        held = []
        while len(held) < most:
            conn = admitted(bootstrap)
            if conn is None:
                break
            held.append(conn)
        for conn in held:
            conn.close()
        if len(held) == expected or time.time() > deadline:
            return len(held)
        time.sleep(0.2)


def broker_configs(admin, name, keys=None):
    resource = ConfigResource(ConfigResource.Type.BROKER, name)
    entries = admin.describe_configs([resource])[resource].result(15)
    return {k: e for k, e in entries.items() if keys is None or k in keys}


def refused(admin, name, configs):
    resource = ConfigResource(ConfigResource.Type.BROKER, name, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs])
    with pytest.raises(KafkaException) as error:
        admin.incremental_alter_configs([resource])[resource].result(timeout=15)
    return error.value.args[0]


def test_a_connection_limit_set_at_run_time_holds_for_the_next_connection_and_a_restart(
        make_broker):
    broker = make_broker().start()
    me = node_id(broker.bootstrap)
    assert connections_admitted(broker.bootstrap, 6) == 6

    alter(broker.bootstrap, me, {"max.connections.per.ip": "3"})
    # Taken at once, without a restart: the fourth connection from here is closed.
    assert connections_admitted(broker.bootstrap, 3) == 3

    broker.stop()
    broker.start()
    assert connections_admitted(broker.bootstrap, 3) == 3

    # The cluster default holds where the broker sets none of its own.
    alter(broker.bootstrap, "", {"max.connections.per.ip": "4"})
    assert connections_admitted(broker.bootstrap, 3) == 3
    alter(broker.bootstrap, me, {"max.connections.per.ip": None})
    assert connections_admitted(broker.bootstrap, 4) == 4

    configs = described(broker.bootstrap, me, ["max.connections.per.ip", "max.connections"])
    # Value, read-only, source, and the synonyms in Kafka's order of precedence.
    assert configs["max.connections.per.ip"] == (
        "4", False, DYNAMIC_DEFAULT_BROKER, [(DYNAMIC_DEFAULT_BROKER, "4"), (DEFAULT, "1000")])
    assert configs["max.connections"][2] == DEFAULT
    # The cluster default describes only what is set there.
    default = described(broker.bootstrap, "")
    assert default == {"max.connections.per.ip": (
        "4", False, DYNAMIC_DEFAULT_BROKER, [(DYNAMIC_DEFAULT_BROKER, "4")])}
    alter(broker.bootstrap, me, {"max.connections.per.ip": "2"})
    assert described(broker.bootstrap, me, ["max.connections.per.ip"])[
        "max.connections.per.ip"] == ("2", False, DYNAMIC_BROKER, [
            (DYNAMIC_BROKER, "2"), (DYNAMIC_DEFAULT_BROKER, "4"), (DEFAULT, "1000")])
    alter(broker.bootstrap, me, {"max.connections.per.ip": None})
    alter(broker.bootstrap, "", {"max.connections.per.ip": None})
    assert connections_admitted(broker.bootstrap, 6) == 6


def test_static_settings_unknown_names_and_bad_values_are_refused(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    me = node_id(broker.bootstrap)
    # The config file's settings: Kafka's answer for a config it cannot update dynamically.
    error = refused(admin, me, [("num.partitions", "3"), ("listeners", "PLAINTEXT://:1")])
    assert error.code() == INVALID_REQUEST, error
    assert "dynamically" in error.str() and "num.partitions" in error.str(), error
    error = refused(admin, me, [("no.such.config", "1")])
    assert error.code() == INVALID_CONFIG, error
    for name, value in [("max.connections", "0"), ("fetch.max.bytes", "many"),
                        ("log.level", "shoal=[")]:
        error = refused(admin, me, [(name, value)])
        assert error.code() == INVALID_CONFIG, (name, error)
    # Another broker's configs are its own to describe and alter (Kafka's INVALID_REQUEST).
    # Clients send each broker its own, so this one is sent raw.
    other = str(int(me) + 1)
    body = call(broker.bootstrap, wire.request(44, 0, 1, wire.incremental_alter_configs_v0(
        [(BROKER, other, [("max.connections", SET, "5")])])))
    [(error, message, _, _)] = wire.parse_incremental_alter_configs_v0(body)
    assert error == INVALID_REQUEST and "Unexpected broker id" in message, message
    # Nothing refused was stored, and a dry run stores nothing either.
    resource = ConfigResource(ConfigResource.Type.BROKER, me, incremental_configs=[
        ConfigEntry("max.connections", "7", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource], validate_only=True)[resource].result(15)
    described = broker_configs(admin, me)
    assert described["max.connections"].value == "10000"
    assert described["num.partitions"].is_read_only
    assert "no.such.config" not in described


def test_log_level_and_fetch_wait_change_without_a_restart(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    me = node_id(broker.bootstrap)

    def set_configs(configs):
        resource = ConfigResource(ConfigResource.Type.BROKER, me, incremental_configs=[
            ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET)
            for k, v in configs.items()])
        admin.incremental_alter_configs([resource])[resource].result(timeout=15)

    def empty_fetch_seconds(wait_ms):
        conn = wire.Connection(broker.bootstrap)
        # Fetch v4 from the end of a partition holding one record, min_bytes 1.
        body = struct.pack(">iiiib", -1, wait_ms, 1, 1 << 20, 0) + struct.pack(">i", 1) + \
            wire.string("idle") + struct.pack(">i", 1) + struct.pack(">iqi", 0, 1, 1 << 20)
        started = time.time()
        conn.send(wire.request(1, 4, 7, body))
        assert conn.recv_response() is not None
        conn.close()
        return time.time() - started

    from confluent_kafka import Producer
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    producer.produce("idle", b"x")
    producer.flush(15)
    # A fetch at the end waits the 3 s it asks for; the next one, after the cap, far less.
    assert empty_fetch_seconds(3000) >= 2.5
    set_configs({"fetch.max.wait.ms": "100"})
    assert empty_fetch_seconds(3000) < 1.5

    def send_damaged_batch():
        """A batch whose CRC does not match: refused, and said so at DEBUG."""
        damaged = bytearray(wire.record_batch([b"v"]))
        damaged[-1] ^= 0xFF
        conn = wire.Connection(broker.bootstrap)
        conn.send(wire.request(0, 3, 9, wire.produce_v3("idle", 0, bytes(damaged))))
        assert conn.recv_response() is not None
        conn.close()

    send_damaged_batch()
    assert "rejected a produced batch" not in broker.log()
    set_configs({"log.level": "debug"})
    send_damaged_batch()
    assert "rejected a produced batch" in broker.log()
    set_configs({"log.level": "info"})
    described = broker_configs(admin, me, {"log.level", "fetch.max.wait.ms"})
    assert described["log.level"].value == "info"
    assert described["fetch.max.wait.ms"].value == "100"
    assert described["fetch.max.wait.ms"].source == ConfigSource.DYNAMIC_BROKER_CONFIG.value
