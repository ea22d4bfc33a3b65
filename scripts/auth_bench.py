#!/usr/bin/env python3
"""SASL logins per second on one broker core (issue 50): one broker (one shard and the
coordinator on --broker-cpus), a Python client on --bench-cpus logging in over and over, one
connection each (SaslHandshake v1, SaslAuthenticate v1, close), for --seconds per mechanism:

- PLAIN (a config user),
- SCRAM-SHA-512 (a user made with AlterUserScramCredentials, 4096 iterations; the client's own
  PBKDF2 is done once, so the loop measures the exchange and the broker's proof check),
- OAUTHBEARER with an RS256 token (2048-bit key) and with an ES256 token (P-256), each token
  made once and sent every time (the broker checks the signature and claims each login).

Reports logins/s (bounded by the Python client for the fast mechanisms) and the broker's CPU
per login (what a core can take: the steadier figure), as medians over --rounds fresh brokers.

    python3 scripts/auth_bench.py [--rounds 3] [--seconds 5]

Writes perf-results/<date>-auth-logins.json.
"""

import argparse
import base64
import hashlib
import hmac
import json
import os
import pathlib
import shutil
import statistics
import struct
import sys
import tempfile
import time

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from benchlib import cpu_seconds, stop, write_results
from peer_compare import add_scram_user, start_shoal_with_sasl

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "integration"))
from kafka_wire import Connection, Reader, request, sasl_login  # noqa: E402

ISSUER, AUDIENCE = "https://idp.bench/realms/kafka", "kafka"


def b64url(number, size=None):
    data = number.to_bytes(size or (number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def keys(work):
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rn, en = rsa_key.public_key().public_numbers(), ec_key.public_key().public_numbers()
    path = work / "jwks.json"
    path.write_text(json.dumps({"keys": [
        {"kty": "RSA", "kid": "r", "n": b64url(rn.n), "e": b64url(rn.e)},
        {"kty": "EC", "kid": "e", "crv": "P-256", "x": b64url(en.x, 32), "y": b64url(en.y, 32)},
    ]}))
    now = int(time.time())
    claims = {"sub": "bench", "iss": ISSUER, "aud": AUDIENCE, "iat": now, "exp": now + 3600}
    tokens = {"RS256": jwt.encode(claims, rsa_key, algorithm="RS256", headers={"kid": "r"}),
              "ES256": jwt.encode(claims, ec_key, algorithm="ES256", headers={"kid": "e"})}
    return path, tokens


def authenticate_again(conn, correlation_id, auth_bytes):
    """A SaslAuthenticate v1 after the first: (error, auth bytes)."""
    conn.send(request(36, 1, correlation_id, struct.pack(">i", len(auth_bytes)) + auth_bytes))
    reader = Reader(conn.recv_response()[1])
    error = reader.int("h")
    length = reader.int("h")
    if length > 0:
        reader.take(length)
    return error, reader.take(reader.int("i"))


class ScramClient:
    """RFC 5802 from the client's side, the salted password computed once per salt."""

    def __init__(self, user, password):
        self.user, self.password, self.salted = user, password, {}

    def login(self, conn):
        nonce = base64.b64encode(os.urandom(18)).decode()
        bare = f"n={self.user},r={nonce}"
        _, error, server_first, _ = sasl_login(conn, "SCRAM-SHA-512", f"n,,{bare}".encode())
        assert error == 0, error
        fields = dict(part.split("=", 1) for part in server_first.decode().split(","))
        key = (fields["s"], int(fields["i"]))
        if key not in self.salted:
            self.salted[key] = hashlib.pbkdf2_hmac(
                "sha512", self.password, base64.b64decode(fields["s"]), int(fields["i"]))
        salted = self.salted[key]
        client_key = hmac.new(salted, b"Client Key", "sha512").digest()
        stored_key = hashlib.sha512(client_key).digest()
        without_proof = f"c=biws,r={fields['r']}"
        message = f"{bare},{server_first.decode()},{without_proof}".encode()
        signature = hmac.new(stored_key, message, "sha512").digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature))
        final = f"{without_proof},p={base64.b64encode(proof).decode()}".encode()
        error, _ = authenticate_again(conn, 3, final)
        assert error == 0, error


def logins(bootstrap, process, login, seconds):
    before = cpu_seconds(process.pid)
    done = 0
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        conn = Connection(bootstrap)
        login(conn)
        conn.close()
        done += 1
    elapsed = time.perf_counter() - started
    cpu = cpu_seconds(process.pid) - before
    return {"per_s": round(done / elapsed, 1), "broker_cpu_us": round(cpu * 1e6 / done, 1)}


def one_round(args):
    work = pathlib.Path(tempfile.mkdtemp())
    jwks_path, tokens = keys(work)
    extra = ('[sasl]\nenabled_mechanisms = ["PLAIN", "SCRAM-SHA-512", "OAUTHBEARER"]\n'
             "failed_authentication_delay_ms = 0\n"
             "[sasl.oauthbearer]\n"
             f'jwks_endpoint_url = "file://{jwks_path}"\n'
             f'expected_issuer = "{ISSUER}"\nexpected_audience = ["{AUDIENCE}"]\n'
             '[sasl.plain_users]\nalice = "alice-secret"\n')
    process, port, sasl_port = start_shoal_with_sasl(work, args.broker_cpus, extra)
    try:
        add_scram_user(port, "carol", b"carol-secret")
        bootstrap = f"127.0.0.1:{sasl_port}"
        scram = ScramClient("carol", b"carol-secret")

        def plain(conn):
            assert sasl_login(conn, "PLAIN", b"\0alice\0alice-secret")[1] == 0

        def oauth(algorithm):
            message = b"n,,\x01auth=Bearer " + tokens[algorithm].encode() + b"\x01\x01"

            def login(conn):
                assert sasl_login(conn, "OAUTHBEARER", message)[1] == 0, algorithm
            return login

        result = {}
        for name, login in [("plain", plain), ("scram_sha_512", scram.login),
                            ("oauthbearer_rs256", oauth("RS256")),
                            ("oauthbearer_es256", oauth("ES256"))]:
            measured = logins(bootstrap, process, login, args.seconds)
            result.update({f"{name}_{k}": v for k, v in measured.items()})
        return result
    except Exception:
        # What the broker said of its end, if it ended.
        log = (work / "shoal.log").read_text().splitlines()
        print([line for line in log if "panicked" in line or "ERROR" in line][:5],
              file=sys.stderr)
        raise
    finally:
        stop(process)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--broker-cpus", default="0")
    ap.add_argument("--bench-cpus", default="1")
    args = ap.parse_args()
    os.sched_setaffinity(0, {int(c) for c in args.bench_cpus.split(",")})
    runs = []
    for _ in range(args.rounds):
        run = one_round(args)
        print(json.dumps(run), flush=True)
        runs.append(run)
    results = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
    workload = {
        "logins": "one connection per login: SaslHandshake v1, SaslAuthenticate v1 (two for "
                  "SCRAM), close; Python client (its SCRAM PBKDF2 done once); tokens made once",
        "seconds_per_mechanism": args.seconds, "rounds": args.rounds,
        "broker": "local store, one shard and the coordinator on the broker CPU",
        "broker_cpus": args.broker_cpus, "client_cpus": args.bench_cpus,
    }
    write_results("auth-logins", "scripts/auth_bench.py", workload, results, runs)


if __name__ == "__main__":
    main()
