package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.cause;
import static dev.shoal.compat.harness.Clients.tp;
import static dev.shoal.compat.harness.Clients.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.apache.kafka.common.errors.InvalidRegularExpression;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.junit.jupiter.api.Test;

/** Records (delete, list offsets by every spec) and transactions through the Admin client. */
class AdminRecordsTest extends BrokerTest {
  private static final long BASE_TIMESTAMP = 1_700_000_000_000L;

  private long offset(Admin admin, TopicPartition partition, OffsetSpec spec) throws Exception {
    return listed(admin, partition, spec).offset();
  }

  private ListOffsetsResultInfo listed(Admin admin, TopicPartition partition, OffsetSpec spec) throws Exception {
    return get(admin.listOffsets(Map.of(partition, spec)).partitionResult(partition));
  }

  @Test
  void deleteRecordsAndListOffsetsBySpec() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("offsets", 1);
    TopicPartition partition = tp(topic, 0);
    KafkaProducer<String, String> producer = clients.producer(Map.of());
    // Timestamps rise, except record 6, which carries the largest.
    for (int i = 0; i < 10; i++) {
      long timestamp = BASE_TIMESTAMP + (i == 6 ? 100_000 : i * 1000L);
      producer.send(new ProducerRecord<>(topic, 0, timestamp, "k", "v" + i));
    }
    producer.flush();

    assertEquals(0, offset(admin, partition, OffsetSpec.earliest()));
    assertEquals(10, offset(admin, partition, OffsetSpec.latest()));
    assertEquals(3, offset(admin, partition, OffsetSpec.forTimestamp(BASE_TIMESTAMP + 2500)));
    assertEquals(6, offset(admin, partition, OffsetSpec.maxTimestamp()));
    // Each answer names the leader epoch of its offset (KIP-320: clients check it against
    // OffsetForLeaderEpoch to find truncation); one leader since the topic was made: epoch 0.
    for (OffsetSpec spec : List.of(OffsetSpec.earliest(), OffsetSpec.latest(),
        OffsetSpec.forTimestamp(BASE_TIMESTAMP + 2500), OffsetSpec.maxTimestamp())) {
      assertEquals(Optional.of(0), listed(admin, partition, spec).leaderEpoch(), spec.toString());
    }
    // No record at or after the timestamp: no offset, and no epoch.
    ListOffsetsResultInfo none = listed(admin, partition, OffsetSpec.forTimestamp(BASE_TIMESTAMP + 1_000_000));
    assertEquals(-1, none.offset());
    assertEquals(Optional.empty(), none.leaderEpoch());

    long low = get(admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(4))).lowWatermarks().get(partition))
        .lowWatermark();
    assertEquals(4, low);
    assertEquals(4, offset(admin, partition, OffsetSpec.earliest()));
    // Without tiered storage the local log is the whole log.
    assertEquals(4, offset(admin, partition, OffsetSpec.earliestLocal()));
    assertEquals(-1, offset(admin, partition, OffsetSpec.latestTiered()));
  }

  private KafkaProducer<String, String> openTransaction(String id, String topic) throws Exception {
    KafkaProducer<String, String> producer =
        clients.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id));
    producer.initTransactions();
    producer.beginTransaction();
    producer.send(new ProducerRecord<>(topic, 0, "k", "open")).get();
    return producer;
  }

  @Test
  void transactionsListedDescribedAndProducersShown() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("txn-admin", 1);
    String id = Clients.unique("txn-admin-id");
    KafkaProducer<String, String> producer = openTransaction(id, topic);

    Collection<TransactionListing> listings = get(admin.listTransactions().all());
    TransactionListing listing =
        listings.stream().filter(l -> l.transactionalId().equals(id)).findFirst().orElseThrow();
    assertEquals(TransactionState.ONGOING, listing.state());
    TransactionDescription description = get(admin.describeTransactions(List.of(id)).all()).get(id);
    assertEquals(TransactionState.ONGOING, description.state());
    assertEquals(Set.of(tp(topic, 0)), description.topicPartitions());
    assertEquals(listing.producerId(), description.producerId());

    List<ProducerState> producers =
        get(admin.describeProducers(List.of(tp(topic, 0))).partitionResult(tp(topic, 0))).activeProducers();
    assertEquals(1, producers.size());
    assertEquals(description.producerId(), producers.get(0).producerId());
    assertTrue(producers.get(0).currentTransactionStartOffset().isPresent());
    producer.commitTransaction();
  }

  @Test
  void transactionsListedByTransactionalIdPattern() throws Exception {
    // ListTransactions v2 (KIP-1152): a pattern ANDed with the other filters.
    Admin admin = clients.admin();
    String topic = clients.createTopic("txn-pattern", 1);
    String first = Clients.unique("txn-pattern-a");
    String second = Clients.unique("txn-pattern-b");
    KafkaProducer<String, String> a = openTransaction(first, topic);
    KafkaProducer<String, String> b = openTransaction(second, topic);

    assertEquals(Set.of(first), listedIds(admin, "txn-pattern-a.*"));
    assertEquals(Set.of(first, second), listedIds(admin, "txn-pattern-[ab].*"));
    // The whole transactional id must match, not a part of it.
    assertEquals(Set.of(), listedIds(admin, "txn-pattern-a"));
    assertInstanceOf(
        InvalidRegularExpression.class,
        cause(admin.listTransactions(new ListTransactionsOptions().filterOnTransactionalIdPattern("txn-(")).all()));
    a.commitTransaction();
    b.commitTransaction();
  }

  private static Set<String> listedIds(Admin admin, String pattern) throws Exception {
    ListTransactionsOptions options = new ListTransactionsOptions().filterOnTransactionalIdPattern(pattern);
    return get(admin.listTransactions(options).all()).stream()
        .map(TransactionListing::transactionalId)
        .filter(id -> id.startsWith("txn-pattern-"))
        .collect(Collectors.toSet());
  }

  @Test
  void fenceProducersFencesTheOpenTransaction() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("fence-admin", 1);
    String id = Clients.unique("fence-admin-id");
    KafkaProducer<String, String> producer = openTransaction(id, topic);
    get(admin.fenceProducers(List.of(id)).all());
    assertThrows(ProducerFencedException.class, producer::commitTransaction);
  }

  /**
   * abortTransaction (WriteTxnMarkers to the partition's leader) ends the open transaction
   * there: read_committed readers move past it. Kafka writes an abort marker to that partition;
   * Shoal aborts the producer's transaction whole, fencing the producer.
   */
  @Test
  void abortTransactionByAdmin() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("abort-admin", 1);
    KafkaProducer<String, String> producer = openTransaction(Clients.unique("abort-admin-id"), topic);
    ProducerState state =
        get(admin.describeProducers(List.of(tp(topic, 0))).partitionResult(tp(topic, 0))).activeProducers().get(0);
    AbortTransactionSpec spec =
        new AbortTransactionSpec(
            tp(topic, 0), state.producerId(), (short) state.producerEpoch(), state.coordinatorEpoch().orElse(-1));
    get(admin.abortTransaction(spec).all());
    KafkaConsumer<String, String> reader =
        clients.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
    long end = reader.endOffsets(List.of(tp(topic, 0))).get(tp(topic, 0));
    assertTrue(end > state.currentTransactionStartOffset().orElseThrow(), "the LSO moved past it: " + end);
    producer.close(Duration.ZERO);
  }
}
