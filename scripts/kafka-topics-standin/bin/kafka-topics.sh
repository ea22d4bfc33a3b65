#!/usr/bin/env python3
"""A stand-in for Kafka's bin/kafka-topics.sh, for tests (librdkafka's suite) that shell out
to it: --create, --delete, --alter --partitions and --list through the admin API with
confluent-kafka, so they run against a broker without Kafka's Java tools. Set KAFKA_PATH to
the directory above bin/."""

import argparse
import sys

from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic


def main():
    parser = argparse.ArgumentParser(prog="kafka-topics.sh")
    parser.add_argument("--bootstrap-server", required=True)
    action = parser.add_mutually_exclusive_group(required=True)
    for name in ("create", "delete", "alter", "list"):
        action.add_argument(f"--{name}", action="store_true")
    parser.add_argument("--topic")
    parser.add_argument("--partitions", type=int)
    parser.add_argument("--replication-factor", type=int, default=-1)
    parser.add_argument("--config", action="append", default=[])
    args = parser.parse_args()
    admin = AdminClient({"bootstrap.servers": args.bootstrap_server})
    if args.list:
        for name in sorted(admin.list_topics(timeout=15).topics):
            print(name)
        return 0
    if not args.topic:
        parser.error("--topic is required")
    if args.create:
        configs = dict(c.split("=", 1) for c in args.config)
        topic = NewTopic(args.topic, num_partitions=args.partitions or -1,
                         replication_factor=args.replication_factor, config=configs)
        futures = admin.create_topics([topic])
    elif args.delete:
        futures = admin.delete_topics([args.topic])
    else:
        futures = admin.create_partitions([NewPartitions(args.topic, args.partitions)])
    try:
        futures[args.topic].result(30)
    except Exception as e:  # the admin client's KafkaException, with the broker's reason
        print(f"Error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
