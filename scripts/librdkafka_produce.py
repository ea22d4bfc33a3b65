#!/usr/bin/env python3
"""Produces COUNT messages of SIZE bytes to TOPIC with librdkafka (confluent-kafka), acks=all,
and prints the seconds until every one was acknowledged. A stand-in for `kcat -P` where kcat's
librdkafka (Debian's 2.0.2) cannot talk to a broker.

    python3 scripts/librdkafka_produce.py BOOTSTRAP TOPIC COUNT [SIZE]
"""

import sys

from rdk_defaults import produce_all


def main():
    bootstrap, topic, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    size = int(sys.argv[4]) if len(sys.argv) > 4 else 1024
    settings = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
                "queue.buffering.max.kbytes": 1048576, "batch.size": 1000000}
    print(produce_all(settings, topic, count, size))


if __name__ == "__main__":
    main()
