#!/usr/bin/env python3
"""confluent-kafka (librdkafka) at its defaults, as an application that sets nothing runs it.

    python3 scripts/rdk_defaults.py produce BOOTSTRAP TOPIC COUNT
        prints the seconds until COUNT 1 KiB messages were all acknowledged
    python3 scripts/rdk_defaults.py consume BOOTSTRAP TOPIC COUNT
        prints the seconds from the first message to the COUNT-th, and the bytes read
"""

import sys
import time
import uuid

import confluent_kafka

def produce_all(settings, topic, count, size=1024):
    """Seconds for a Producer with `settings` to have `count` messages of `size` bytes all
    acknowledged; exits naming the first failure if any was not."""
    producer = confluent_kafka.Producer(settings)
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
    return time.time() - started


def produce(bootstrap, topic, count):
    print(produce_all({"bootstrap.servers": bootstrap}, topic, count))


def consume(bootstrap, topic, count):
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap,
                                         "group.id": f"rdk-{uuid.uuid4()}",
                                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    seen = read = 0
    started = None
    deadline = time.time() + 240
    while seen < count:
        if time.time() > deadline:
            raise SystemExit(f"read {seen} of {count} messages in 240 s")
        for message in consumer.consume(1000, 1.0):
            if message.error():
                raise SystemExit(f"consume failed: {message.error()}")
            started = started or time.time()
            seen += 1
            read += len(message.value())
    print(time.time() - started, read)
    consumer.close()


if __name__ == "__main__":
    {"produce": produce, "consume": consume}[sys.argv[1]](sys.argv[2], sys.argv[3],
                                                          int(sys.argv[4]))
