package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.tp;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The Java producer: idempotence, every codec, headers, the record size limit. */
class ProducerTest extends BrokerTest {
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(30);

  @Test
  void idempotentAcksAllWritesEachRecordOnceInOrder() throws Exception {
    String topic = clients.createTopic("idempotent", 3);
    KafkaProducer<String, String> producer =
        clients.producer(
            Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
                ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5",
                ProducerConfig.BATCH_SIZE_CONFIG, "2048"));
    int count = 3000;
    List<Future<RecordMetadata>> sent = new ArrayList<>();
    for (int i = 0; i < count; i++) {
      sent.add(producer.send(new ProducerRecord<>(topic, i % 3, "k" + i, "v" + i)));
      if (i < 3) {
        // Each partition's first batch is acknowledged before the burst: a first batch that
        // failed while a later one was written is retried forever by the Java producer on Apache
        // Kafka (KAFKA-14359), which is Kafka's bug and not what this test is about.
        sent.get(i).get();
      }
    }
    producer.flush();
    Map<Integer, Long> lastOffset = new HashMap<>();
    for (int i = 0; i < count; i++) {
      RecordMetadata metadata = sent.get(i).get();
      long previous = lastOffset.getOrDefault(metadata.partition(), -1L);
      assertEquals(previous + 1, metadata.offset(), "offsets of one partition follow send order");
      lastOffset.put(metadata.partition(), metadata.offset());
    }

    KafkaConsumer<String, String> consumer = clients.consumer(null, Map.of());
    consumer.assign(List.of(tp(topic, 0), tp(topic, 1), tp(topic, 2)));
    List<ConsumerRecord<String, String>> records = Clients.poll(consumer, count, READ_TIMEOUT);
    assertEquals(count, records.size());
    Map<Integer, Integer> nextIndex = new HashMap<>(Map.of(0, 0, 1, 1, 2, 2));
    for (ConsumerRecord<String, String> record : records) {
      int expected = nextIndex.get(record.partition());
      assertEquals("v" + expected, record.value());
      nextIndex.put(record.partition(), expected + 3);
    }
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
  void everyCodecRoundTrips(String codec) throws Exception {
    String topic = clients.createTopic("codec-" + codec, 1);
    KafkaProducer<String, String> producer =
        clients.producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec));
    int count = 500;
    for (int i = 0; i < count; i++) {
      producer.send(new ProducerRecord<>(topic, "key-" + i, ("value-" + i + " ").repeat(20)));
    }
    producer.flush();
    KafkaConsumer<String, String> consumer = clients.consumer(null, Map.of());
    consumer.assign(List.of(tp(topic, 0)));
    List<ConsumerRecord<String, String>> records = Clients.poll(consumer, count, READ_TIMEOUT);
    assertEquals(count, records.size());
    for (int i = 0; i < count; i++) {
      assertEquals(i, records.get(i).offset());
      assertEquals("key-" + i, records.get(i).key());
      assertEquals(("value-" + i + " ").repeat(20), records.get(i).value());
    }
  }

  @Test
  void headersKeepOrderDuplicatesAndNullValues() throws Exception {
    String topic = clients.createTopic("headers", 1);
    KafkaProducer<String, String> producer = clients.producer(Map.of());
    List<Header> headers =
        List.of(
            new RecordHeader("trace", "abc".getBytes(StandardCharsets.UTF_8)),
            new RecordHeader("trace", "def".getBytes(StandardCharsets.UTF_8)),
            new RecordHeader("empty", new byte[0]),
            new RecordHeader("null", null));
    producer.send(new ProducerRecord<>(topic, 0, "k", "v", headers)).get();
    producer.send(new ProducerRecord<>(topic, 0, null, null)).get();

    KafkaConsumer<String, String> consumer = clients.consumer(null, Map.of());
    consumer.assign(List.of(tp(topic, 0)));
    List<ConsumerRecord<String, String>> records = Clients.poll(consumer, 2, READ_TIMEOUT);
    assertEquals(2, records.size());
    Header[] received = records.get(0).headers().toArray();
    assertEquals(headers.size(), received.length);
    for (int i = 0; i < headers.size(); i++) {
      assertEquals(headers.get(i).key(), received[i].key());
      assertArrayEquals(headers.get(i).value(), received[i].value());
    }
    assertEquals(null, records.get(1).key());
    assertEquals(null, records.get(1).value());
    assertEquals(0, records.get(1).headers().toArray().length);
  }

  /**
   * A topic's max.message.bytes (Kafka's default, 1048588) bounds a batch: the largest record
   * that fits is stored; one byte-for-byte over is refused by the broker with
   * RecordTooLargeException (the producer's own max.request.size is set higher, so the refusal
   * is the broker's).
   */
  @Test
  void largestRecordIsAcceptedAndOneOverIsRefused() throws Exception {
    int limit = 100_000;
    String topic =
        clients.createTopic("large", 1, Map.of("max.message.bytes", Integer.toString(limit)));
    KafkaProducer<String, String> producer =
        clients.producer(
            Map.of(
                ProducerConfig.MAX_REQUEST_SIZE_CONFIG, "1000000",
                ProducerConfig.BATCH_SIZE_CONFIG, "1",
                ProducerConfig.COMPRESSION_TYPE_CONFIG, "none",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false",
                ProducerConfig.RETRIES_CONFIG, "0"));
    // A batch of one record: 61 bytes of batch header, then the record's own framing (length,
    // attributes, deltas, key and value lengths: 11 bytes here with no key and no headers).
    int fits = limit - 61 - 11;
    RecordMetadata stored = producer.send(new ProducerRecord<>(topic, 0, null, "x".repeat(fits))).get();
    assertEquals(0, stored.offset());
    ExecutionException refused =
        assertThrows(
            ExecutionException.class,
            () -> producer.send(new ProducerRecord<>(topic, 0, null, "x".repeat(fits + 1))).get());
    assertInstanceOf(RecordTooLargeException.class, refused.getCause());
  }

  /**
   * A CreateTime record's timestamp must lie within the topic's bounds of the broker's clock:
   * message.timestamp.after.max.ms (an hour by default) and before.max.ms.
   */
  @Test
  void timestampsOutOfTheTopicsBoundsAreRefused() throws Exception {
    String topic =
        clients.createTopic("bounded", 1, Map.of("message.timestamp.before.max.ms", "60000"));
    KafkaProducer<String, String> producer =
        clients.producer(
            Map.of(
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false",
                ProducerConfig.RETRIES_CONFIG, "0"));
    long now = System.currentTimeMillis();
    long hour = 3_600_000L;
    assertEquals(0, producer.send(new ProducerRecord<>(topic, 0, now, null, "now")).get().offset());
    for (long timestamp : new long[] {now + 2 * hour, now - 2 * hour}) {
      ExecutionException refused =
          assertThrows(
              ExecutionException.class,
              () -> producer.send(new ProducerRecord<>(topic, 0, timestamp, null, "x")).get());
      assertInstanceOf(InvalidTimestampException.class, refused.getCause(), Long.toString(timestamp));
    }
  }
}
