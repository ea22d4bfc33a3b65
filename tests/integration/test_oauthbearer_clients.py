"""Shoal's own clients on SASL/OAUTHBEARER: the admin CLI, the benchmark and a mirror's source
connections take Kafka's client settings for a token file (`file://`) or the client-credentials
flow, and log in again on the same connection before a session ends (KIP-368), with a token
read or fetched anew."""

import json
import os
import subprocess
import threading
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from conftest import ROOT, SHOAL_BIN, free_port, metric_value, scrape_metrics
from oauth_helpers import IdentityProvider, TokenEndpoint, allow, start_oauth_broker

BENCH = os.environ.get("SHOAL_BENCH_BIN", str(ROOT / "target" / "release" / "shoal-bench"))


@pytest.fixture
def idp(tmp_path):
    return IdentityProvider(tmp_path)


def start_source(make_broker, idp, name):
    """A broker taking tokens from `idp` (sessions as long as their token, plus a second of
    skew) and PLAIN for the admin; the authorizer on, svc-mirror and PLAINTEXT super users."""
    metrics_port = free_port()
    broker = start_oauth_broker(
        make_broker, name, f"file://{idp.jwks_path}",
        top=f'metrics_listen = "127.0.0.1:{metrics_port}"\n'
            '[authorizer]\nenabled = true\n'
            'super_users = ["User:admin", "User:ANONYMOUS", "User:svc-mirror"]\n',
        sasl="connections_max_reauth_ms = 600000\n",
        oauth="clock_skew_seconds = 1\n",
        mechanisms='["PLAIN", "OAUTHBEARER"]',
        rest='[sasl.plain_users]\nadmin = "admin-secret"\n')
    broker.metrics_port = metrics_port
    return broker


def counters(broker):
    scraped = scrape_metrics(broker.metrics_port)
    return (metric_value(scraped, "shoal_sasl_reauthentications_total") or 0,
            metric_value(scraped, "shoal_sasl_sessions_expired_total") or 0)


def shoal(broker, command, *args, stdin=None, timeout=60):
    done = subprocess.run([SHOAL_BIN, command, "--bootstrap", broker.sasl_bootstrap, *args],
                          input=stdin, capture_output=True, text=True, timeout=timeout)
    return done


class RenewedTokenFile:
    """A token file an outside agent keeps fresh: a token valid for `lifetime` seconds,
    written again every second."""

    def __init__(self, idp, path, subject, lifetime):
        self.path, self.stop = path, threading.Event()
        self.write = lambda: path.write_text(idp.token(subject, lifetime=lifetime) + "\n")
        self.write()
        threading.Thread(target=self._renew, daemon=True).start()

    def _renew(self):
        while not self.stop.wait(1):
            self.write()


