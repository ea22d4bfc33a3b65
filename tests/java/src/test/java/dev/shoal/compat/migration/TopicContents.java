package dev.shoal.compat.migration;

import dev.shoal.compat.harness.Clients;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;

/** A topic's records as "partition/offset key=value", read to the end without a group. */
final class TopicContents {
  private TopicContents() {}

  /** Every record a consumer of `isolation` (read_committed, read_uncommitted) sees. */
  static List<String> read(Clients clients, String topic, int partitions, String isolation) {
    List<String> records = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        clients.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation))) {
      List<TopicPartition> all = new ArrayList<>();
      for (int p = 0; p < partitions; p++) {
        all.add(new TopicPartition(topic, p));
      }
      consumer.assign(all);
      consumer.seekToBeginning(all);
      Map<TopicPartition, Long> ends = consumer.endOffsets(all, Clients.TIMEOUT);
      long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
      while (all.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError(topic + " was not read to its end " + ends);
        }
        consumer.poll(Duration.ofMillis(200))
            .forEach(r -> records.add(r.partition() + "/" + r.offset() + " " + r.key() + "=" + r.value()));
      }
    }
    records.sort(null);
    return records;
  }

  /** The values alone. */
  static List<String> values(List<String> records) {
    return records.stream().map(r -> r.substring(r.indexOf('=') + 1)).toList();
  }
}
