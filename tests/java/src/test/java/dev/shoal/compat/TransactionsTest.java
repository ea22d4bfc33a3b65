package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.tp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.RawRequests;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;

/** Transactions as the Java producer runs them (with Kafka 4's transaction.version 2). */
class TransactionsTest extends BrokerTest {
  private static final Duration READ_TIMEOUT = Duration.ofSeconds(30);

  private KafkaProducer<String, String> transactional(String id) {
    KafkaProducer<String, String> producer =
        clients.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id));
    producer.initTransactions();
    return producer;
  }

  private KafkaConsumer<String, String> reader(String isolation) {
    return clients.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation));
  }

  @Test
  void readCommittedSkipsAbortedTransactions() throws Exception {
    String topic = clients.createTopic("txn", 1);
    KafkaProducer<String, String> producer = transactional(Clients.unique("txn-id"));
    for (String outcome : List.of("commit", "abort", "commit")) {
      producer.beginTransaction();
      for (int i = 0; i < 10; i++) {
        producer.send(new ProducerRecord<>(topic, 0, outcome, outcome + i));
      }
      if (outcome.equals("commit")) {
        producer.commitTransaction();
      } else {
        producer.flush();
        producer.abortTransaction();
      }
    }

    KafkaConsumer<String, String> committed = reader("read_committed");
    committed.assign(List.of(tp(topic, 0)));
    List<ConsumerRecord<String, String>> seen = Clients.poll(committed, 20, READ_TIMEOUT);
    assertEquals(20, seen.size());
    assertTrue(seen.stream().allMatch(r -> r.key().equals("commit")));
    // Each transaction ends with a marker that takes an offset: 10 records, 1 marker, ...
    assertEquals(0, seen.get(0).offset());
    assertEquals(22, seen.get(10).offset());
    assertEquals(33, committed.endOffsets(List.of(tp(topic, 0))).get(tp(topic, 0)));

    KafkaConsumer<String, String> uncommitted = reader("read_uncommitted");
    uncommitted.assign(List.of(tp(topic, 0)));
    List<ConsumerRecord<String, String>> all = Clients.poll(uncommitted, 30, READ_TIMEOUT);
    assertEquals(30, all.size());
    assertEquals("abort0", all.get(10).value());
    assertEquals(11, all.get(10).offset());
  }

  /** Consume-transform-produce: offsets committed with the output, or not at all. */
  @Test
  void sendOffsetsToTransactionCommitsWithTheOutput() throws Exception {
    String input = clients.createTopic("ctp-in", 1);
    String output = clients.createTopic("ctp-out", 1);
    String group = Clients.unique("ctp-group");
    KafkaProducer<String, String> seed = clients.producer(Map.of());
    for (int i = 0; i < 40; i++) {
      seed.send(new ProducerRecord<>(input, 0, "k" + i, "v" + i));
    }
    seed.flush();

    KafkaConsumer<String, String> consumer = clients.consumer(group, Map.of());
    consumer.subscribe(List.of(input));
    KafkaProducer<String, String> producer = transactional(Clients.unique("ctp-id"));
    List<ConsumerRecord<String, String>> firstHalf = Clients.poll(consumer, 40, READ_TIMEOUT);
    assertEquals(40, firstHalf.size());

    // The first 20 in a committed transaction, the next 20 in an aborted one.
    for (int half = 0; half < 2; half++) {
      producer.beginTransaction();
      for (ConsumerRecord<String, String> record : firstHalf.subList(half * 20, half * 20 + 20)) {
        producer.send(new ProducerRecord<>(output, 0, record.key(), record.value().toUpperCase()));
      }
      long next = firstHalf.get(half * 20 + 19).offset() + 1;
      producer.sendOffsetsToTransaction(
          Map.of(tp(input, 0), new OffsetAndMetadata(next)), consumer.groupMetadata());
      if (half == 0) {
        producer.commitTransaction();
      } else {
        producer.abortTransaction();
      }
    }

    Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(Set.of(tp(input, 0)));
    assertEquals(20, committed.get(tp(input, 0)).offset());
    KafkaConsumer<String, String> reader = reader("read_committed");
    reader.assign(List.of(tp(output, 0)));
    List<ConsumerRecord<String, String>> out = Clients.poll(reader, 21, Duration.ofSeconds(5));
    assertEquals(20, out.size());
    assertEquals("V19", out.get(19).value());
  }

  /**
   * A second producer with the same transactional.id fences the first: the first's open
   * transaction is aborted and its next commit fails with ProducerFencedException.
   */
  @Test
  void sameTransactionalIdFencesTheFirstProducer() throws Exception {
    String topic = clients.createTopic("fence", 1);
    String id = Clients.unique("fence-id");
    KafkaProducer<String, String> first = transactional(id);
    first.beginTransaction();
    first.send(new ProducerRecord<>(topic, 0, "first", "open")).get();

    KafkaProducer<String, String> second = transactional(id);
    second.beginTransaction();
    second.send(new ProducerRecord<>(topic, 0, "second", "committed")).get();
    second.commitTransaction();

    assertThrows(ProducerFencedException.class, first::commitTransaction);

    KafkaConsumer<String, String> reader = reader("read_committed");
    reader.assign(List.of(tp(topic, 0)));
    List<ConsumerRecord<String, String>> seen = Clients.poll(reader, 2, Duration.ofSeconds(5));
    assertEquals(1, seen.size());
    assertEquals("second", seen.get(0).key());
  }

  /** Records of a transaction are invisible to read_committed until it commits. */
  @Test
  void openTransactionHoldsBackTheLastStableOffset() throws Exception {
    String topic = clients.createTopic("lso", 1);
    KafkaProducer<String, String> producer = transactional(Clients.unique("lso-id"));
    producer.beginTransaction();
    producer.send(new ProducerRecord<>(topic, 0, "k", "pending")).get();

    KafkaConsumer<String, String> reader = reader("read_committed");
    reader.assign(List.of(tp(topic, 0)));
    assertEquals(0, Clients.poll(reader, 1, Duration.ofSeconds(2)).size());
    Map<TopicPartition, Long> ends = reader.endOffsets(List.of(tp(topic, 0)));
    assertEquals(0L, ends.get(tp(topic, 0)), "read_committed end offset is the LSO");
    KafkaConsumer<String, String> uncommitted = reader("read_uncommitted");
    assertEquals(1L, uncommitted.endOffsets(List.of(tp(topic, 0))).get(tp(topic, 0)));

    producer.commitTransaction();
    List<ConsumerRecord<String, String>> seen = Clients.poll(reader, 1, READ_TIMEOUT);
    assertEquals(1, seen.size());
    assertEquals("pending", seen.get(0).value());
    assertEquals(2L, reader.endOffsets(List.of(tp(topic, 0))).get(tp(topic, 0)));
  }

  /**
   * Transactions V2 (KIP-890), finalized as Kafka 4 finalizes them: partitions join a
   * transaction with the write, and the producer's epoch moves on at every end, so a write of
   * an ended transaction that arrives late (a retry stuck in the network) is refused, neither
   * appended nor beginning a transaction that nothing would ever end.
   */
  @Test
  void transactionsV2RefuseALateWriteOfAnEndedTransaction() throws Exception {
    FeatureMetadata features = Clients.get(clients.admin().describeFeatures().featureMetadata());
    assertEquals(2, features.finalizedFeatures().get("transaction.version").maxVersionLevel());
    String topic = clients.createTopic("late", 1);
    String id = Clients.unique("late-id");
    KafkaProducer<String, String> producer = transactional(id);
    producer.beginTransaction();
    producer.send(new ProducerRecord<>(topic, 0, "k", "first")).get();
    ProducerState first = onlyProducer(topic);
    producer.commitTransaction();
    producer.beginTransaction();
    producer.send(new ProducerRecord<>(topic, 0, "k", "second")).get();
    assertEquals(first.producerEpoch() + 1, onlyProducer(topic).producerEpoch(), "a new epoch");
    producer.commitTransaction();
    long end = endOffset(topic, "read_uncommitted");

    // The first transaction's next batch, arriving after both commits.
    MemoryRecords late =
        MemoryRecords.withTransactionalRecords(
            Compression.NONE,
            first.producerId(),
            (short) first.producerEpoch(),
            1,
            new SimpleRecord("late".getBytes()));
    Errors error = RawRequests.produce(broker.bootstrap(), id, topic, 0, late, (short) 12);
    assertTrue(
        Set.of(Errors.INVALID_PRODUCER_EPOCH, Errors.PRODUCER_FENCED).contains(error), error.name());
    assertEquals(end, endOffset(topic, "read_uncommitted"), "nothing appended");
    assertEquals(end, endOffset(topic, "read_committed"), "no transaction left open");
    List<ConsumerRecord<String, String>> seen =
        Clients.poll(committedReader(topic), 2, READ_TIMEOUT);
    assertEquals(List.of("first", "second"), seen.stream().map(ConsumerRecord::value).toList());
  }

  private ProducerState onlyProducer(String topic) throws Exception {
    List<ProducerState> producers =
        Clients.get(
                clients.admin().describeProducers(List.of(tp(topic, 0))).partitionResult(tp(topic, 0)))
            .activeProducers();
    assertEquals(1, producers.size(), producers::toString);
    return producers.get(0);
  }

  private long endOffset(String topic, String isolation) {
    return reader(isolation).endOffsets(List.of(tp(topic, 0))).get(tp(topic, 0));
  }

  private KafkaConsumer<String, String> committedReader(String topic) {
    KafkaConsumer<String, String> reader = reader("read_committed");
    reader.assign(List.of(tp(topic, 0)));
    return reader;
  }
}
