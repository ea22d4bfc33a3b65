"""Share groups' dead-letter topics (KIP-1191) with librdkafka's share consumer: the records a
group rejects go to its `errors.deadletterqueue.topic.name` with Kafka's `__dlq.errors.*`
headers, into a topic the broker creates where `[dead_letters] auto_create_topics` allows it;
a topic share groups may not use (no `errors.deadletterqueue.group.enable`, or a name without
the `[dead_letters] topic_prefix`) gets nothing, and the records are archived anyway with a
warning, as on Kafka. The Java test (ShareGroupTest) checks the records against Apache Kafka."""

import time

import pytest
from confluent_kafka import AcknowledgeType, Consumer, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic, ResourceType

from test_groups import create_topic, produce
from test_share_groups import configure, poll_values, share_consumer

AUTO_CREATE = "[dead_letters]\nauto_create_topics = true\n"


def reject_all(bootstrap, group, topic, count):
    """A share consumer of `group` rejects the first `count` records of `topic`."""
    consumer = share_consumer(bootstrap, group, topic, explicit=True)
    rejected = []
    deadline = time.time() + 30
    while len(rejected) < count and time.time() < deadline:
        for m in poll_values(consumer):
            consumer.acknowledge(m, AcknowledgeType.REJECT)
            rejected.append(m.offset())
    consumer.commit_sync()
    # Given up on means never delivered again.
    assert [m.offset() for m in poll_values(consumer, 2.0)] == []
    consumer.close()
    assert sorted(rejected) == list(range(count))


def dead_letters(bootstrap, topic, count, wait=15):
    """Up to `count` records of `topic`'s partition 0, read for at most `wait` seconds."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": "dlq-reader",
                       "enable.auto.commit": False})
    reader.assign([TopicPartition(topic, 0, 0)])
    got = []
    deadline = time.time() + wait
    while len(got) < count and time.time() < deadline:
        m = reader.poll(0.5)
        if m is not None and m.error() is None:
            got.append(m)
    reader.close()
    return got


def test_rejected_records_go_to_a_dead_letter_topic_the_broker_creates(make_broker):
    broker = make_broker(extra_config=AUTO_CREATE).start()
    create_topic(broker.bootstrap, "jobs", 1)
    configure(broker.bootstrap, "picky", share_auto_offset_reset="earliest",
              errors_deadletterqueue_topic_name="dlq.jobs")
    produce(broker.bootstrap, "jobs", 3, 1)
    reject_all(broker.bootstrap, "picky", "jobs", 3)
    got = dead_letters(broker.bootstrap, "dlq.jobs", 3)
    assert [(m.key(), m.value(), dict(m.headers())) for m in got] == [
        (None, None, {
            "__dlq.errors.topic": b"jobs",
            "__dlq.errors.partition": b"0",
            "__dlq.errors.offset": str(offset).encode(),
            "__dlq.errors.group": b"picky",
            "__dlq.errors.delivery.count": b"1",
            "__dlq.errors.message": b"Offset rejected by client.",
        })
        for offset in range(3)
    ]
    # Created as Kafka creates it: open to share groups' dead letters.
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    resource = ConfigResource(ResourceType.TOPIC, "dlq.jobs")
    described = admin.describe_configs([resource])[resource].result(10)
    assert described["errors.deadletterqueue.group.enable"].value == "true"


@pytest.mark.parametrize("name, topic_config, why", [
    ("dlq.closed", {}, "does not have errors.deadletterqueue.group.enable=true"),
    ("elsewhere", {"errors.deadletterqueue.group.enable": "true"}, "does not start with the prefix"),
])
def test_a_topic_share_groups_may_not_use_gets_nothing_and_the_records_are_archived(
        make_broker, name, topic_config, why):
    broker = make_broker().start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    for future in admin.create_topics([NewTopic("tasks", 1),
                                       NewTopic(name, 1, config=topic_config)]).values():
        future.result(15)
    configure(broker.bootstrap, "strict", share_auto_offset_reset="earliest",
              errors_deadletterqueue_topic_name=name)
    produce(broker.bootstrap, "tasks", 2, 1)
    reject_all(broker.bootstrap, "strict", "tasks", 2)
    assert dead_letters(broker.bootstrap, name, 1, wait=3) == []
    assert why in broker.log(), broker.log()[-2000:]


def test_a_dead_letter_topic_name_starting_with_two_underscores_is_refused(broker):
    with pytest.raises(KafkaException, match="must not start with"):
        configure(broker.bootstrap, "g", errors_deadletterqueue_topic_name="__consumer_offsets")
