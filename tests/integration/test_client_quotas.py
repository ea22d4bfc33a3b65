"""Client quotas (KIP-546's DescribeClientQuotas and AlterClientQuotas) as kafka-configs sets
them with --entity-type users / clients: checked as Kafka checks them, kept in the
coordinator's log across kill -9. No client library here has an API for them, so the
requests are built byte by byte (kafka_wire)."""

from kafka_wire import (Connection, alter_client_quotas_v0, describe_client_quotas_v0,
                        parse_alter_client_quotas_v0, parse_describe_client_quotas_v0, request)

ALTER, DESCRIBE = 49, 48
INVALID_REQUEST = 42
EXACT, DEFAULT, ANY = 0, 1, 2


class Quotas:
    def __init__(self, bootstrap):
        self.conn = Connection(bootstrap)
        self.correlation = 0

    def _call(self, key, body):
        self.correlation += 1
        self.conn.send(request(key, 0, self.correlation, body))
        correlation, answer = self.conn.recv_response()
        assert correlation == self.correlation
        return answer

    def alter(self, entries, validate_only=False):
        body = alter_client_quotas_v0(entries, validate_only)
        return [(code, message) for code, message, _ in
                parse_alter_client_quotas_v0(self._call(ALTER, body))]

    def describe(self, components, strict=False):
        body = describe_client_quotas_v0(components, strict)
        error, message, entries = parse_describe_client_quotas_v0(self._call(DESCRIBE, body))
        assert error == 0, message
        return entries


def test_quotas_are_checked_set_described_and_removed_and_survive_a_kill_9(make_broker):
    broker = make_broker().start()
    quotas = Quotas(broker.bootstrap)
    alice = [("user", "alice")]
    alice_app = [("user", "alice"), ("client-id", "app")]
    default_client = [("client-id", None)]
    assert quotas.alter([
        (alice, [("producer_byte_rate", 1_048_576.0), ("consumer_byte_rate", 2_097_152.0)]),
        (alice_app, [("request_percentage", 25.0)]),
        (default_client, [("producer_byte_rate", 512_000.0)]),
    ]) == [(0, None)] * 3
    # Kafka's checks: a whole number of bytes, a known key, a known entity type, positive.
    refused = quotas.alter([
        (alice, [("producer_byte_rate", 10.5)]),
        (alice, [("bytes_per_fortnight", 1.0)]),
        ([("ip", "10.0.0.1")], [("producer_byte_rate", 1.0)]),
        ([("user", "bob")], [("consumer_byte_rate", -1.0)]),
    ])
    assert [code for code, _ in refused] == [INVALID_REQUEST] * 4
    assert "whole number" in refused[0][1]
    # validate_only checks and stores nothing.
    assert quotas.alter([([("user", "carol")], [("producer_byte_rate", 1000.0)])],
                        validate_only=True) == [(0, None)]

    everything = quotas.describe([])
    assert everything == {
        (("user", "alice"),): {"producer_byte_rate": 1_048_576.0,
                               "consumer_byte_rate": 2_097_152.0},
        (("user", "alice"), ("client-id", "app")): {"request_percentage": 25.0},
        (("client-id", None),): {"producer_byte_rate": 512_000.0},
    }
    assert set(quotas.describe([("user", EXACT, "alice")])) == {
        (("user", "alice"),), (("user", "alice"), ("client-id", "app"))}
    assert set(quotas.describe([("user", EXACT, "alice")], strict=True)) == {
        (("user", "alice"),)}
    assert set(quotas.describe([("client-id", DEFAULT, None)])) == {(("client-id", None),)}
    assert len(quotas.describe([("client-id", ANY, None)])) == 2

    broker.kill()
    broker.start()
    quotas = Quotas(broker.bootstrap)
    assert quotas.describe([]) == everything
    # Removing a quota; an entity left without any is gone.
    assert quotas.alter([(alice_app, [("request_percentage", None)])]) == [(0, None)]
    assert (("user", "alice"), ("client-id", "app")) not in quotas.describe([])
