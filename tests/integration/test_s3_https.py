"""HTTPS to the object store: s3s-fs behind a TLS terminator from Debian (stunnel4) with a
certificate from a test CA. The broker trusts that CA through object_store.ca_file; without
it, it refuses to start and says why."""

import shutil
import socket
import subprocess
import time

import pytest
from confluent_kafka import Producer

from conftest import free_port
from test_clients import consume_all, create_topic
from tls_certs import CertificateAuthority

pytestmark = pytest.mark.skipif(shutil.which("stunnel4") is None,
                                reason="stunnel4 is installed by .ci/run")


@pytest.fixture
def https_endpoint(tmp_path, s3_server):
    ca = CertificateAuthority(tmp_path / "ca")
    cert, key = ca.issue("s3", "/CN=localhost", server=True)
    port = free_port()
    config = tmp_path / "stunnel.conf"
    config.write_text(
        "foreground = yes\n"
        f"output = {tmp_path / 'stunnel.log'}\n"
        "[s3]\n"
        f"accept = 127.0.0.1:{port}\n"
        f"connect = 127.0.0.1:{s3_server.port}\n"
        f"cert = {cert}\n"
        f"key = {key}\n")
    process = subprocess.Popen(["stunnel4", str(config)], stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"https://localhost:{port}", ca
    process.kill()
    process.wait()


def test_produce_and_consume_through_s3_over_https(make_broker, s3_server, https_endpoint):
    endpoint, ca = https_endpoint
    config = s3_server.broker_config(endpoint, extra=f'ca_file = "{ca.ca_cert}"')
    broker = make_broker("https", config).start()
    create_topic(broker.bootstrap, "tls-objects", 2)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "acks": "all"})
    for i in range(1000):
        producer.produce("tls-objects", value=f"v{i}".encode(), partition=i % 2)
    assert producer.flush(30) == 0
    assert len(consume_all(broker.bootstrap, "tls-objects", 2, 1000)) == 1000
    assert s3_server.objects(), "WAL objects were written through the TLS terminator"


def test_an_untrusted_certificate_stops_the_broker_with_a_reason(make_broker, s3_server,
                                                                 https_endpoint):
    endpoint, _ca = https_endpoint
    broker = make_broker("untrusted", s3_server.broker_config(endpoint))
    with pytest.raises(RuntimeError) as stopped:
        broker.start()
    assert "UnknownIssuer" in str(stopped.value), stopped.value
