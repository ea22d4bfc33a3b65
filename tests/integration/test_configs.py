"""Topic and broker configs with the admin clients, LogAppendTime and max.message.bytes on the
produce path, OffsetForLeaderEpoch and DescribeProducers, and error answers for APIs Shoal
does not serve."""

import struct
import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka import TIMESTAMP_LOG_APPEND_TIME
from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry,
                                   ConfigResource, ConfigSource, NewTopic)

import kafka_wire as wire
import test_dynamic_configs as dynamic

INVALID_CONFIG = 40
BASE_TS = 1_700_000_000_000


def topic_configs(admin, name):
    resource = ConfigResource(ConfigResource.Type.TOPIC, name)
    entries = admin.describe_configs([resource])[resource].result(timeout=15)
    return {k: (e.value, e.source) for k, e in entries.items()}


def create(admin, name, partitions=1, config=None, validate_only=False):
    futures = admin.create_topics([NewTopic(name, num_partitions=partitions, config=config or {})],
                                  validate_only=validate_only)
    return futures[name].result(timeout=15)


def test_confluent_admin_creates_describes_and_alters_topic_configs(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create(admin, "configured", config={"retention.ms": "3600000", "segment.bytes": "1048576"})
    # Settings librdkafka's 0081_admin passes that mean nothing here are taken, not kept;
    # compaction's are kept (they decide what compaction may clean).
    create(admin, "tolerant", config={"delete.retention.ms": "1000", "flush.ms": "12345678",
                                      "max.compaction.lag.ms": "3600000"})
    tolerant = topic_configs(admin, "tolerant")
    assert "flush.ms" not in tolerant
    assert tolerant["delete.retention.ms"] == ("1000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert tolerant["max.compaction.lag.ms"][0] == "3600000"
    configs = topic_configs(admin, "configured")
    assert configs["segment.bytes"][0] == "1048576"
    assert configs["min.cleanable.dirty.ratio"] == ("0.5", ConfigSource.DEFAULT_CONFIG.value)
    assert configs["retention.ms"][0] == "3600000"
    assert configs["retention.ms"][1] == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert configs["retention.bytes"] == ("-1", ConfigSource.DEFAULT_CONFIG.value)
    assert configs["cleanup.policy"][0] == "delete"
    assert configs["message.timestamp.type"][0] == "CreateTime"
    assert configs["max.message.bytes"][0] == "1048588"

    # Unsupported values and unknown names are refused with a reason; nothing is created.
    for bad in ({"cleanup.policy": "shrink"}, {"no.such.config": "1"},
                {"retention.ms": "soon"}, {"message.timestamp.type": "Sometime"},
                {"min.cleanable.dirty.ratio": "1.5"}, {"cleanup.policy": ""}):
        with pytest.raises(KafkaException) as refused:
            create(admin, "refused", config=bad)
        error = refused.value.args[0]
        assert error.code() == INVALID_CONFIG, error
        assert error.str(), error
    with pytest.raises(KafkaException, match="cleanup.policy"):
        create(admin, "refused", config={"cleanup.policy": "shrink"})
    create(admin, "dry-run", partitions=3, validate_only=True)
    assert "dry-run" not in admin.list_topics(timeout=10).topics
    assert "refused" not in admin.list_topics(timeout=10).topics

    resource = ConfigResource(ConfigResource.Type.TOPIC, "configured", incremental_configs=[
        ConfigEntry("retention.bytes", "1000000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)
    configs = topic_configs(admin, "configured")
    assert configs["retention.bytes"][0] == "1000000"
    assert configs["retention.ms"] == ("604800000", ConfigSource.DEFAULT_CONFIG.value)

    # cleanup.policy is a list: APPEND and SUBTRACT switch compaction on and off.
    def alter_policy(op, value):
        change = ConfigResource(ConfigResource.Type.TOPIC, "configured", incremental_configs=[
            ConfigEntry("cleanup.policy", value, incremental_operation=op)])
        admin.incremental_alter_configs([change])[change].result(timeout=15)
        return topic_configs(admin, "configured")["cleanup.policy"][0]

    assert alter_policy(AlterConfigOpType.APPEND, "compact") == "compact,delete"
    assert alter_policy(AlterConfigOpType.SUBTRACT, "delete") == "compact"
    with pytest.raises(KafkaException, match="cleanup.policy"):
        alter_policy(AlterConfigOpType.SUBTRACT, "compact")
    assert alter_policy(AlterConfigOpType.SET, "delete") == "delete"
    bad = ConfigResource(ConfigResource.Type.TOPIC, "configured", incremental_configs=[
        ConfigEntry("retention.ms", "x", incremental_operation=AlterConfigOpType.APPEND)])
    with pytest.raises(KafkaException, match="list"):
        admin.incremental_alter_configs([bad])[bad].result(timeout=15)
    assert topic_configs(admin, "configured")["retention.bytes"][0] == "1000000"

    # Configs survive a restart (they are in the coordinator's log).
    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert topic_configs(admin, "configured")["retention.bytes"][0] == "1000000"

    brokers = ConfigResource(ConfigResource.Type.BROKER, "0")
    entries = admin.describe_configs([brokers])[brokers].result(timeout=15)
    assert entries["num.partitions"].value == "1"
    assert entries["num.partitions"].is_read_only
    alter_broker = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
        ConfigEntry("num.partitions", "3", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="Cannot update these configs dynamically"):
        admin.incremental_alter_configs([alter_broker])[alter_broker].result(timeout=15)


def test_kafka_python_admin_manages_topics_configs_partitions_and_records(broker):
    from kafka import KafkaAdminClient, TopicPartition as KpTopicPartition
    from kafka.admin import ConfigResource as KpConfigResource, ConfigResourceType, NewTopic as KpNewTopic

    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    admin.create_topics([KpNewTopic("kp-admin", 2, 1, topic_configs={"retention.ms": "7200000"})])
    described = admin.describe_configs([KpConfigResource(ConfigResourceType.TOPIC, "kp-admin")],
                                       config_filter="all")
    text = str(described)
    assert "7200000" in text, text
    # The legacy AlterConfigs replaces the whole set; kafka-python re-sends the topic's other
    # modified configs with it, so retention.ms stays.
    admin.alter_configs([KpConfigResource(ConfigResourceType.TOPIC, "kp-admin",
                                          configs={"retention.bytes": "5000"})], incremental=False)
    admin_c = AdminClient({"bootstrap.servers": broker.bootstrap})
    configs = topic_configs(admin_c, "kp-admin")
    assert configs["retention.bytes"][0] == "5000"
    assert configs["retention.ms"][0] == "7200000"

    admin.create_partitions({"kp-admin": 5})
    assert len(admin_c.list_topics(timeout=10).topics["kp-admin"].partitions) == 5
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(10):
        producer.produce("kp-admin", value=b"x", partition=0)
    producer.flush(15)
    admin.delete_records({KpTopicPartition("kp-admin", 0): 4})
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "lo"})
    low, high = consumer.get_watermark_offsets(TopicPartition("kp-admin", 0), timeout=10)
    consumer.close()
    assert (low, high) == (4, 10)
    admin.delete_topics(["kp-admin"])
    assert "kp-admin" not in admin_c.list_topics(timeout=10).topics
    admin.close()


def test_a_log_append_time_topic_returns_broker_timestamps(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create(admin, "stamped", partitions=2, config={"message.timestamp.type": "LogAppendTime"})
    reports = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 5})
    before = int(time.time() * 1000)
    for i in range(20):
        producer.produce("stamped", value=f"v{i}".encode(), partition=i % 2, timestamp=BASE_TS,
                         on_delivery=lambda err, msg: reports.append((err, msg.timestamp())))
    assert producer.flush(15) == 0
    after = int(time.time() * 1000)
    assert all(err is None for err, _ in reports)
    # The produce answer carries the append time, and the client reports it.
    assert all(ts[0] == TIMESTAMP_LOG_APPEND_TIME and before - 1000 <= ts[1] <= after + 1000
               for _, ts in reports), reports

    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "stamps"})
    consumer.assign([TopicPartition("stamped", p, 0) for p in range(2)])
    seen = []
    deadline = time.time() + 20
    while len(seen) < 20 and time.time() < deadline:
        m = consumer.poll(0.5)
        if m is not None and m.error() is None:
            seen.append(m.timestamp())
    consumer.close()
    assert len(seen) == 20
    assert all(kind == TIMESTAMP_LOG_APPEND_TIME and before - 1000 <= ts <= after + 1000
               for kind, ts in seen), seen

    from kafka import KafkaConsumer, TopicPartition as KpTopicPartition
    kp = KafkaConsumer(bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest")
    kp.assign([KpTopicPartition("stamped", 0)])
    records = [r for batch in kp.poll(timeout_ms=5000).values() for r in batch]
    kp.close()
    assert records and all(r.timestamp_type == 1 and r.timestamp != BASE_TS for r in records)

    # CreateTime topics keep the producer's timestamps.
    create(admin, "created")
    producer.produce("created", value=b"x", timestamp=BASE_TS)
    producer.flush(15)
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "stamps"})
    consumer.assign([TopicPartition("created", 0, 0)])
    m = None
    deadline = time.time() + 10
    while m is None and time.time() < deadline:
        m = consumer.poll(0.5)
    consumer.close()
    assert m is not None and m.timestamp()[1] == BASE_TS


