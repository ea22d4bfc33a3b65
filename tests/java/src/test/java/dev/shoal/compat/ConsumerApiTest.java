package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.tp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.junit.jupiter.api.Test;

/** The consumer's positioning and control calls, outside of group rebalancing. */
class ConsumerApiTest extends BrokerTest {
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(30);
  private static final long BASE_TIMESTAMP = 1_700_000_000_000L;

  /** Ten records at timestamps BASE, BASE+1000, ... (CreateTime topics keep them). */
  private String topicWithTimedRecords() throws Exception {
    // Stamped in 2023: kept past the 7-day default retention the brokers check each second.
    String topic = clients.createTopic("timed", 1, Map.of("retention.ms", "-1"));
    KafkaProducer<String, String> producer = clients.producer(Map.of());
    for (int i = 0; i < 10; i++) {
      producer.send(new ProducerRecord<>(topic, 0, BASE_TIMESTAMP + i * 1000L, "k" + i, "v" + i));
    }
    producer.flush();
    return topic;
  }

  @Test
  void beginningEndAndOffsetsForTimes() throws Exception {
    String topic = topicWithTimedRecords();
    TopicPartition partition = tp(topic, 0);
    KafkaConsumer<String, String> consumer = clients.consumer(null, Map.of());
    assertEquals(0L, consumer.beginningOffsets(List.of(partition)).get(partition));
    assertEquals(10L, consumer.endOffsets(List.of(partition)).get(partition));

    Map<TopicPartition, OffsetAndTimestamp> exact =
        consumer.offsetsForTimes(Map.of(partition, BASE_TIMESTAMP + 3000));
    assertEquals(3L, exact.get(partition).offset());
    assertEquals(BASE_TIMESTAMP + 3000, exact.get(partition).timestamp());
    Map<TopicPartition, OffsetAndTimestamp> between =
        consumer.offsetsForTimes(Map.of(partition, BASE_TIMESTAMP + 3500));
    assertEquals(4L, between.get(partition).offset());
    Map<TopicPartition, OffsetAndTimestamp> after =
        consumer.offsetsForTimes(Map.of(partition, BASE_TIMESTAMP + 60_000));
    assertNull(after.get(partition), "no record at or after the time: null");
  }

  @Test
  void seekPositionAndSeekToEnd() throws Exception {
    String topic = topicWithTimedRecords();
    TopicPartition partition = tp(topic, 0);
    KafkaConsumer<String, String> consumer = clients.consumer(null, Map.of());
    consumer.assign(List.of(partition));
    consumer.seek(partition, 7);
    List<ConsumerRecord<String, String>> records = Clients.poll(consumer, 3, READ_TIMEOUT);
    assertEquals(List.of(7L, 8L, 9L), records.stream().map(ConsumerRecord::offset).toList());
    assertEquals(10L, consumer.position(partition));
    consumer.seekToBeginning(List.of(partition));
    assertEquals(0L, consumer.position(partition));
    consumer.seekToEnd(List.of(partition));
    assertEquals(10L, consumer.position(partition));
  }

  @Test
  void pauseStopsDeliveryAndResumeRestartsIt() throws Exception {
    String topic = topicWithTimedRecords();
    TopicPartition partition = tp(topic, 0);
    KafkaConsumer<String, String> consumer = clients.consumer(null, Map.of());
    consumer.assign(List.of(partition));
    consumer.pause(List.of(partition));
    assertEquals(Set.of(partition), consumer.paused());
    assertEquals(0, consumer.poll(Duration.ofMillis(1500)).count());
    consumer.resume(List.of(partition));
    assertEquals(10, Clients.poll(consumer, 10, READ_TIMEOUT).size());
  }

  @Test
  void commitSyncAndCommitAsyncAreReadBack() throws Exception {
    String topic = topicWithTimedRecords();
    TopicPartition partition = tp(topic, 0);
    String group = Clients.unique("commits");
    KafkaConsumer<String, String> consumer = clients.consumer(group, Map.of());
    consumer.assign(List.of(partition));
    consumer.commitSync(Map.of(partition, new OffsetAndMetadata(4, "sync")));
    assertEquals(
        new OffsetAndMetadata(4, "sync").offset(), consumer.committed(Set.of(partition)).get(partition).offset());
    assertEquals("sync", consumer.committed(Set.of(partition)).get(partition).metadata());

    CompletableFuture<Exception> done = new CompletableFuture<>();
    consumer.commitAsync(
        Map.of(partition, new OffsetAndMetadata(6, "async")), (offsets, error) -> done.complete(error));
    long deadline = System.nanoTime() + READ_TIMEOUT.toNanos();
    while (!done.isDone() && System.nanoTime() < deadline) {
      consumer.poll(Duration.ofMillis(100)); // callbacks run inside poll
    }
    assertNull(done.get(1, TimeUnit.SECONDS));
    OffsetAndMetadata committed = consumer.committed(Set.of(partition)).get(partition);
    assertEquals(6, committed.offset());
    assertEquals("async", committed.metadata());

    // A second consumer of the group starts from the committed offset.
    KafkaConsumer<String, String> next = clients.consumer(group, Map.of());
    next.assign(List.of(partition));
    assertEquals(6L, Clients.poll(next, 1, READ_TIMEOUT).get(0).offset());
  }

  @Test
  void wakeupInterruptsALongPoll() throws Exception {
    String topic = clients.createTopic("wakeup", 1);
    KafkaConsumer<String, String> consumer = clients.consumer(null, Map.of());
    consumer.assign(List.of(tp(topic, 0)));
    consumer.poll(Duration.ofMillis(100));
    CompletableFuture.delayedExecutor(500, TimeUnit.MILLISECONDS).execute(consumer::wakeup);
    long start = System.nanoTime();
    assertThrows(WakeupException.class, () -> consumer.poll(Duration.ofSeconds(20)));
    assertTrue(System.nanoTime() - start < Duration.ofSeconds(10).toNanos());
  }
}
