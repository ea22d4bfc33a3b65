package dev.shoal.compat.bench;

import dev.shoal.compat.harness.Directories;
import dev.shoal.compat.streams.PageCountsApp;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.CloseOptions.GroupMembershipOperation;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.processor.StateRestoreListener;

/**
 * Kafka Streams through the broker (scripts/platform_compare.py runs it against each broker):
 * PageCountsApp's exactly-once topology over `records` clicks written beforehand, timed from
 * start until every click's output is committed; the thread's commit latency (Streams' own
 * metrics); then the same application started again with its state deleted, timed while its
 * store restores from the changelog. Prints one JSON line.
 *
 * <p>java -cp ... dev.shoal.compat.bench.StreamsBench BOOTSTRAP RECORDS PAGES STATE_DIR
 */
public final class StreamsBench {
  private static final int PARTITIONS = 3;

  private StreamsBench() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    long records = Long.parseLong(args[1]);
    int pages = Integer.parseInt(args[2]);
    Path state = Path.of(args[3]);
    String run = UUID.randomUUID().toString().substring(0, 8);
    String clicks = "bench-clicks-" + run;
    String pageTopic = "bench-pages-" + run;
    String output = "bench-counts-" + run;
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(
          new NewTopic(clicks, PARTITIONS, (short) 1),
          new NewTopic(pageTopic, PARTITIONS, (short) 1).configs(Map.of("cleanup.policy", "compact")),
          new NewTopic(output, PARTITIONS, (short) 1))).all().get();
    }
    writeInput(bootstrap, clicks, pageTopic, records, pages);

    String application = "bench-" + run;
    long started = System.nanoTime();
    KafkaStreams streams = start(bootstrap, application, state, clicks, pageTopic, output);
    awaitOutput(bootstrap, output, records);
    double processSeconds = (System.nanoTime() - started) / 1e9;
    double commitAvgMs = metric(streams, "commit-latency-avg");
    double commitMaxMs = metric(streams, "commit-latency-max");
    // Leaving the group (Streams does not by default) lets the restart below take the tasks at
    // once: otherwise the restore would be timed from the old member's session timeout.
    streams.close(CloseOptions.groupMembershipOperation(GroupMembershipOperation.LEAVE_GROUP)
        .withTimeout(Duration.ofSeconds(30)));
    Directories.deleteRecursively(state);

    AtomicLong restored = new AtomicLong();
    long restoreStarted = System.nanoTime();
    KafkaStreams again = new KafkaStreams(
        PageCountsApp.topology(clicks, pageTopic, output),
        properties(bootstrap, application, state));
    again.setGlobalStateRestoreListener(new StateRestoreListener() {
      @Override
      public void onRestoreStart(TopicPartition partition, String store, long start, long end) {}

      @Override
      public void onBatchRestored(TopicPartition partition, String store, long batchEnd, long count) {
        restored.addAndGet(count);
      }

      @Override
      public void onRestoreEnd(TopicPartition partition, String store, long total) {}
    });
    again.start();
    while (again.state() != KafkaStreams.State.RUNNING) {
      if (System.nanoTime() - restoreStarted > 300_000_000_000L) {
        throw new IllegalStateException("no RUNNING after 300 s of restoring: " + again.state());
      }
      Thread.sleep(20);
    }
    double restoreSeconds = (System.nanoTime() - restoreStarted) / 1e9;
    again.close(Duration.ofSeconds(30));
    System.out.printf(
        "{\"records\": %d, \"process_s\": %.3f, \"records_per_s\": %.0f, \"commit_latency_avg_ms\": %.2f, "
            + "\"commit_latency_max_ms\": %.2f, \"restore_s\": %.3f, \"restored_records\": %d}%n",
        records, processSeconds, records / processSeconds, commitAvgMs, commitMaxMs, restoreSeconds,
        restored.get());
    System.exit(0);
  }

  private static Properties properties(String bootstrap, String application, Path state) {
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, application);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    return props;
  }

  private static KafkaStreams start(
      String bootstrap, String application, Path state, String clicks, String pages, String output) {
    KafkaStreams streams =
        new KafkaStreams(PageCountsApp.topology(clicks, pages, output), properties(bootstrap, application, state));
    streams.start();
    return streams;
  }

  private static void writeInput(String bootstrap, String clicks, String pageTopic, long records, int pages)
      throws Exception {
    Properties props = new Properties();
    props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
      for (int p = 0; p < pages; p++) {
        producer.send(new ProducerRecord<>(pageTopic, "page-" + p, "cat-" + (p % 7)));
      }
      producer.flush();
      for (long i = 0; i < records; i++) {
        producer.send(new ProducerRecord<>(clicks, "user-" + (i % 997), "page-" + (i * 7919 % pages)));
      }
    }
  }

  /** Waits until `records` output records are committed (read_committed, counted). */
  private static void awaitOutput(String bootstrap, String output, long records) throws Exception {
    Properties props = new Properties();
    props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props)) {
      List<TopicPartition> all = new ArrayList<>();
      for (int p = 0; p < PARTITIONS; p++) {
        all.add(new TopicPartition(output, p));
      }
      consumer.assign(all);
      consumer.seekToBeginning(all);
      long seen = 0;
      long deadline = System.nanoTime() + 600_000_000_000L;
      while (seen < records) {
        if (System.nanoTime() > deadline) {
          throw new IllegalStateException("only " + seen + " of " + records + " outputs in 600 s");
        }
        seen += consumer.poll(Duration.ofMillis(100)).count();
      }
    }
  }

  private static double metric(KafkaStreams streams, String name) {
    double value = Double.NaN;
    for (Map.Entry<org.apache.kafka.common.MetricName, ? extends Metric> m : streams.metrics().entrySet()) {
      if (m.getKey().name().equals(name) && m.getKey().group().equals("stream-thread-metrics")) {
        Object v = m.getValue().metricValue();
        if (v instanceof Double d) {
          value = d;
        }
      }
    }
    return value;
  }
}