def test_max_message_bytes_refuses_larger_batches(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create(admin, "small", config={"max.message.bytes": "2000"})
    results = []
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                         "message.max.bytes": 1_000_000})
    producer.produce("small", value=b"x" * 5000, on_delivery=lambda e, m: results.append(e))
    producer.flush(15)  # one batch each
    producer.produce("small", value=b"y" * 100, on_delivery=lambda e, m: results.append(e))
    producer.flush(15)
    assert results[0] is not None and results[0].name() == "MSG_SIZE_TOO_LARGE", results
    assert results[1] is None


def test_cluster_wide_topic_defaults_change_at_run_time(broker):
    """message.max.bytes and log.retention.ms on the default broker resource hold for every
    topic that does not set them itself, at once and across a restart; a broker's own resource
    refuses them."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create(admin, "follows")
    create(admin, "own", config={"max.message.bytes": "1000000"})

    def set_defaults(**configs):
        # Raw: librdkafka will not send the cluster default's name ("").
        dynamic.alter(broker.bootstrap, "", {k.replace("_", "."): v for k, v in configs.items()})

    def produce(topic, size):
        results = []
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0,
                             "message.max.bytes": 1_000_000})
        producer.produce(topic, value=b"x" * size, on_delivery=lambda e, m: results.append(e))
        producer.flush(15)
        return results[0].name() if results[0] else None

    set_defaults(message_max_bytes="2000", log_retention_ms="3600000")
    follows = topic_configs(admin, "follows")
    assert follows["max.message.bytes"] == (
        "2000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    assert follows["retention.ms"] == (
        "3600000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value)
    own = topic_configs(admin, "own")
    assert own["max.message.bytes"] == ("1000000", ConfigSource.DYNAMIC_TOPIC_CONFIG.value)
    assert own["retention.ms"][0] == "3600000"
    assert produce("follows", 5000) == "MSG_SIZE_TOO_LARGE"
    assert produce("own", 5000) is None
    # A topic created now follows them too, and CreateTopics says so.
    create(admin, "later")
    assert topic_configs(admin, "later")["max.message.bytes"][0] == "2000"

    # The default resource describes what is set there; a broker's own resource, its value.
    default = dynamic.described(broker.bootstrap, "")
    assert default["message.max.bytes"][0] == "2000"
    assert default["message.max.bytes"][2] == dynamic.DYNAMIC_DEFAULT_BROKER
    own_broker = ConfigResource(ConfigResource.Type.BROKER, "0")
    entries = admin.describe_configs([own_broker])[own_broker].result(timeout=15)
    assert entries["log.retention.ms"].value == "3600000"
    assert entries["log.retention.ms"].source == ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG.value
    per_broker = ConfigResource(ConfigResource.Type.BROKER, "0", incremental_configs=[
        ConfigEntry("log.retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])
    with pytest.raises(KafkaException, match="cluster-wide only"):
        admin.incremental_alter_configs([per_broker])[per_broker].result(timeout=15)
    with pytest.raises(AssertionError, match="log.retention.ms: retention.ms must be"):
        set_defaults(log_retention_ms="soon")

    broker.stop()
    broker.start()
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    assert topic_configs(admin, "follows")["max.message.bytes"][0] == "2000"
    assert produce("follows", 5000) == "MSG_SIZE_TOO_LARGE"

    set_defaults(message_max_bytes=None, log_retention_ms=None)
    follows = topic_configs(admin, "follows")
    assert follows["max.message.bytes"] == ("1048588", ConfigSource.DEFAULT_CONFIG.value)
    assert follows["retention.ms"] == ("604800000", ConfigSource.DEFAULT_CONFIG.value)
    assert topic_configs(admin, "own")["max.message.bytes"][0] == "1000000"
    assert produce("follows", 5000) is None


def test_timestamps_out_of_the_topics_bounds_are_refused(broker):
    """message.timestamp.after.max.ms (Kafka's default: an hour) and before.max.ms bound a
    CreateTime record's timestamp around the broker's clock; LogAppendTime topics are not
    bound."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create(admin, "bounded", config={"message.timestamp.before.max.ms": "60000"})
    create(admin, "defaulted")
    create(admin, "stamped", config={"message.timestamp.type": "LogAppendTime"})
    assert topic_configs(admin, "defaulted")["message.timestamp.after.max.ms"] == (
        "3600000", ConfigSource.DEFAULT_CONFIG.value)
    now = int(time.time() * 1000)

    def produce(topic, timestamp):
        results = []
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
        producer.produce(topic, value=b"x", timestamp=timestamp,
                         on_delivery=lambda e, m: results.append(e))
        producer.flush(15)
        return results[0].name() if results[0] else None

    assert produce("defaulted", now + 2 * 3_600_000) == "INVALID_TIMESTAMP"
    assert produce("defaulted", now - 10 * 3_600_000) is None
    assert produce("bounded", now - 10 * 3_600_000) == "INVALID_TIMESTAMP"
    assert produce("bounded", now) is None
    assert produce("stamped", now + 2 * 3_600_000) is None


def test_offset_for_leader_epoch_reports_the_end_of_epoch_zero(broker):
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create(admin, "epochs")
    producer = Producer({"bootstrap.servers": broker.bootstrap})
    for _ in range(7):
        producer.produce("epochs", value=b"x")
    producer.flush(15)
    body = struct.pack(">i", -1) + struct.pack(">i", 2)
    for topic in ("epochs", "missing"):
        body += wire.string(topic) + struct.pack(">i", 1) + struct.pack(">iii", 0, 0, 0)
    conn = wire.Connection(broker.bootstrap)
    conn.send(wire.request(23, 3, 5, body))  # OffsetForLeaderEpoch v3
    correlation_id, response = conn.recv_response()
    assert correlation_id == 5
    pos = 4 + 4  # throttle time, topic count
    answers = []
    for _ in range(2):
        (n,) = struct.unpack_from(">h", response, pos)
        pos += 2 + n + 4
        answers.append(struct.unpack_from(">hiiq", response, pos))
        pos += 18
    assert answers[0] == (0, 0, 0, 7)  # no error, partition 0, epoch 0, ends at offset 7
    assert answers[1][0] == 3  # UNKNOWN_TOPIC_OR_PARTITION
    conn.close()


def test_describe_producers_lists_idempotent_producers(broker):
    from kafka import KafkaAdminClient, TopicPartition as KpTopicPartition

    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    create(admin, "idem")
    producer = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True})
    for _ in range(5):
        producer.produce("idem", value=b"x")
    producer.flush(15)
    kp = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    states = kp.describe_producers([KpTopicPartition("idem", 0)])
    kp.close()
    state = list(states.values())[0]
    text = str(state)
    assert "last_sequence=4" in text.replace(" ", "") or "'last_sequence': 4" in text, text


