#!/usr/bin/env python3
"""Produces COUNT messages of SIZE bytes to TOPIC with librdkafka (confluent-kafka), acks=all,
and prints the seconds until every one was acknowledged. A stand-in for `kcat -P` where kcat's
librdkafka (Debian's 2.0.2) cannot talk to a broker.

    python3 scripts/librdkafka_produce.py BOOTSTRAP TOPIC COUNT [SIZE]
"""

import sys
import time

import confluent_kafka


def main():
    bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 1024
    producer = confluent_kafka.Producer({
        "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
        "queue.buffering.max.kbytes": 1048576, "batch.size": 1000000})
    failed = []
    value = b"x" * size
    started = time.time()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, value, on_delivery=lambda e, _m: e and failed.append(e))
                break
            except BufferError:
                producer.poll(0.01)
    if producer.flush(120) or failed:
        raise SystemExit(f"not acknowledged: {len(failed)} failed, first {failed[:1]}")
    print(time.time() - started)


if __name__ == "__main__":
    main()
