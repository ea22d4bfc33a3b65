package dev.shoal.compat.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Brokers;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import dev.shoal.compat.harness.JvmProcess;
import dev.shoal.compat.harness.KafkaClasspath;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * MirrorMaker 2 (dedicated mode, connect-mirror) replicating a topic of Apache Kafka into a
 * target broker of the test's kind (a second Kafka, or Shoal) with the identity replication
 * policy and group offset sync: every record arrives, and the group's translated offsets let
 * a consumer resume on the target without losing a record.
 */
class MirrorMaker2Test extends BrokerTest {
  private static final int PARTITIONS = 3;
  private static final Duration SETTLE = Duration.ofSeconds(120);

  private Broker target;
  private Clients onTarget;
  private JvmProcess mirrorMaker;

  @AfterEach
  void stop() throws Exception {
    if (mirrorMaker != null) {
      mirrorMaker.close();
    }
    if (onTarget != null) {
      onTarget.close();
    }
    if (target != null) {
      target.close();
    }
  }

  @Test
  void everyRecordArrivesAndTheGroupResumesOnTheTargetFromItsTranslatedOffsets() throws Exception {
    Broker source = Brokers.get("kafka");
    Clients onSource = clients.track(new Clients(source));
    target = Brokers.startOwn(kind, Clients.unique("mm2-target"), b -> {});
    onTarget = new Clients(target);
    String topic = onSource.createTopic("orders", PARTITIONS);
    String group = Clients.unique("billing");
    Path dir = Files.createDirectories(
        Path.of(System.getProperty("user.dir"), "target", "mm2", kind, Clients.unique("mm2")));
    Path properties = dir.resolve("mm2.properties");
    Files.writeString(properties, mm2Properties(source, target, topic, group), StandardCharsets.UTF_8);
    mirrorMaker = JvmProcess.start("mm2", dir, "512m", KafkaClasspath.connect(),
        "org.apache.kafka.connect.mirror.MirrorMaker", List.of(properties.toString()));
    List<String> produced = Collections.synchronizedList(new ArrayList<>());
    produced.addAll(produce(onSource, topic, 0, 1000));
    awaitReplicated(topic, produced);

    // The group reads and commits on the source while records keep coming, until MirrorMaker 2
    // has translated an offset of every partition to the target. It translates only offsets
    // past the newest offset sync its checkpoint task finds when it starts, and on a loaded
    // machine that task may start after the first records were mirrored: a group that stopped
    // early would never be translated, so the test moves on only once translation is seen.
    List<String> readOnSource = new ArrayList<>();
    Map<TopicPartition, Long> committedOnSource;
    try (Trickle trickle = new Trickle(onSource, topic, produced);
        KafkaConsumer<String, String> consumer =
            onSource.consumer(group, Map.of(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50))) {
      consumer.subscribe(List.of(topic));
      long deadline = System.nanoTime() + SETTLE.toNanos();
      while (!everyPartitionTranslated(committedOffsets(onTarget, group))) {
        assertTrue(System.nanoTime() < deadline,
            () -> "no offset of the group was translated to the target: " + mirrorMaker.logTail());
        consumer.poll(Duration.ofMillis(500)).forEach(r -> readOnSource.add(r.value()));
        consumer.commitSync();
      }
      consumer.commitSync();
      committedOnSource = committedOffsets(onSource, group);
    }
    // More after the group stopped: what it resumes with on the target.
    produced.addAll(produce(onSource, topic, 2000, 500));
    awaitReplicated(topic, produced);
    // The target's offsets number the records as the source's do (both topics started empty),
    // so a translated offset is never past what the group committed on the source.
    Eventually.until(
        () -> {
          Map<TopicPartition, Long> translated = committedOffsets(onTarget, group);
          return everyPartitionTranslated(translated) && committedOnSource.entrySet().stream()
              .allMatch(e -> translated.get(e.getKey()) <= e.getValue());
        },
        SETTLE,
        () -> "the group's offsets " + committedOnSource + " are translated to the target: "
            + mirrorMaker.logTail());
    mirrorMaker.close();
    mirrorMaker = null;

    List<String> readOnTarget = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        onTarget.consumer(group, Map.of())) {
      consumer.subscribe(List.of(topic));
      Set<String> seen = new HashSet<>(readOnSource);
      long deadline = System.nanoTime() + SETTLE.toNanos();
      while (!seen.containsAll(produced) && System.nanoTime() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(r -> {
          readOnTarget.add(r.value());
          seen.add(r.value());
        });
      }
      assertTrue(seen.containsAll(produced), "a record was lost between the clusters");
    }
    // MirrorMaker 2 translates offsets at least once: the group may read a few records again.
    int again = readOnSource.size() + readOnTarget.size() - produced.size();
    System.out.printf("%s: %d records, %d read on the source, %d on the target (%d again)%n",
        kind, produced.size(), readOnSource.size(), readOnTarget.size(), again);
    assertTrue(readOnTarget.size() < produced.size(), "the group resumed, not started over");
    assertEquals(produced.size(), Set.copyOf(produced).size());
  }

  private static boolean everyPartitionTranslated(Map<TopicPartition, Long> offsets) {
    return offsets.size() == PARTITIONS && offsets.values().stream().allMatch(offset -> offset > 0);
  }

  /** Writes a record every few milliseconds on a thread of its own until closed. */
  private static final class Trickle implements AutoCloseable {
    private final Thread thread;
    private volatile boolean stopped;

    Trickle(Clients clients, String topic, List<String> produced) {
      KafkaProducer<String, String> producer = clients.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"));
      thread = new Thread(() -> {
        try (producer) {
          for (int i = 1_000_000; !stopped; i++) {
            producer.send(new ProducerRecord<>(topic, "k" + (i % 29), "order-" + i)).get();
            produced.add("order-" + i);
            Thread.sleep(5);
          }
        } catch (Exception e) {
          throw new IllegalStateException(e);
        }
      }, "trickle");
      thread.start();
    }

    @Override
    public void close() throws InterruptedException {
      stopped = true;
      thread.join();
    }
  }

  private void awaitReplicated(String topic, List<String> produced) throws InterruptedException {
    Eventually.until(
        () -> Set.copyOf(TopicContents.values(TopicContents.read(onTarget, topic, PARTITIONS, "read_committed")))
            .containsAll(produced),
        SETTLE,
        () -> produced.size() + " records reach the target: " + mirrorMaker.logTail());
  }

  private static Map<TopicPartition, Long> committedOffsets(Clients clients, String group) throws Exception {
    Map<TopicPartition, Long> offsets = new HashMap<>();
    Clients.get(clients.admin().listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata())
        .forEach((tp, offset) -> offsets.put(tp, offset.offset()));
    return offsets;
  }

  private static List<String> produce(Clients clients, String topic, int from, int count) throws Exception {
    List<String> values = new ArrayList<>();
    try (KafkaProducer<String, String> producer = clients.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
      for (int i = from; i < from + count; i++) {
        producer.send(new ProducerRecord<>(topic, "k" + (i % 29), "order-" + i));
        values.add("order-" + i);
      }
    }
    return values;
  }

  /** A dedicated MirrorMaker 2 from "source" to "target", one topic and group, fast intervals. */
  private static String mm2Properties(Broker source, Broker target, String topic, String group) {
    return String.join("\n", List.of(
        "clusters = source, target",
        "source.bootstrap.servers = " + source.bootstrap(),
        "target.bootstrap.servers = " + target.bootstrap(),
        "source->target.enabled = true",
        "target->source.enabled = false",
        "source->target.topics = " + topic,
        "source->target.groups = " + group,
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "tasks.max = 1",
        "replication.factor = 1",
        "checkpoints.topic.replication.factor = 1",
        "heartbeats.topic.replication.factor = 1",
        "offset-syncs.topic.replication.factor = 1",
        "offset.storage.replication.factor = 1",
        "status.storage.replication.factor = 1",
        "config.storage.replication.factor = 1",
        "sync.topic.acls.enabled = false",
        "source->target.sync.group.offsets.enabled = true",
        "source->target.sync.group.offsets.interval.seconds = 1",
        "source->target.emit.checkpoints.interval.seconds = 1",
        "source->target.refresh.groups.interval.seconds = 1",
        "source->target.refresh.topics.interval.seconds = 1",
        // An offset sync for every record: translation as exact as MirrorMaker 2 makes it.
        "source->target.offset.lag.max = 0")) + "\n";
  }
}