def test_the_cli_reads_a_token_file_and_logs_in_again_as_it_is_renewed(make_broker, idp,
                                                                        tmp_path):
    """Tokens valid for 4 s: `shoal consume --follow` runs for about 15 s on one connection,
    logging in again with the file's newest token; it reads every record, the broker counts
    the re-authentications and closes no session."""
    broker = start_source(make_broker, idp, "oauth-cli")
    allow(broker, "User:alice", "cli-oauth", "cli-readers")
    token_file = RenewedTokenFile(idp, tmp_path / "token.jwt", "alice", lifetime=4)
    login = ["-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanism=OAUTHBEARER",
             "-X", f"sasl.oauthbearer.token.endpoint.url=file://{token_file.path}"]
    created = shoal(broker, "topic", *login, "create", "cli-oauth")
    assert created.returncode == 0, created.stderr
    consumer = subprocess.Popen(
        [SHOAL_BIN, "consume", "--bootstrap", broker.sasl_bootstrap, *login, "--follow",
         "-n", "30", "cli-oauth"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    try:
        for i in range(30):
            producer.produce("cli-oauth", value=f"r{i}".encode())
            producer.flush(10)
            time.sleep(0.5)
        out, err = consumer.communicate(timeout=60)
    finally:
        consumer.kill()
        token_file.stop.set()
    assert consumer.returncode == 0, err
    assert out.split() == [f"r{i}" for i in range(30)]
    reauthentications, expired = counters(broker)
    assert reauthentications >= 2, reauthentications
    assert expired == 0
    # bob's token logs in, but no ACL lets bob read.
    token_file.path.write_text(idp.token("bob") + "\n")
    refused = shoal(broker, "consume", *login, "cli-oauth")
    assert refused.returncode == 1 and "TopicAuthorizationFailed" in refused.stderr, \
        refused.stderr


def test_the_cli_and_the_benchmark_ask_the_token_endpoint(make_broker, idp, tmp_path):
    """The client-credentials flow from a Java client's properties file (the JAAS line and
    the callback handler's name) for the CLI, and librdkafka's names for the benchmark; the
    benchmark's connections share one token. A wrong secret is refused by the endpoint, and
    the CLI says so."""
    broker = start_source(make_broker, idp, "oauth-endpoint")
    endpoint = TokenEndpoint(idp, "svc-orders", "svc-secret")
    try:
        allow(broker, "User:svc-orders", "bench-oauth", "unused")
        properties = tmp_path / "client.properties"
        properties.write_text(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=OAUTHBEARER\n"
            "sasl.login.callback.handler.class=org.apache.kafka.common.security.oauthbearer."
            "OAuthBearerLoginCallbackHandler\n"
            f"sasl.oauthbearer.token.endpoint.url={endpoint.url}\n"
            "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer."
            'OAuthBearerLoginModule required clientId="svc-orders" clientSecret="svc-secret" '
            'scope="kafka";\n')
        listed = shoal(broker, "topic", "--command-config", str(properties), "list")
        assert listed.returncode == 0, listed.stderr
        assert endpoint.issued == 1

        report = tmp_path / "bench.json"
        before = endpoint.issued
        bench = subprocess.run(
            [BENCH, "produce", "--bootstrap", broker.sasl_bootstrap, "--topic", "bench-oauth",
             "--partitions", "2", "--create", "--duration-s", "1", "--rate", "2000",
             "--connections", "3", "--output", str(report),
             "--security-protocol", "SASL_PLAINTEXT",
             "-X", "sasl.mechanism=OAUTHBEARER", "-X", "sasl.oauthbearer.method=oidc",
             "-X", f"sasl.oauthbearer.token.endpoint.url={endpoint.url}",
             "-X", "sasl.oauthbearer.client.id=svc-orders",
             "-X", "sasl.oauthbearer.client.secret=svc-secret"],
            capture_output=True, text=True, timeout=120)
        assert bench.returncode == 0, bench.stderr
        results = json.loads(report.read_text())["results"]
        assert results["produce_errors"] == 0 and results["produce"]["records"] > 0
        assert endpoint.issued == before + 1, "one token for every connection of the run"

        wrong = shoal(broker, "topic", "-X", "security.protocol=SASL_PLAINTEXT",
                      "-X", "sasl.mechanism=OAUTHBEARER",
                      "-X", f"sasl.oauthbearer.token.endpoint.url={endpoint.url}",
                      "-X", "sasl.oauthbearer.client.id=svc-orders",
                      "-X", "sasl.oauthbearer.client.secret=wrong", "list")
        assert wrong.returncode == 2 and "HTTP status 401" in wrong.stderr, wrong.stderr
    finally:
        endpoint.close()


def test_a_mirror_logs_in_to_its_source_with_short_lived_tokens(make_broker, idp):
    """The mirror's source connections take tokens from the endpoint, valid for 5 s, and log
    in again before each session ends: records produced over 20 s arrive with identical
    offsets, and the source closes no session."""
    from test_mirror import FAST_RETRIES, caught_up, cli, identical, produce, wait_for
    source = start_source(make_broker, idp, "oauth-source")
    endpoint = TokenEndpoint(idp, "svc-mirror", "mirror-secret", lifetime=5)
    try:
        admin = AdminClient({"bootstrap.servers": source.bootstrap})
        admin.create_topics([NewTopic("orders", num_partitions=3)])["orders"].result(15)
        produce(source, "orders", 300)
        destination = make_broker("destination").start()
        cli(destination, "create", "dr", "--source", source.sasl_bootstrap,
            "--set", "security.protocol=SASL_PLAINTEXT", "--set", "sasl.mechanism=OAUTHBEARER",
            "--set", f"sasl.oauthbearer.token.endpoint.url={endpoint.url}",
            "--set", "sasl.oauthbearer.client.id=svc-mirror",
            "--set", "sasl.oauthbearer.client.secret=mirror-secret", *FAST_RETRIES)
        assert "orders: mirroring" in cli(destination, "add", "dr", "orders").stdout
        for round_ in range(10):
            produce(source, "orders", 30, start=300 + 30 * round_)
            time.sleep(2)
        wait_for(caught_up(destination, source, "orders", 3), 60, "lag 0")
        assert identical(source, destination, "orders", 3)
        reauthentications, expired = counters(source)
        assert reauthentications >= 3, reauthentications
        assert expired == 0
        assert endpoint.issued >= 3
    finally:
        endpoint.close()