def test_an_unimplemented_api_gets_an_error_answer_and_the_connection_stays_open(broker):
    # ElectLeaders v1 (not served: there are no leaders to elect): preferred, all partitions.
    body = struct.pack(">bii", 0, -1, 1000)
    conn = wire.Connection(broker.bootstrap)
    conn.send(wire.request(43, 1, 9, body))
    correlation_id, response = conn.recv_response()
    assert correlation_id == 9
    (error_code,) = struct.unpack_from(">h", response, 4)
    assert error_code == 35  # UNSUPPORTED_VERSION
    # Still serving this connection: ApiVersions v0 answers.
    conn.send(wire.request(18, 0, 10, b""))
    assert conn.recv_response()[0] == 10
    conn.close()


def test_compression_type_recompresses_what_producers_send_otherwise(broker):
    """librdkafka's 0081_admin sets compression.type per topic: each codec is taken, described,
    and batches produced with another codec are stored (and fetched) with the topic's."""
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    codecs = {"uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
    for name in codecs:
        create(admin, f"packed-{name}", config={"compression.type": name})
        assert topic_configs(admin, f"packed-{name}")["compression.type"][0] == name
    with pytest.raises(KafkaException) as refused:
        create(admin, "refused", config={"compression.type": "brotli"})
    assert refused.value.args[0].code() == INVALID_CONFIG
    for name, codec_id in codecs.items():
        topic = f"packed-{name}"
        # The producer compresses with lz4 (or nothing for the lz4 topic).
        sent_with = "none" if name == "lz4" else "lz4"
        producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20,
                             "compression.type": sent_with})
        for i in range(200):
            producer.produce(topic, key=f"k{i}".encode(), value=(f"value-{i}-" * 20).encode())
        assert producer.flush(15) == 0
        stored = raw_batches(broker, topic)
        assert stored and all(attributes & 7 == codec_id for attributes in stored), (name, stored)
        consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": f"g-{name}"})
        consumer.assign([TopicPartition(topic, 0, 0)])
        got = []
        deadline = time.time() + 15
        while len(got) < 200 and time.time() < deadline:
            m = consumer.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.key(), m.value()))
        consumer.close()
        assert got == [(f"k{i}".encode(), (f"value-{i}-" * 20).encode()) for i in range(200)]
    # Back to "producer": batches stay as sent.
    resource = ConfigResource(ConfigResource.Type.TOPIC, "packed-gzip", incremental_configs=[
        ConfigEntry("compression.type", "producer", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([resource])[resource].result(timeout=15)
    assert topic_configs(admin, "packed-gzip")["compression.type"][0] == "producer"


def raw_batches(broker, topic):
    """The attributes of every batch a Fetch v4 returns for partition 0 from offset 0."""
    body = struct.pack(">iiii", -1, 500, 1, 50 << 20) + struct.pack(">b", 0)
    body += struct.pack(">i", 1) + wire.string(topic)
    body += struct.pack(">i", 1) + struct.pack(">iqi", 0, 0, 50 << 20)
    conn = wire.Connection(broker.bootstrap)
    conn.send(wire.request(1, 4, 1, body))
    _, response = conn.recv_response()
    conn.close()
    pos = 4 + 4
    (n,) = struct.unpack_from(">h", response, pos)
    pos += 2 + n + 4
    pos += 4 + 2 + 8 + 8
    (aborted,) = struct.unpack_from(">i", response, pos)
    pos += 4 + max(aborted, 0) * 16
    (size,) = struct.unpack_from(">i", response, pos)
    records = response[pos + 4:pos + 4 + size]
    attributes, at = [], 0
    while at + 23 <= len(records):
        (length,) = struct.unpack_from(">i", records, at + 8)
        (attrs,) = struct.unpack_from(">h", records, at + 21)
        attributes.append(attrs)
        at += 12 + length
    return attributes
