#!/usr/bin/env python3
"""Seeds the fuzzers' corpora with what real clients send: runs a broker, puts a recording
proxy in front of it, drives it with confluent-kafka (librdkafka) and kafka-python (produce
with every codec, consume, a consumer group, admin calls), and writes each distinct request
(API key, version, body) to fuzz/corpus/request_decode/seed-* and each produced record batch
to fuzz/corpus/record_batch/seed-*. Needs target/release/shoal and tests/requirements.txt.

Usage: scripts/capture_fuzz_corpus.py"""

import hashlib
import os
import pathlib
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))
from conftest import Broker  # noqa: E402

CORPUS = ROOT / "fuzz" / "corpus"
PER_API_MAX = 12


class RecordingProxy:
    """Forwards one port to the broker, keeping every request frame the clients send."""

    def __init__(self):
        self.upstream = None
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(64)
        self.port = self.listener.getsockname()[1]
        self.frames = []
        self.lock = threading.Lock()

    def start(self, upstream_port):
        self.upstream = upstream_port
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            client, _ = self.listener.accept()
            server = socket.create_connection(("127.0.0.1", self.upstream))
            threading.Thread(target=self._requests, args=(client, server), daemon=True).start()
            threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()

    def _requests(self, client, server):
        buffer = b""
        try:
            while True:
                chunk = client.recv(65536)
                if not chunk:
                    break
                server.sendall(chunk)
                buffer += chunk
                while len(buffer) >= 4:
                    (size,) = struct.unpack(">i", buffer[:4])
                    if len(buffer) < 4 + size:
                        break
                    with self.lock:
                        self.frames.append(buffer[4:4 + size])
                    buffer = buffer[4 + size:]
        except OSError:
            pass
        finally:
            server.close()

    @staticmethod
    def _pipe(source, sink):
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            sink.close()


def drive_clients(bootstrap):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic
    from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic("seeds", num_partitions=3,
                                           config={"retention.ms": "3600000"})]).values():
        f.result(15)
    for codec in ["none", "gzip", "snappy", "lz4", "zstd"]:
        p = Producer({"bootstrap.servers": bootstrap, "compression.type": codec,
                      "enable.idempotence": codec == "zstd", "linger.ms": 5})
        for i in range(40):
            p.produce("seeds", key=f"k{i}".encode(), value=f"{codec}-{i}".encode() * 3,
                      headers=[("h", b"v")], partition=i % 3)
        p.flush(15)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "seeds-group",
                  "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    c.subscribe(["seeds"])
    deadline = time.time() + 20
    read = 0
    while read < 100 and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            read += 1
    c.commit(asynchronous=False)
    c.close()
    for f in admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, "seeds")]).values():
        f.result(15)
    admin.create_partitions([NewPartitions("seeds", 4)])["seeds"].result(15)
    admin.list_consumer_groups().result(15)
    kp = KafkaProducer(bootstrap_servers=bootstrap, compression_type="gzip")
    for i in range(20):
        kp.send("seeds", value=f"kp-{i}".encode(), partition=0)
    kp.flush()
    kp.close()
    kc = KafkaConsumer("seeds", bootstrap_servers=bootstrap, group_id="kp-seeds",
                       auto_offset_reset="earliest", consumer_timeout_ms=3000)
    for _ in kc:
        pass
    kc.commit()
    kc.close()
    # A transaction that commits group offsets, and a read_committed consumer.
    tp = Producer({"bootstrap.servers": bootstrap, "transactional.id": "seeds-tx"})
    tp.init_transactions(15)
    tc = Consumer({"bootstrap.servers": bootstrap, "group.id": "seeds-tx-group",
                   "isolation.level": "read_committed"})
    tp.begin_transaction()
    for i in range(6):
        tp.produce("seeds", value=f"tx-{i}".encode(), partition=i % 3)
    tp.send_offsets_to_transaction([TopicPartition("seeds", 0, 5)],
                                   tc.consumer_group_metadata(), 15)
    tp.commit_transaction(15)
    tc.assign([TopicPartition("seeds", p, 0) for p in range(3)])
    tc.poll(2)
    tc.close()
    ka = KafkaAdminClient(bootstrap_servers=bootstrap)
    ka.describe_groups(["kp-seeds"])
    ka.list_group_offsets({"kp-seeds": None})
    ka.delete_topics(["seeds"])
    ka.close()


def batches_of_produce(body_after_header):
    """Record batches found in a produce request body: every well-framed magic-2 batch."""
    found = []
    data = body_after_header
    for start in range(len(data) - 61):
        if data[start + 16] != 2:
            continue
        (length,) = struct.unpack_from(">i", data, start + 8)
        end = start + 12 + length
        if 49 <= length and end <= len(data):
            found.append(data[start:end])
    return found


def main():
    with tempfile.TemporaryDirectory() as workdir:
        proxy = RecordingProxy()
        # Clients are sent back to the proxy by Metadata, so every connection is recorded.
        broker = Broker(workdir, f'advertised_listener = "127.0.0.1:{proxy.port}"').start()
        proxy.start(broker.port)
        try:
            drive_clients(f"127.0.0.1:{proxy.port}")
        finally:
            broker.stop()
    requests = CORPUS / "request_decode"
    batches = CORPUS / "record_batch"
    for d in (requests, batches):
        d.mkdir(parents=True, exist_ok=True)
        for old in d.glob("seed-*"):
            old.unlink()
    per_api = {}
    kept = 0
    for frame in proxy.frames:
        api, version = struct.unpack_from(">hh", frame)
        (client_len,) = struct.unpack_from(">h", frame, 8)
        header_len = 10 + max(client_len, 0)
        if is_flexible(api, version):
            header_len += 1  # the tag buffer of a flexible header (request header v2)
        body = frame[header_len:]
        seed = struct.pack(">hh", api, version) + body
        name = hashlib.sha1(seed).hexdigest()[:12]
        if per_api.get((api, version), 0) >= PER_API_MAX:
            continue
        per_api[(api, version)] = per_api.get((api, version), 0) + 1
        (requests / f"seed-{api}-{version}-{name}").write_bytes(seed)
        kept += 1
        if api == 0:
            for b in batches_of_produce(body):
                (batches / f"seed-{hashlib.sha1(b).hexdigest()[:12]}").write_bytes(b)
    print(f"{len(list(requests.glob('seed-*')))} request seeds ({len(per_api)} API versions), "
          f"{len(list(batches.glob('seed-*')))} batch seeds")


def is_flexible(api, version):
    """Whether the request header is v2 (flexible versions), from kafka-protocol's tables."""
    flexible_from = {0: 9, 1: 12, 2: 6, 3: 9, 8: 8, 9: 6, 10: 3, 11: 6, 12: 4, 13: 4, 14: 4,
                     15: 5, 16: 3, 18: 3, 19: 5, 20: 4, 21: 2, 22: 2, 23: 4, 32: 4, 33: 2,
                     24: 3, 25: 3, 26: 3, 28: 3, 37: 2, 42: 2, 44: 1, 47: 99, 60: 0, 61: 0,
                     65: 0, 66: 0}
    return version >= flexible_from.get(api, 99)


if __name__ == "__main__":
    main()
