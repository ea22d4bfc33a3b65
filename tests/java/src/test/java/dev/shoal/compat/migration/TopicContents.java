package dev.shoal.compat.migration;

import dev.shoal.compat.harness.Clients;
import java.util.List;

/** A topic's records as "partition/offset key=value", read to the end without a group. */
final class TopicContents {
  private TopicContents() {}

  /** Every record a consumer of `isolation` (read_committed, read_uncommitted) sees, sorted. */
  static List<String> read(Clients clients, String topic, int partitions, String isolation) {
    return clients.readToEnd(topic, partitions, isolation).stream()
        .map(r -> r.partition() + "/" + r.offset() + " " + r.key() + "=" + r.value())
        .sorted()
        .toList();
  }

  /** The values alone. */
  static List<String> values(List<String> records) {
    return records.stream().map(r -> r.substring(r.indexOf('=') + 1)).toList();
  }
}
