package dev.shoal.compat.connect;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.JvmProcess;
import dev.shoal.compat.harness.KafkaClasspath;
import dev.shoal.compat.harness.Ports;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One Kafka Connect worker of a distributed cluster (ConnectDistributed in a JVM of its own),
 * configured through its REST API; killed with SIGKILL and restarted by the tests. Its config,
 * offset and status topics are created by Connect itself (compacted).
 */
public final class ConnectWorker implements AutoCloseable {
  private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(2)).build();

  private final String name;
  private final Path dir;
  private final int restPort = Ports.free();
  private final Path properties;
  private JvmProcess process;

  /**
   * A worker of cluster `group` (its internal topics are named after it); `extra` adds worker
   * settings (exactly.once.source.support=enabled, for one).
   */
  public ConnectWorker(Broker broker, Path clusterDir, String name, String group, List<String> extra)
      throws IOException {
    this.name = name;
    this.dir = Files.createDirectories(clusterDir.resolve(name));
    this.properties = dir.resolve("worker.properties");
    List<String> lines =
        new ArrayList<>(
            List.of(
                "bootstrap.servers=" + broker.bootstrap(),
                "group.id=" + group,
                "config.storage.topic=" + group + "-configs",
                "offset.storage.topic=" + group + "-offsets",
                "status.storage.topic=" + group + "-status",
                "config.storage.replication.factor=1",
                "offset.storage.replication.factor=1",
                "status.storage.replication.factor=1",
                "key.converter=org.apache.kafka.connect.storage.StringConverter",
                "value.converter=org.apache.kafka.connect.storage.StringConverter",
                "listeners=http://127.0.0.1:" + restPort,
                "rest.advertised.host.name=127.0.0.1",
                // Every plugin on the classpath has a ServiceLoader manifest: no slow scan.
                "plugin.discovery=service_load",
                "rest.advertised.port=" + restPort,
                // Source offsets flushed every second; a departed worker's connectors move
                // after 5 s instead of the default 5 minutes (quick tests, same semantics).
                "offset.flush.interval.ms=1000",
                "scheduled.rebalance.max.delay.ms=5000",
                "session.timeout.ms=6000",
                "heartbeat.interval.ms=1000"));
    lines.addAll(extra);
    Files.writeString(properties, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
  }

  public void start() throws IOException {
    process =
        JvmProcess.start(
            name,
            dir,
            "512m",
            KafkaClasspath.connect(),
            "org.apache.kafka.connect.cli.ConnectDistributed", List.of(properties.toString()));
  }

  /** kill -9: no graceful leave, no final offset flush. */
  public void kill() throws InterruptedException {
    process.kill();
  }

  /** How the REST API names this worker in connector status ("127.0.0.1:PORT"). */
  public String workerId() {
    return "127.0.0.1:" + restPort;
  }

  public boolean answers() {
    try {
      return request("GET", "/", null).statusCode() == 200;
    } catch (Exception notYet) {
      return false;
    }
  }

  /** Creates or updates connector `connector` (PUT /connectors/NAME/config). */
  public HttpResponse<String> putConnector(String connector, Map<String, String> config)
      throws IOException, InterruptedException {
    String json =
        config.entrySet().stream()
            .map(e -> quote(e.getKey()) + ":" + quote(e.getValue()))
            .collect(Collectors.joining(",", "{", "}"));
    return request("PUT", "/connectors/" + connector + "/config", json);
  }

  /** The connector's status document (GET /connectors/NAME/status). */
  public String status(String connector) throws IOException, InterruptedException {
    HttpResponse<String> response = request("GET", "/connectors/" + connector + "/status", null);
    return response.statusCode() == 200 ? response.body() : "";
  }

  public HttpResponse<String> request(String method, String path, String json)
      throws IOException, InterruptedException {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + restPort + path)).timeout(Duration.ofSeconds(30));
    if (json == null) {
      request.method(method, HttpRequest.BodyPublishers.noBody());
    } else {
      request.header("Content-Type", "application/json").method(method, HttpRequest.BodyPublishers.ofString(json));
    }
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  private static String quote(String text) {
    return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
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
