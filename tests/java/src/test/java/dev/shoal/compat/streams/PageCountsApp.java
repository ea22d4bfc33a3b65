package dev.shoal.compat.streams;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.KTable;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * A stateful Kafka Streams application, run in a JVM of its own by the tests: clicks (user ->
 * page) are re-keyed by page (a repartition topic), counted per page into a persistent store
 * (a compacted changelog), left-joined with the pages table (page -> category) and written as
 * "category:count" to the output topic, exactly once (exactly_once_v2). The store's cache is
 * off, so every click yields one output record: page p's committed outputs are 1, 2, 3, ...
 *
 * <p>Arguments are key=value: bootstrap, application, state, http (a port for interactive
 * queries: GET /count/PAGE and /state), clicks, pages, output, and optionally standbys,
 * protocol (the group protocol: classic or streams) and on_error (replace: a failed stream
 * thread is replaced instead of stopping the instance).
 */
public final class PageCountsApp {
  static final String STORE = "counts";
  static final String UNKNOWN_CATEGORY = "unknown";

  private PageCountsApp() {}

  public static Topology topology(String clicks, String pages, String output) {
    StreamsBuilder builder = new StreamsBuilder();
    KTable<String, String> categories = builder.table(pages);
    builder.<String, String>stream(clicks)
        .selectKey((user, page) -> page)
        .groupByKey()
        .count(Materialized.as(STORE))
        .toStream()
        .leftJoin(
            categories,
            (count, category) -> (category == null ? UNKNOWN_CATEGORY : category) + ":" + count)
        .to(output, Produced.with(Serdes.String(), Serdes.String()));
    return builder.build();
  }

  public static void main(String[] args) throws Exception {
    Map<String, String> arg = new HashMap<>();
    for (String a : args) {
      String[] kv = a.split("=", 2);
      arg.put(kv[0], kv[1]);
    }
    Properties props = new Properties();
    props.put(StreamsConfig.APPLICATION_ID_CONFIG, arg.get("application"));
    props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, arg.get("bootstrap"));
    props.put(StreamsConfig.STATE_DIR_CONFIG, arg.get("state"));
    props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
    props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
    props.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
    props.put(StreamsConfig.NUM_STANDBY_REPLICAS_CONFIG, Integer.parseInt(arg.getOrDefault("standbys", "0")));
    props.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, arg.getOrDefault("protocol", "classic"));
    props.put(StreamsConfig.APPLICATION_SERVER_CONFIG, "127.0.0.1:" + arg.get("http"));
    // A killed instance's tasks move after its session lapses: Kafka's minimum, for quick tests.
    props.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 6000);
    props.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);

    KafkaStreams streams =
        new KafkaStreams(topology(arg.get("clicks"), arg.get("pages"), arg.get("output")), props);
    CountDownLatch stopped = new CountDownLatch(1);
    streams.setStateListener(
        (now, before) -> {
          System.out.println("state " + before + " -> " + now);
          if (now == KafkaStreams.State.ERROR || now == KafkaStreams.State.NOT_RUNNING) {
            stopped.countDown();
          }
        });
    // on_error=replace: a thread that fails is replaced (what an application that must ride
    // out a broker's crash does), else the instance stops.
    boolean replace = "replace".equals(arg.get("on_error"));
    streams.setUncaughtExceptionHandler(
        e -> {
          System.out.println("uncaught: " + e);
          e.printStackTrace(System.out);
          return replace
              ? org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                  .REPLACE_THREAD
              : org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse
                  .SHUTDOWN_CLIENT;
        });
    serveQueries(streams, Integer.parseInt(arg.get("http")));
    Runtime.getRuntime().addShutdownHook(new Thread(streams::close));
    streams.start();
    stopped.await();
    streams.close();
    System.exit(streams.state() == KafkaStreams.State.ERROR ? 1 : 0);
  }

  /** GET /count/PAGE: the store's count ("none" when absent); GET /state: the instance's state
   * and how many active and standby tasks it holds. */
  private static void serveQueries(KafkaStreams streams, int port) throws IOException {
    HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 16);
    server.createContext(
        "/count/",
        exchange -> {
          String page = exchange.getRequestURI().getPath().substring("/count/".length());
          try {
            ReadOnlyKeyValueStore<String, Long> store =
                streams.store(
                    StoreQueryParameters.fromNameAndType(STORE, QueryableStoreTypes.<String, Long>keyValueStore()));
            Long count = store.get(page);
            reply(exchange, 200, count == null ? "none" : count.toString());
          } catch (RuntimeException e) {
            reply(exchange, 503, e.toString());
          }
        });
    server.createContext(
        "/state",
        exchange -> {
          int active = 0;
          int standby = 0;
          for (var thread : streams.metadataForLocalThreads()) {
            active += thread.activeTasks().size();
            standby += thread.standbyTasks().size();
          }
          reply(exchange, 200, streams.state() + " " + active + " " + standby);
        });
    server.setExecutor(null);
    server.start();
  }

  private static void reply(HttpExchange exchange, int status, String body) throws IOException {
    byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
    exchange.sendResponseHeaders(status, bytes.length);
    try (var out = exchange.getResponseBody()) {
      out.write(bytes);
    }
  }
}
