"""The coordinator on PostgreSQL ([coordinator] kind = "postgres"): the broker keeps no
metadata of its own, loses nothing acknowledged when killed -9 or when PostgreSQL restarts
under acks=all load, and refuses to start with clear words when it cannot log in."""

import signal
import subprocess
import sys
import time

import shutil

from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import SHOAL_BIN, PostgresServer
from fault_proxy import FaultProxy

from test_durability import PRODUCER_SCRIPT, consume_everything, read_acks


def produce_in_background(broker, topic, partitions, acks_path):
    """Creates the topic, then an acks=all producer that logs every acknowledgement."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic].result(10)
    return subprocess.Popen(
        [sys.executable, "-c", PRODUCER_SCRIPT, broker.bootstrap, topic, str(acks_path)])


def wait_for_acks(acks_path, count, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline and len(read_acks(acks_path)) < count:
        time.sleep(0.05)
    assert len(read_acks(acks_path)) >= count, "the producer made no progress"


def assert_all_acknowledged_stored(broker, topic, partitions, acked):
    stored, highs = consume_everything(broker.bootstrap, topic, partitions)
    assert len(stored) == sum(highs.values()), f"read {len(stored)} of {highs}"
    for partition, offset, value in acked:
        assert stored.get((partition, offset)) == value, (
            f"acknowledged record {value} at {partition}/{offset} is missing or different")
    for p in range(partitions):
        assert sorted(o for (q, o) in stored if q == p) == list(range(highs[p])), (
            f"partition {p} has gaps")


def test_kill_9_loses_nothing_and_the_metadata_lives_in_postgres(make_broker, postgres, tmp_path):
    broker = make_broker("pg-victim", extra_config=postgres.broker_config()).start()
    topic, partitions = "pg-durable", 3
    acks_path = tmp_path / "acks.jsonl"
    producer = produce_in_background(broker, topic, partitions, acks_path)
    try:
        wait_for_acks(acks_path, 5000)
        broker.kill()
    finally:
        producer.kill()
        producer.wait()
    acked = read_acks(acks_path)
    assert not (broker.data_dir / "coordinator").exists(), "no local metadata log was written"
    broker.start()
    assert_all_acknowledged_stored(broker, topic, partitions, acked)


def test_postgres_restarting_under_load_loses_nothing_acknowledged(make_broker, postgres, tmp_path):
    broker = make_broker("pg-restart", extra_config=postgres.broker_config()).start()
    topic, partitions = "pg-restart", 2
    acks_path = tmp_path / "acks.jsonl"
    producer = produce_in_background(broker, topic, partitions, acks_path)
    try:
        wait_for_acks(acks_path, 3000)
        postgres.stop()
        time.sleep(2)
        during = len(read_acks(acks_path))
        postgres.start()
        wait_for_acks(acks_path, during + 3000)
    finally:
        producer.kill()
        producer.wait()
    assert "retrying" in broker.log(), "the outage reached the coordinator's appends"
    assert_all_acknowledged_stored(broker, topic, partitions, read_acks(acks_path))


def test_a_wrong_password_stops_the_start_with_a_clear_message(make_broker, postgres, tmp_path):
    wrong = tmp_path / "wrong-password"
    wrong.write_text("not-the-password\n")
    broker = make_broker("pg-wrong", extra_config=postgres.broker_config(password_file=wrong))
    try:
        broker.start()
        raise AssertionError("the broker started without logging in to PostgreSQL")
    except RuntimeError:
        pass
    assert "28P01" in broker.log() and "password authentication failed" in broker.log(), broker.log()
    assert "passing reason" not in broker.log(), "a refused login is not tried again"


def test_a_start_waits_out_reset_connections_to_postgres(make_broker, postgres):
    """PostgreSQL's connections reset at the start (a restarting server, a proxy) are tried
    again with backoff; before, the first reset stopped the broker."""
    proxy = FaultProxy(postgres.port)
    proxy.fail_next(FaultProxy.RESET, FaultProxy.RESET)
    config = postgres.broker_config().replace(f"127.0.0.1:{postgres.port}/",
                                              f"127.0.0.1:{proxy.port}/")
    broker = make_broker("pg-flaky", extra_config=config).start()
    assert proxy.faulted == 2
    assert broker.log().count("a start-up step failed for a passing reason") == 2, broker.log()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("after-resets", num_partitions=1)])["after-resets"].result(10)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    producer.produce("after-resets", value=b"v")
    assert producer.flush(15) == 0
    proxy.close()


def test_postgres_without_a_url_is_a_config_error(make_broker):
    broker = make_broker("pg-no-url", extra_config='[coordinator]\nkind = "postgres"\n')
    try:
        broker.start()
        raise AssertionError("started without a database URL")
    except RuntimeError:
        pass
    assert "needs url" in broker.log(), broker.log()


def test_the_coordinator_reaches_postgres_over_verified_tls(make_broker):
    server = PostgresServer(tls=True).start()
    try:
        broker = make_broker("pg-tls", extra_config=server.broker_config()).start()
        p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
        delivered = []
        for i in range(50):
            p.produce("pg-tls", value=f"v{i}".encode(), on_delivery=lambda e, m: delivered.append(e))
        assert p.flush(15) == 0 and delivered == [None] * 50
        stored, highs = consume_everything(broker.bootstrap, "pg-tls", 1)
        assert highs[0] == 50 and sorted(stored.values()) == sorted(f"v{i}" for i in range(50))
        broker.stop()
    finally:
        server.stop()
        shutil.rmtree(server.dir, ignore_errors=True)


def test_producers_are_told_to_retry_while_postgres_is_down(make_broker, postgres):
    config = "[produce]\ncommit_answer_timeout_ms = 1000\n" + postgres.broker_config()
    broker = make_broker("pg-down", extra_config=config).start()
    p = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all", "retries": 0})
    outcomes = []
    p.produce("pg-down", b"before", on_delivery=lambda e, m: outcomes.append(e))
    assert p.flush(15) == 0 and outcomes == [None]
    postgres.stop()
    during = []
    p.produce("pg-down", b"during", on_delivery=lambda e, m: during.append(e))
    p.flush(15)
    assert during and during[0] is not None, "answered while the database was down"
    assert during[0].code() == KafkaError.REQUEST_TIMED_OUT, during[0]  # a retriable code
    assert "told to retry" in broker.log()
    postgres.start()
    after = []
    p.produce("pg-down", b"after", on_delivery=lambda e, m: after.append(e))
    assert p.flush(30) == 0 and after == [None], after


def test_a_start_that_cannot_finish_stops_naming_the_step_or_at_a_signal(make_broker, postgres):
    """Every start-up step has a deadline: a PostgreSQL that accepts connections but never
    answers stops the start after startup_timeout_ms with a message naming the step, and a
    SIGTERM meanwhile stops the broker at once (before, shards waiting for the coordinator did
    not see the signal, and a start that hung had to be killed)."""
    proxy = FaultProxy(postgres.port)
    proxy.mode = FaultProxy.STALL
    config = postgres.broker_config().replace(f"127.0.0.1:{postgres.port}/",
                                              f"127.0.0.1:{proxy.port}/")
    broker = make_broker("pg-stalled", extra_config="startup_timeout_ms = 2000\n" + config)
    started = time.time()
    try:
        broker.start()
        raise AssertionError("started without PostgreSQL answering")
    except RuntimeError:
        pass
    assert time.time() - started < 8, "the start outlived its deadline"
    assert "start-up: the coordinator's log in PostgreSQL: no answer within 2000 ms" in \
        broker.log(), broker.log()

    waiting = make_broker("pg-signalled", extra_config="startup_timeout_ms = 60000\n" + config)
    log = open(waiting.log_path, "ab")
    process = subprocess.Popen([SHOAL_BIN, "--config", str(waiting.config_path)], stdout=log,
                               stderr=subprocess.STDOUT)
    time.sleep(1.5)
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=5)
    finally:
        process.kill()
    assert code == 0, waiting.log()
    assert "shoal stopped cleanly" in waiting.log()
    proxy.close()
