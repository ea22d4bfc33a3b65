package dev.shoal.compat.streams;

import dev.shoal.compat.harness.Clients;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** The committed output of {@link PageCountsApp}: every "category:count" per page, in order. */
public final class PageCountsOutput {
  private final Map<String, List<String>> values = new TreeMap<>();

  private PageCountsOutput() {}

  /** Reads the whole topic as read_committed consumers do, up to its last stable offset. */
  public static PageCountsOutput read(Clients clients, String topic, int partitions) {
    PageCountsOutput output = new PageCountsOutput();
    clients.readToEnd(topic, partitions, "read_committed")
        .forEach(r -> output.values.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value()));
    return output;
  }

  /** Each page's counts in the order they were written. */
  public Map<String, List<Long>> counts() {
    Map<String, List<Long>> counts = new TreeMap<>();
    values.forEach(
        (page, list) ->
            counts.put(page, list.stream().map(v -> Long.parseLong(v.substring(v.lastIndexOf(':') + 1))).toList()));
    return counts;
  }

  /** Each page's last count. */
  public Map<String, Long> last() {
    Map<String, Long> last = new TreeMap<>();
    counts().forEach((page, list) -> last.put(page, list.get(list.size() - 1)));
    return last;
  }

  /** Each page's last category. */
  public Map<String, String> lastCategories() {
    Map<String, String> last = new TreeMap<>();
    values.forEach((page, list) -> {
      String v = list.get(list.size() - 1);
      last.put(page, v.substring(0, v.lastIndexOf(':')));
    });
    return last;
  }

  public int records() {
    return values.values().stream().mapToInt(List::size).sum();
  }
}
