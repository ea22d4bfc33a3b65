package dev.shoal.compat.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.Brokers;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Moving live topics from Apache Kafka to Shoal with Shoal's KIP-1279 mirror: compressed,
 * transactional (committed and aborted) and compacted data mirrored at identical offsets, a
 * consumer group's committed offsets synced, failover while the producer moves to Shoal, and
 * the group resuming on Shoal with no record lost or read twice. Apache Kafka does not serve
 * KIP-1279, so failback to it is not possible (docs/mirroring.md).
 */
class MigrationTest {
  private static final int PARTITIONS = 3;
  private static final Duration SETTLE = Duration.ofSeconds(90);
  private static final String[] FAST = {
    "--set", "mirror.fetch.wait.max.ms=200",
    "--set", "mirror.fetch.backoff.ms=200",
    "--set", "mirror.metadata.refresh.interval.ms=1000",
  };

  private Broker kafka;
  private Broker shoal;
  private Clients onKafka;
  private Clients onShoal;

  @BeforeEach
  void brokers() {
    assumeTrue(Brokers.kinds().containsAll(List.of("kafka", "shoal")), "needs both brokers");
    kafka = Brokers.get("kafka");
    shoal = Brokers.startOwn("shoal", Clients.unique("migration"), b -> {});
    onKafka = new Clients(kafka);
    onShoal = new Clients(shoal);
  }

  @AfterEach
  void stop() throws Exception {
    if (onKafka != null) {
      onKafka.close();
      onShoal.close();
      shoal.close();
    }
  }

