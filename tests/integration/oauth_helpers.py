"""A local identity provider for the OAUTHBEARER tests (signing keys, their JWKS, a
client-credentials token endpoint on loopback) and brokers that check its tokens."""

import base64
import http.server
import json
import ssl
import threading
import time
import urllib.parse

import jwt
from confluent_kafka.admin import (AclBinding, AclOperation, AclPermissionType, AdminClient,
                                   ResourcePatternType, ResourceType)
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from conftest import free_port

ISSUER = "https://idp.shoal.test/realms/kafka"
AUDIENCE = "kafka-broker"


def b64url(number, size=None):
    data = number.to_bytes(size or (number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class IdentityProvider:
    """Signing keys (RS256 and ES256) and the JWKS of their public halves."""

    def __init__(self, directory):
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        rsa_numbers = self.rsa.public_key().public_numbers()
        ec_numbers = self.ec.public_key().public_numbers()
        self.jwks_path = directory / "jwks.json"
        self.jwks_path.write_text(json.dumps({"keys": [
            {"kty": "RSA", "kid": "rsa-1", "use": "sig", "alg": "RS256",
             "n": b64url(rsa_numbers.n), "e": b64url(rsa_numbers.e)},
            {"kty": "EC", "kid": "ec-1", "use": "sig", "crv": "P-256",
             "x": b64url(ec_numbers.x, 32), "y": b64url(ec_numbers.y, 32)},
        ]}))

    def token(self, subject="alice", algorithm="RS256", kid=None, key=None, lifetime=300,
              **overrides):
        now = int(time.time())
        claims = {"sub": subject, "iss": ISSUER, "aud": AUDIENCE, "iat": now,
                  "exp": now + lifetime, "scope": "kafka"}
        claims.update(overrides)
        claims = {k: v for k, v in claims.items() if v is not None}
        if algorithm == "none":
            return jwt.encode(claims, None, algorithm="none")
        if key is None:
            key = self.ec if algorithm == "ES256" else self.rsa
        kid = kid or ("ec-1" if algorithm == "ES256" else "rsa-1")
        return jwt.encode(claims, key, algorithm=algorithm, headers={"kid": kid})


def answer_json(handler, body):
    """A 200 answer with a JSON body, from an http.server handler."""
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class TokenEndpoint:
    """The identity provider's client-credentials token endpoint, on loopback: a client that
    POSTs grant_type=client_credentials with the right id and secret gets a signed token."""

    def __init__(self, idp, client_id, client_secret, lifetime=300):
        endpoint = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                form = urllib.parse.parse_qs(self.rfile.read(length).decode())
                credentials = self.headers.get("Authorization", "")
                expected = "Basic " + base64.b64encode(
                    f"{client_id}:{client_secret}".encode()).decode()
                if form.get("grant_type") != ["client_credentials"] or credentials != expected:
                    self.send_response(401)
                    self.end_headers()
                    return
                endpoint.issued += 1
                token = idp.token(client_id, lifetime=lifetime)
                body = json.dumps({"access_token": token, "token_type": "Bearer",
                                   "expires_in": lifetime}).encode()
                answer_json(self, body)

            def log_message(self, *_args):
                pass

        self.issued = 0
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/token"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class JwksEndpoint:
    """The identity provider's JWKS over HTTPS (a certificate from the test CA), serving
    whatever key set `document` holds at each request."""

    def __init__(self, ca, document):
        endpoint = self
        self.document, self.fetches = document, 0
        cert, key = ca.issue("idp", "/CN=localhost", server=True)

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                endpoint.fetches += 1
                body = endpoint.document.encode()
                answer_json(self, body)

            def log_message(self, *_args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
        self.url = f"https://127.0.0.1:{self.server.server_port}/realms/kafka/certs"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


def start_oauth_broker(make_broker, name, jwks_url, top="", sasl="", oauth="", rest="",
                       mechanisms='["OAUTHBEARER"]'):
    """A broker with PLAINTEXT and SASL_PLAINTEXT listeners checking tokens against
    `jwks_url` with the test's issuer and audience; the other arguments add lines to the
    config's top, its [sasl] and [sasl.oauthbearer] sections, and its end."""
    sasl_port = free_port()
    broker = make_broker(name)
    broker.config_path.write_text(
        f'listeners = "PLAINTEXT://127.0.0.1:{broker.port},SASL_PLAINTEXT://127.0.0.1:{sasl_port}"\n'
        f'data_dir = "{broker.data_dir}"\n' + top +
        f"[sasl]\nenabled_mechanisms = {mechanisms}\n" + sasl +
        "[sasl.oauthbearer]\n"
        f'jwks_endpoint_url = "{jwks_url}"\n'
        f'expected_issuer = "{ISSUER}"\n'
        f'expected_audience = ["{AUDIENCE}"]\n' + oauth + rest
    )
    broker.start()
    broker.sasl_bootstrap = f"127.0.0.1:{sasl_port}"
    return broker


def allow(broker, principal, topic, group):
    admin = AdminClient({"bootstrap.servers": broker.sasl_bootstrap,
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
                         "sasl.username": "admin", "sasl.password": "admin-secret"})
    bindings = [AclBinding(ResourceType.TOPIC, topic, ResourcePatternType.LITERAL, principal, "*",
                           operation, AclPermissionType.ALLOW)
                for operation in (AclOperation.WRITE, AclOperation.READ, AclOperation.DESCRIBE,
                                  AclOperation.CREATE)]
    bindings.append(AclBinding(ResourceType.GROUP, group, ResourcePatternType.LITERAL, principal,
                               "*", AclOperation.READ, AclPermissionType.ALLOW))
    for future in admin.create_acls(bindings).values():
        future.result(10)
