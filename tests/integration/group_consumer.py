"""A consumer-group member run as its own process, so a test can kill it (-9) like a crashed
application. It prints one line per event and commits synchronously after each record:
  assigned <p,p,...>   after every rebalance
  read <p> <offset>    a record was consumed
  committed <p> <next> a commit (of next offset to read) was acknowledged
Usage: group_consumer.py BOOTSTRAP GROUP TOPIC [group.instance.id|-] [strategy]
The strategy "consumer" joins with the consumer group protocol (KIP-848) instead: the broker
assigns, incrementally."""

import signal
import sys

from confluent_kafka import Consumer, KafkaException


def say(*words):
    print(*words, flush=True)


def main():
    # SIGINT closes the consumer (the test's graceful leave), even when this process was
    # started from a shell that ignores SIGINT for background jobs (an ignored signal is
    # inherited across exec).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    bootstrap, group, topic = sys.argv[1:4]
    config = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": False,
        "auto.offset.reset": "earliest",
        "session.timeout.ms": 6000,
        "heartbeat.interval.ms": 500,
        "partition.assignment.strategy": sys.argv[5] if len(sys.argv) > 5 else "range",
    }
    if len(sys.argv) > 4 and sys.argv[4] != "-":
        config["group.instance.id"] = sys.argv[4]
    broker_assigns = config["partition.assignment.strategy"] == "consumer"
    if broker_assigns:
        # Sessions, heartbeats and assignors are the broker's under this protocol.
        for key in ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy"):
            del config[key]
        config["group.protocol"] = "consumer"
    consumer = Consumer(config)

    owned = set()
    cooperative = broker_assigns or config.get("partition.assignment.strategy") == "cooperative-sticky"

    def report():
        say("assigned", ",".join(str(p) for p in sorted(owned)) or "-")

    # Cooperative rebalances hand out and take back increments; eager ones the whole set.
    def on_assign(c, partitions):
        if not cooperative:
            owned.clear()
        owned.update(p.partition for p in partitions)
        report()

    def on_revoke(c, partitions):
        if cooperative:
            owned.difference_update(p.partition for p in partitions)
        else:
            owned.clear()
        report()

    consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    try:
        while True:
            line = None
            m = consumer.poll(0.1)
            if m is None:
                continue
            if m.error():
                say("error", m.error())
                continue
            say("read", m.partition(), m.offset())
            try:
                consumer.commit(message=m, asynchronous=False)
                line = ("committed", m.partition(), m.offset() + 1)
            except KafkaException as e:
                say("commit-failed", m.partition(), m.offset(), e)
            if line:
                say(*line)
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()


if __name__ == "__main__":
    main()