  @Test
  void aTopicMovesFromKafkaToShoalAtTheSameOffsetsAndItsGroupResumesThere() throws Exception {
    String orders = onKafka.createTopic("orders", PARTITIONS);
    String accounts = onKafka.createTopic("accounts", 1, Map.of("cleanup.policy", "compact"));
    List<String> committed = new ArrayList<>();
    // Compressed plain records, then transactions committed and aborted.
    try (KafkaProducer<String, String> plain =
        onKafka.producer(Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "zstd"))) {
      for (int i = 0; i < 300; i++) {
        plain.send(new ProducerRecord<>(orders, "k" + (i % 17), "plain-" + i));
        committed.add("plain-" + i);
      }
      for (int i = 0; i < 200; i++) {
        plain.send(new ProducerRecord<>(accounts, "account-" + (i % 20), "balance-" + i));
      }
    }
    try (KafkaProducer<String, String> transactional =
        onKafka.producer(Map.of(
            ProducerConfig.TRANSACTIONAL_ID_CONFIG, Clients.unique("txn"),
            ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"))) {
      transactional.initTransactions();
      for (int t = 0; t < 6; t++) {
        transactional.beginTransaction();
        for (int i = 0; i < 25; i++) {
          transactional.send(new ProducerRecord<>(orders, "k" + i, "txn-" + t + "-" + i));
        }
        if (t % 3 == 2) {
          transactional.abortTransaction();
        } else {
          transactional.commitTransaction();
          for (int i = 0; i < 25; i++) {
            committed.add("txn-" + t + "-" + i);
          }
        }
      }
    }
    // The group reads part of the topic on Kafka and commits.
    List<String> readOnKafka = new ArrayList<>();
    String group = Clients.unique("billing");
    try (KafkaConsumer<String, String> consumer =
        onKafka.consumer(group, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
            ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50))) {
      consumer.subscribe(List.of(orders));
      while (readOnKafka.size() < 200) {
        consumer.poll(Duration.ofMillis(200)).forEach(r -> readOnKafka.add(r.value()));
      }
      consumer.commitSync();
    }

    // Mirror both topics into Shoal while a producer keeps writing to Kafka.
    MirrorCli mirror = new MirrorCli(shoal);
    List<String> create = new ArrayList<>(List.of("create", "from-kafka", "--source", kafka.bootstrap()));
    create.addAll(List.of(FAST));
    mirror.run(create.toArray(String[]::new));
    mirror.run("add", "from-kafka", orders, accounts);
    List<String> live = new ArrayList<>();
    try (KafkaProducer<String, String> producer = onKafka.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
      for (int i = 0; i < 500; i++) {
        producer.send(new ProducerRecord<>(orders, "k" + (i % 13), "live-" + i)).get();
        live.add("live-" + i);
        Thread.sleep(2);
      }
    }
    committed.addAll(live);
    awaitCaughtUp(mirror, Map.of(orders, PARTITIONS, accounts, 1));
    // Identical at every offset, aborted records and all; the same committed view.
    for (String isolation : List.of("read_uncommitted", "read_committed")) {
      assertEquals(TopicContents.read(onKafka, orders, PARTITIONS, isolation),
          TopicContents.read(onShoal, orders, PARTITIONS, isolation), orders + " " + isolation);
    }
    assertEquals(TopicContents.read(onKafka, accounts, 1, "read_uncommitted"),
        TopicContents.read(onShoal, accounts, 1, "read_uncommitted"), accounts);
    // The group's offsets and the compacted topic's policy follow the source.
    Map<TopicPartition, Long> kafkaOffsets = committedOffsets(onKafka, group);
    Eventually.until(() -> committedOffsets(onShoal, group).equals(kafkaOffsets), SETTLE,
        () -> "the group's offsets reach Shoal: " + kafkaOffsets);
    Eventually.until(() -> cleanupPolicy(onShoal, accounts).equals("compact"), SETTLE,
        () -> accounts + " is compacted on Shoal");

    // Failover: the mirror is promoted and the producer moves to Shoal.
    assertTrue(mirror.run("remove", "from-kafka", orders, accounts).contains(orders + ": removed"));
    try (KafkaProducer<String, String> producer =
        onShoal.producer(Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true))) {
      for (int i = 0; i < 300; i++) {
        producer.send(new ProducerRecord<>(orders, "k" + (i % 13), "moved-" + i)).get();
        committed.add("moved-" + i);
      }
    }
    // The group resumes on Shoal from what it committed on Kafka.
    List<String> readOnShoal = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        onShoal.consumer(group, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed",
            ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"))) {
      consumer.subscribe(List.of(orders));
      long deadline = System.nanoTime() + SETTLE.toNanos();
      while (readOnKafka.size() + readOnShoal.size() < committed.size() && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(r -> readOnShoal.add(r.value()));
      }
      // Nothing more arrives than was committed.
      consumer.poll(Duration.ofSeconds(2)).forEach(r -> readOnShoal.add(r.value()));
    }
    List<String> readOnce = new ArrayList<>(readOnKafka);
    readOnce.addAll(readOnShoal);
    assertEquals(readOnce.size(), Set.copyOf(readOnce).size(), "a record was read twice");
    assertEquals(Set.copyOf(committed), Set.copyOf(readOnce), "every committed record is read once");
  }

  private void awaitCaughtUp(MirrorCli mirror, Map<String, Integer> topics) throws Exception {
    Map<String, String> expected = new TreeMap<>();
    try (KafkaConsumer<String, String> consumer = onKafka.consumer(null, Map.of())) {
      for (var topic : topics.entrySet()) {
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < topic.getValue(); p++) {
          all.add(new TopicPartition(topic.getKey(), p));
        }
        consumer.endOffsets(all, Clients.TIMEOUT).forEach((tp, end) ->
            expected.put(tp.topic() + "/" + tp.partition(), end + " MIRRORING"));
      }
    }
    var last = new java.util.concurrent.atomic.AtomicReference<Map<String, String>>();
    Eventually.until(() -> {
      Map<String, String> rows = new TreeMap<>(mirror.describe("from-kafka"));
      last.set(rows);
      return rows.equals(expected);
    }, SETTLE, () -> "the mirror reaches " + expected + ", is " + last.get());
  }

  private static Map<TopicPartition, Long> committedOffsets(Clients clients, String group) throws Exception {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    Map<TopicPartition, OffsetAndMetadata> committed =
        Clients.get(clients.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
    committed.forEach((tp, offset) -> offsets.put(tp, offset.offset()));
    return offsets;
  }

  private static String cleanupPolicy(Clients clients, String topic) throws Exception {
    Admin admin = clients.admin();
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    ConfigEntry entry = Clients.get(admin.describeConfigs(List.of(resource)).all()).get(resource).get("cleanup.policy");
    return entry == null ? "" : entry.value();
  }
}
