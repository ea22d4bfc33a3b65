"""SASL/OAUTHBEARER against the real binary: JWTs made by the test (pyjwt, keys made with
cryptography) and checked by the broker against the JWKS file a local identity provider would
publish; confluent-kafka logs in through `oauth_cb`, produces and consumes, and the ACLs apply
to the token's principal. Each fault a validator must catch is refused with an authentication
error, logged without the token."""

import json
import time
import uuid

import jwt
import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import free_port, metric_value, scrape_metrics
from kafka_wire import sasl_authenticate_raw
from oauth_helpers import (IdentityProvider, JwksEndpoint, TokenEndpoint, allow, b64url,
                           start_oauth_broker)
from tls_certs import CertificateAuthority


@pytest.fixture
def idp(tmp_path):
    return IdentityProvider(tmp_path)


@pytest.fixture
def token_endpoint(idp):
    endpoint = TokenEndpoint(idp, "svc-orders", "svc-secret")
    yield endpoint
    endpoint.close()


@pytest.fixture
def oauth_broker(make_broker, idp):
    return start_oauth_broker(
        make_broker, "oauth", f"file://{idp.jwks_path}",
        top='[authorizer]\nenabled = true\nsuper_users = ["User:admin"]\n',
        mechanisms='["PLAIN", "OAUTHBEARER"]',
        rest='[sasl.plain_users]\nadmin = "admin-secret"\n')


