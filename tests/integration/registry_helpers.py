"""What the schema registry tests share: a broker serving the registry, and records through a
topic that validates their schema ids."""

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.serialization import MessageField, SerializationContext

from conftest import free_port


def start_registry_broker(make_broker):
    """A broker with `[schema_registry] listen` on a free port (`registry_url`)."""
    port = free_port()
    broker = make_broker(extra_config=f'[schema_registry]\nlisten = "127.0.0.1:{port}"\n')
    broker.registry_url = f"http://127.0.0.1:{port}"
    return broker.start()


def round_trip(bootstrap, topic, serializer, deserializer, values):
    """The values through `topic`, created (unless it is already) with the value schema
    validation on, so every record's id is checked by the broker on the way."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    created = admin.create_topics([NewTopic(topic, num_partitions=1, config={
        "confluent.value.schema.validation": "true"})])[topic]
    try:
        created.result(15)
    except KafkaException as error:
        assert error.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS, error
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for value in values:
        payload = serializer(value, SerializationContext(topic, MessageField.VALUE))
        producer.produce(topic, value=payload)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader",
                         "auto.offset.reset": "earliest"})
    consumer.subscribe([topic])
    read = []
    try:
        while len(read) < len(values):
            message = consumer.poll(10)
            assert message is not None, f"only {len(read)} of {len(values)} records came back"
            assert message.error() is None, message.error()
            payload = message.value()
            # Confluent's wire format: magic byte 0, then the schema id.
            assert payload[0] == 0
            read.append(deserializer(payload, SerializationContext(topic, MessageField.VALUE)))
    finally:
        consumer.close()
    return read
