package dev.shoal.compat.connect;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * A distributed Kafka Connect cluster of two workers on the broker, running the FileStream
 * source and sink connectors configured through the REST API; the worker running the source
 * task is killed with SIGKILL under a steady stream of lines and restarted.
 */
class ConnectTest extends BrokerTest {
  private static final String SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector";
  private static final String SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector";
  private static final int LINES_PER_SECOND = 100;
  private static final Duration SETTLE = Duration.ofSeconds(120);

  private final List<ConnectWorker> workers = new ArrayList<>();
  private final List<LineAppender> appenders = new ArrayList<>();

  @AfterEach
  void stopWorkers() throws Exception {
    for (LineAppender appender : appenders) {
      appender.close();
    }
    for (ConnectWorker worker : workers) {
      worker.close();
    }
  }

  /** At least once, as Connect promises: every line arrives in the sink file. */
  @Test
  void linesArriveInTheSinkFileThroughAWorkerKill() throws Exception {
    Path dir = clusterDir("files");
    List<ConnectWorker> cluster = cluster(dir, List.of());
    String topic = clients.createTopic("lines", 1);
    Path in = dir.resolve("in.txt");
    Path out = dir.resolve("out.txt");
    LineAppender lines = appender(in);
    ConnectWorker any = cluster.get(0);
    put(any, "source", Map.of("connector.class", SOURCE, "tasks.max", "1", "file", in.toString(), "topic", topic));
    put(any, "sink", Map.of("connector.class", SINK, "tasks.max", "1", "file", out.toString(), "topics", topic));
    awaitRunning(any, "source");
    awaitRunning(any, "sink");
    lines.start();
    killAndRestartTheSourceWorker(cluster, "source", () -> sinkLines(out).size());
    int written = lines.stop();
    Eventually.until(
        () -> sinkLines(out).containsAll(expected(written)),
        SETTLE,
        () -> "every line reaches the sink file: " + sinkLines(out).size() + " of " + written);
    List<String> sunk = sinkLines(out);
    System.out.printf("%s: %d lines, %d in the sink file (%d duplicates)%n",
        kind, written, sunk.size(), sunk.size() - written);
  }

  /**
   * exactly.once.source.support=enabled: the source task's records and offsets commit in one
   * transaction, so the topic holds each line once, in order, across the kill.
   */
  @Test
  void exactlyOnceSourceWritesEachLineOnceThroughAWorkerKill() throws Exception {
    Path dir = clusterDir("exactly-once");
    List<ConnectWorker> cluster = cluster(dir, List.of("exactly.once.source.support=enabled"));
    String topic = clients.createTopic("lines", 1);
    Path in = dir.resolve("in.txt");
    LineAppender lines = appender(in);
    ConnectWorker any = cluster.get(0);
    put(any, "source", Map.of("connector.class", SOURCE, "tasks.max", "1", "file", in.toString(), "topic", topic,
        "exactly.once.support", "required"));
    awaitRunning(any, "source");
    lines.start();
    killAndRestartTheSourceWorker(cluster, "source", () -> committedLines(topic).size());
    int written = lines.stop();
    Eventually.until(
        () -> committedLines(topic).size() >= written,
        SETTLE,
        () -> "every line reaches the topic: " + committedLines(topic).size() + " of " + written);
    assertEquals(expected(written), committedLines(topic), "each line once, in order");
  }

  private Path clusterDir(String name) throws Exception {
    return Files.createDirectories(
        Path.of(System.getProperty("user.dir"), "target", "connect", kind, Clients.unique(name)));
  }

  private List<ConnectWorker> cluster(Path dir, List<String> extra) throws Exception {
    String group = dir.getFileName().toString();
    List<ConnectWorker> cluster = new ArrayList<>();
    for (String name : List.of("worker-1", "worker-2")) {
      ConnectWorker worker = new ConnectWorker(broker, dir, name, group, extra);
      workers.add(worker);
      cluster.add(worker);
      worker.start();
    }
    for (ConnectWorker worker : cluster) {
      Eventually.until(worker::answers, SETTLE, () -> "the worker's REST API answers: " + worker.logTail());
    }
    return cluster;
  }

  private LineAppender appender(Path file) throws Exception {
    LineAppender appender = new LineAppender(file, LINES_PER_SECOND);
    appenders.add(appender);
    return appender;
  }

  /** Creates the connector, retried while the cluster is still forming (Connect answers 409
   * during a rebalance and 500 before the worker has read its config topic). */
  private static void put(ConnectWorker worker, String connector, Map<String, String> config) throws Exception {
    var last = new java.util.concurrent.atomic.AtomicReference<String>("no answer");
    Eventually.until(
        () -> {
          var response = worker.putConnector(connector, config);
          last.set(response.statusCode() + " " + response.body());
          return response.statusCode() / 100 == 2;
        },
        SETTLE,
        () -> connector + " is created: " + last.get() + "\n" + worker.logTail());
  }

  /** The connector and its one task are RUNNING (as any worker's REST API reports). */
  private static void awaitRunning(ConnectWorker worker, String connector) throws InterruptedException {
    Eventually.until(
        () -> taskRunning(worker.status(connector)),
        SETTLE,
        () -> connector + " runs: " + statusOrError(worker, connector) + "\n" + worker.logTail());
  }

  private static boolean taskRunning(String status) {
    int tasks = status.indexOf("\"tasks\"");
    return tasks > 0 && status.substring(0, tasks).contains("\"RUNNING\"")
        && status.substring(tasks).contains("\"RUNNING\"");
  }

  private static String statusOrError(ConnectWorker worker, String connector) {
    try {
      return worker.status(connector);
    } catch (Exception e) {
      return e.toString();
    }
  }

  /**
   * Once lines flow, kills the worker running the connector's task with SIGKILL, lets lines
   * pile up while it is gone, restarts it, and waits until lines flow again.
   */
  private void killAndRestartTheSourceWorker(
      List<ConnectWorker> cluster, String connector, java.util.concurrent.Callable<Integer> delivered)
      throws Exception {
    int before = delivered.call();
    Eventually.until(() -> delivered.call() >= before + 200, SETTLE, () -> "lines flow before the kill");
    ConnectWorker running = null;
    String status = cluster.get(0).status(connector);
    for (ConnectWorker worker : cluster) {
      int tasks = status.indexOf("\"tasks\"");
      if (status.indexOf(worker.workerId(), tasks) > 0) {
        running = worker;
      }
    }
    assertTrue(running != null, () -> "which worker runs the task: " + status);
    running.kill();
    Thread.sleep(2000);
    running.start();
    ConnectWorker restarted = running;
    Eventually.until(restarted::answers, SETTLE, () -> "the restarted worker answers: " + restarted.logTail());
    int after = delivered.call();
    Eventually.until(
        () -> delivered.call() >= after + 200,
        SETTLE,
        () -> "lines flow after the restart: " + statusOrError(restarted, connector) + "\n" + restarted.logTail());
  }

  private static List<String> expected(int written) {
    return IntStream.range(0, written).mapToObj(LineAppender::line).toList();
  }

  private static List<String> sinkLines(Path out) {
    try {
      if (!Files.exists(out)) {
        return List.of();
      }
      return Files.readAllLines(out, StandardCharsets.UTF_8).stream().filter(l -> !l.isEmpty()).toList();
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  /** The topic's values as a read_committed consumer sees them, to its last stable offset. */
  private List<String> committedLines(String topic) {
    return clients.readToEnd(topic, 1, "read_committed").stream().map(r -> r.value()).toList();
  }
}