def oauth_config(broker, make_token):
    """A librdkafka client whose oauth_cb hands it `make_token()`, valid for its `exp` (one in
    the past, which librdkafka would not send, is told as a minute ahead: the broker must
    refuse it itself)."""
    def callback(_config):
        token = make_token()
        claims = jwt.decode(token, options={"verify_signature": False})
        expiry = float(claims.get("exp", 0))
        return token, expiry if expiry > time.time() else time.time() + 60
    return {"bootstrap.servers": broker.sasl_bootstrap, "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "OAUTHBEARER", "oauth_cb": callback}


@pytest.mark.parametrize("algorithm", ["RS256", "ES256"])
def test_tokens_log_in_and_acls_apply_to_their_principal(oauth_broker, idp, algorithm):
    topic, group = f"orders-{algorithm}", f"readers-{algorithm}"
    allow(oauth_broker, "User:alice", topic, group)
    producer = Producer({**oauth_config(oauth_broker, lambda: idp.token("alice", algorithm)),
                         "acks": "all"})
    for i in range(100):
        producer.produce(topic, value=f"m{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**oauth_config(oauth_broker, lambda: idp.token("alice", algorithm)),
                         "group.id": group, "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    got = []
    deadline = time.time() + 30
    while len(got) < 100 and time.time() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(message.value())
    consumer.close()
    assert sorted(got) == sorted(f"m{i}".encode() for i in range(100))
    # bob's token is as good, but no ACL names User:bob.
    errors = []
    bob = Producer({**oauth_config(oauth_broker, lambda: idp.token("bob", algorithm)),
                    "error_cb": errors.append})
    bob.produce(topic, value=b"x", on_delivery=lambda e, _m: errors.append(e))
    bob.flush(15)
    assert any(e is not None and e.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
               for e in errors), errors


def test_librdkafka_fetches_its_tokens_with_the_client_credentials_flow(oauth_broker,
                                                                      token_endpoint):
    """sasl.oauthbearer.method=oidc: librdkafka asks the token endpoint itself."""
    allow(oauth_broker, "User:svc-orders", "oidc", "oidc-readers")
    producer = Producer({"bootstrap.servers": oauth_broker.sasl_bootstrap,
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "OAUTHBEARER",
                         "sasl.oauthbearer.method": "oidc",
                         "sasl.oauthbearer.token.endpoint.url": token_endpoint.url,
                         "sasl.oauthbearer.client.id": "svc-orders",
                         "sasl.oauthbearer.client.secret": "svc-secret", "acks": "all"})
    for i in range(10):
        producer.produce("oidc", value=f"o{i}".encode())
    assert producer.flush(30) == 0
    assert token_endpoint.issued >= 1


FAULTS = {
    "another key's signature": dict(key="stranger"),
    "an unknown key id": dict(kid="rsa-9"),
    "expired": dict(lifetime=-120),
    "not yet valid": dict(nbf=int(time.time()) + 3600),
    "a wrong issuer": dict(iss="https://evil.example"),
    "a wrong audience": dict(aud="someone-else"),
    "alg none": dict(algorithm="none"),
    "no principal claim": dict(sub=None),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_faulty_token_is_refused(oauth_broker, idp, fault):
    options = dict(FAULTS[fault])
    if options.get("key") == "stranger":
        options["key"] = idp.stranger
    subject = options.pop("sub", "alice")
    token = idp.token(subject, **options) if subject else idp.token(sub=None, **options)
    errors = []
    producer = Producer({**oauth_config(oauth_broker, lambda: token), "error_cb": errors.append})
    deadline = time.time() + 10
    while not any(e.code() == KafkaError._AUTHENTICATION for e in errors) and \
            time.time() < deadline:
        producer.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), (fault, errors)
    with pytest.raises(KafkaException):
        producer.list_topics(timeout=2)
    log = oauth_broker.log()
    assert "authentication failed" in log
    assert token.split(".")[2] not in log or token.endswith("."), "no token in the log"


SASL_AUTHENTICATION_FAILED = 58


def test_the_wire_answers_malformed_messages_and_refused_tokens_as_kafka_does(oauth_broker, idp):
    """Raw SaslAuthenticate: a message that is not RFC 7628 fails at once; a refused token
    gets the error challenge (the JSON status) with no error, then fails."""
    bootstrap = oauth_broker.sasl_bootstrap
    malformed = b"n,,\x01auth=Basic " + uuid.uuid4().hex.encode() + b"\x01\x01"
    error, _ = sasl_authenticate_raw(bootstrap, "OAUTHBEARER", malformed)
    assert error == SASL_AUTHENTICATION_FAILED
    expired = idp.token(lifetime=-600).encode()
    error, challenge = sasl_authenticate_raw(
        bootstrap, "OAUTHBEARER", b"n,,\x01auth=Bearer " + expired + b"\x01\x01")
    assert error == 0 and json.loads(challenge) == {"status": "invalid_token"}
    good = idp.token().encode()
    error, _ = sasl_authenticate_raw(bootstrap, "OAUTHBEARER",
                                     b"n,,\x01auth=Bearer " + good + b"\x01\x01")
    assert error == 0


def test_short_lived_tokens_are_refreshed_and_sessions_re_authenticate(make_broker, idp):
    """Tokens valid for 4 s, sessions as long as their token is taken (connections_max_reauth_ms
    is longer): a producer and a consumer running for half a minute re-authenticate every few
    seconds, lose nothing, duplicate nothing and see no error."""
    metrics_port = free_port()
    broker = start_oauth_broker(
        make_broker, "oauth-reauth", f"file://{idp.jwks_path}",
        top=f'metrics_listen = "127.0.0.1:{metrics_port}"\n',
        sasl="connections_max_reauth_ms = 600000\n",
        # Sessions last as long as their token is taken: exp plus this skew.
        oauth="clock_skew_seconds = 2\n")
    short = lambda: idp.token("alice", lifetime=4)  # noqa: E731
    errors, delivered = [], []
    producer = Producer({**oauth_config(broker, short), "acks": "all",
                         "error_cb": errors.append})
    consumer = Consumer({**oauth_config(broker, short), "group.id": "short-lived",
                         "auto.offset.reset": "earliest", "error_cb": errors.append})
    consumer.subscribe(["tokens"])
    got = []
    sent = 0
    deadline = time.time() + 30
    while time.time() < deadline:
        producer.produce("tokens", value=str(sent).encode(),
                         on_delivery=lambda e, m: delivered.append(e))
        sent += 1
        producer.poll(0)
        message = consumer.poll(0.05)
        if message is not None and message.error() is None:
            got.append(int(message.value()))
    assert producer.flush(30) == 0
    assert len(delivered) == sent and all(e is None for e in delivered)
    drain = time.time() + 20
    while len(got) < sent and time.time() < drain:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            got.append(int(message.value()))
    consumer.close()
    assert sorted(got) == list(range(sent)), "every record once"
    assert not [e for e in errors if e.code() == KafkaError._AUTHENTICATION], errors
    scraped = scrape_metrics(metrics_port)
    # Sessions of about 6 s over half a minute: four or more for each client's connection.
    assert (metric_value(scraped, "shoal_sasl_reauthentications_total") or 0) >= 6
    assert (metric_value(scraped, "shoal_sasl_sessions_expired_total") or 0) == 0


def test_keys_come_from_an_https_endpoint_and_a_rotated_key_is_fetched(make_broker, idp,
                                                                         tmp_path):
    ca = CertificateAuthority(tmp_path / "ca")
    endpoint = JwksEndpoint(ca, idp.jwks_path.read_text())
    try:
        broker = start_oauth_broker(make_broker, "oauth-https", endpoint.url,
                                    oauth=f'jwks_endpoint_ca_file = "{ca.ca_cert}"\n')
        admin = AdminClient(oauth_config(broker, lambda: idp.token("alice")))
        assert admin.list_topics(timeout=10) is not None
        assert endpoint.fetches == 1
        # The provider rotates: a new key with a new id. The first token signed with it names
        # an id the broker's set lacks, which has the broker fetch the endpoint again.
        rotated = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        numbers = rotated.public_key().public_numbers()
        document = json.loads(endpoint.document)
        document["keys"].append({"kty": "RSA", "kid": "rsa-2", "use": "sig",
                                 "n": b64url(numbers.n), "e": b64url(numbers.e)})
        endpoint.document = json.dumps(document)
        new_token = lambda: idp.token("alice", kid="rsa-2", key=rotated)  # noqa: E731
        deadline = time.time() + 20
        accepted = False
        while not accepted and time.time() < deadline:
            try:
                AdminClient(oauth_config(broker, new_token)).list_topics(timeout=3)
                accepted = True
            except KafkaException:
                time.sleep(0.5)
        assert accepted, "a token signed with the rotated key is accepted once it is fetched"
        assert endpoint.fetches >= 2
    finally:
        endpoint.close()
