package dev.shoal.compat.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.ThreadMetadata;

/**
 * How long a Kafka Streams application's group takes to form (scripts/streams_rebalance_bench.py
 * runs it against each broker): one application of `threads` stream threads (each a member of
 * the group) over a stateless topology of 16 tasks, on the `classic` or `streams` group
 * protocol, every setting at its default; timed from start() until every thread runs at least
 * one active task and all 16 are running. Then one more instance of `threads` threads joins
 * and the time until the 16 tasks run spread over both is taken too. Prints one JSON line.
 *
 * <p>java -cp ... dev.shoal.compat.bench.StreamsRebalanceBench BOOTSTRAP PROTOCOL THREADS STATE_DIR
 */
public final class StreamsRebalanceBench {
  private static final int TASKS = 16;
  private static final long DEADLINE_MS = 180_000;

  private StreamsRebalanceBench() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String protocol = args[1];
    int threads = Integer.parseInt(args[2]);
    Path state = Path.of(args[3]);
    String run = UUID.randomUUID().toString().substring(0, 8);
    String input = "rebalance-in-" + run;
    String output = "rebalance-out-" + run;
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic(input, TASKS, (short) 1), new NewTopic(output, TASKS, (short) 1)))
          .all()
          .get();
    }
    String application = "rebalance-" + run;
    long started = System.nanoTime();
    try (KafkaStreams first = streams(bootstrap, protocol, threads, application, input, output, state.resolve("a"))) {
      first.start();
      awaitSpread(List.of(first), threads);
      double formedMs = (System.nanoTime() - started) / 1e6;
      long joined = System.nanoTime();
      try (KafkaStreams second = streams(bootstrap, protocol, threads, application, input, output, state.resolve("b"))) {
        second.start();
        awaitSpread(List.of(first, second), 2 * threads);
        double rebalancedMs = (System.nanoTime() - joined) / 1e6;
        System.out.printf(
            "{\"protocol\": \"%s\", \"threads\": %d, \"formed_ms\": %.0f, \"joined_ms\": %.0f}%n",
            protocol, threads, formedMs, rebalancedMs);
        second.close();
      }
      first.close();
    }
    System.exit(0);
  }

  private static KafkaStreams streams(
      String bootstrap, String protocol, int threads, String application, String input, String output, Path state)
      throws Exception {
    Files.createDirectories(state);
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, application);
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
    props.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
    props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    StreamsBuilder builder = new StreamsBuilder();
    builder.<String, String>stream(input).mapValues(v -> v).to(output);
    return new KafkaStreams(builder.build(), props);
  }

  /**
   * Until `members` threads of `apps` (or, with more threads than tasks, as many as there are
   * tasks) each run an active task and together all of them.
   */
  private static void awaitSpread(List<KafkaStreams> apps, int members) throws Exception {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (System.currentTimeMillis() < deadline) {
      int busy = 0;
      int tasks = 0;
      boolean running = true;
      for (KafkaStreams app : apps) {
        running &= app.state() == KafkaStreams.State.RUNNING;
        for (ThreadMetadata thread : app.metadataForLocalThreads()) {
          int active = thread.activeTasks().size();
          busy += active > 0 ? 1 : 0;
          tasks += active;
        }
      }
      if (running && busy == Math.min(members, TASKS) && tasks == TASKS) {
        return;
      }
      TimeUnit.MILLISECONDS.sleep(20);
    }
    throw new IllegalStateException("the group did not spread its tasks within " + DEADLINE_MS + " ms");
  }
}
