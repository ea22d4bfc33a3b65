package dev.shoal.compat.streams;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.Directories;
import dev.shoal.compat.harness.JvmProcess;
import dev.shoal.compat.harness.KafkaClasspath;
import dev.shoal.compat.harness.Ports;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One instance of {@link PageCountsApp} in a JVM of its own, with its own state directory and
 * interactive-query port; killed with SIGKILL and restarted by the tests.
 */
public final class StreamsInstance implements AutoCloseable {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private final String name;
  private final Path dir;
  private final List<String> args;
  private final int httpPort = Ports.free();
  private JvmProcess process;

  /** An instance of application `application` over the given topics; not started. */
  public StreamsInstance(
      Broker broker, Path dir, String name, String application, Topics topics, List<String> extra) {
    this.name = name;
    this.dir = dir.resolve(name);
    this.args = new ArrayList<>(
        List.of(
            "bootstrap=" + broker.bootstrap(),
            "application=" + application,
            "state=" + this.dir.resolve("state"),
            "http=" + httpPort,
            "clicks=" + topics.clicks(),
            "pages=" + topics.pages(),
            "output=" + topics.output()));
    this.args.addAll(extra);
  }

  /** The topics an application reads and writes. */
  public record Topics(String clicks, String pages, String output) {}

  public void start() throws IOException {
    process = JvmProcess.start(
            name, dir, "512m", KafkaClasspath.kafka(), PageCountsApp.class.getName(), args);
  }

  /** kill -9: no shutdown hook runs, open transactions are left to the broker. */
  public void kill() throws InterruptedException {
    process.kill();
  }

  /** Deletes the local state (RocksDB stores, checkpoints): a restart restores from changelogs. */
  public void deleteState() throws IOException {
    Directories.deleteRecursively(dir.resolve("state"));
  }

  public boolean isAlive() {
    return process != null && process.isAlive();
  }

  /** "RUNNING 3 1": the instance's state, its active and standby task counts. */
  public String state() throws IOException, InterruptedException {
    return get("/state");
  }

  public boolean running() {
    try {
      return state().startsWith("RUNNING ");
    } catch (Exception notYet) {
      return false;
    }
  }

  public int activeTasks() throws IOException, InterruptedException {
    return Integer.parseInt(state().split(" ")[1]);
  }

  public int standbyTasks() throws IOException, InterruptedException {
    return Integer.parseInt(state().split(" ")[2]);
  }

  /** An interactive query of the counts store: the page's count, or null if it has none. */
  public Long count(String page) throws IOException, InterruptedException {
    String answer = get("/count/" + page);
    return answer.equals("none") ? null : Long.parseLong(answer);
  }

  private String get(String path) throws IOException, InterruptedException {
    HttpRequest request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + httpPort + path))
            .timeout(Duration.ofSeconds(5))
            .build();
    HttpResponse<String> response = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
    if (response.statusCode() != 200) {
      throw new IOException(name + " answered " + response.statusCode() + ": " + response.body());
    }
    return response.body();
  }

  public String log() throws IOException {
    return process == null ? "" : process.log();
  }

  public String logTail() {
    return process == null ? name + ": not started" : process.logTail();
  }

  @Override
  public void close() throws InterruptedException {
    if (process != null) {
      process.close();
    }
  }
}
