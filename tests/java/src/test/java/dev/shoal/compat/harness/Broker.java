package dev.shoal.compat.harness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * One broker process on loopback ports, with a PLAINTEXT listener (anonymous, a super user, so
 * most tests need no credentials) and a SASL_PLAINTEXT listener for login and ACL tests. Both
 * kinds run with an authorizer on, {@code allow.everyone.if.no.acl.found}, the same PLAIN users
 * and SCRAM enabled, so a test sees the same security on either.
 */
public abstract class Broker implements AutoCloseable {
  /** PLAIN users both brokers know: a super user and two ordinary ones. */
  public static final String ADMIN_USER = "admin";

  public static final String ADMIN_PASSWORD = "admin-secret";
  public static final String ALICE = "alice";
  public static final String ALICE_PASSWORD = "alice-secret";
  public static final String BOB = "bob";
  public static final String BOB_PASSWORD = "bob-secret";

  /** Both brokers sign delegation tokens with this key (Kafka's delegation.token.secret.key). */
  public static final String DELEGATION_TOKEN_SECRET = "shoal-compat-token-secret";

  private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);
  private static final Duration STOP_TIMEOUT = Duration.ofSeconds(30);

  protected final Path dir;
  protected final int port;
  /** The PLAINTEXT port Metadata names: the listener's own, or a proxy's in front of it. */
  protected int advertisedPort;
  protected final int saslPort;
  /** When set before start, the SASL listener takes OAUTHBEARER tokens too. */
  protected OAuthBearerSettings oauthBearer;
  private Process process;

  /** dir is emptied first: each run starts from a new broker. */
  protected Broker(Path dir) throws IOException {
    Directories.deleteRecursively(dir);
    this.dir = Files.createDirectories(dir);
    this.port = Ports.free();
    this.advertisedPort = port;
    this.saslPort = Ports.free();
  }

  /** "kafka" or "shoal", as the tests' display names say. */
  public abstract String kind();

  /** The command line that runs the broker in the foreground; written files go under dir. */
  protected abstract List<String> prepare() throws Exception;

  public String bootstrap() {
    return "127.0.0.1:" + port;
  }

  /** The PLAINTEXT listener's own port (what a proxy in front of it forwards to). */
  public int plaintextPort() {
    return port;
  }

  public String saslBootstrap() {
    return "127.0.0.1:" + saslPort;
  }

  /**
   * Before start: the SASL_PLAINTEXT listener also takes OAUTHBEARER tokens, checked against
   * a JWKS file with an issuer and audience, as KIP-768's validator does.
   */
  public void acceptOAuthBearer(OAuthBearerSettings settings) {
    oauthBearer = settings;
  }

  /** Before start: clients are sent to `proxyPort` (a proxy in front of the listener). */
  public void advertisePlaintextAt(int proxyPort) {
    advertisedPort = proxyPort;
  }

  public Path logFile() {
    return dir.resolve(kind() + ".log");
  }

  public boolean isShoal() {
    return kind().equals("shoal");
  }

  public void start() throws Exception {
    List<String> command = prepare();
    process =
        new ProcessBuilder(command)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()))
            .start();
    waitUntilReady();
  }

  /** Ready means a Metadata answer naming a broker, not only an open port. */
  private void waitUntilReady() throws Exception {
    long deadline = System.nanoTime() + READY_TIMEOUT.toNanos();
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "2000");
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "3000");
    try (Admin admin = Admin.create(props)) {
      while (System.nanoTime() < deadline) {
        if (!process.isAlive()) {
          throw new IllegalStateException(kind() + " exited early:\n" + logTail());
        }
        try {
          if (!admin.describeCluster().nodes().get(3, TimeUnit.SECONDS).isEmpty()) {
            return;
          }
        } catch (Exception notYet) {
          Thread.sleep(200);
        }
      }
    }
    throw new IllegalStateException(kind() + " did not answer within " + READY_TIMEOUT + ":\n" + logTail());
  }

  /** The last lines of the broker's output, for failure messages. */
  public String logTail() {
    try {
      List<String> lines = Files.readAllLines(logFile(), StandardCharsets.UTF_8);
      return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
    } catch (IOException e) {
      return "(no log: " + e + ")";
    }
  }

  public String log() throws IOException {
    return Files.readString(logFile(), StandardCharsets.UTF_8);
  }

  /** SIGKILL, as a crash: nothing is flushed or closed; `start` brings it back on its data. */
  public void kill() throws InterruptedException {
    if (process != null) {
      process.destroyForcibly().waitFor();
    }
  }

  /** SIGTERM, then SIGKILL if it has not exited in time. */
  @Override
  public void close() throws Exception {
    if (process == null || !process.isAlive()) {
      return;
    }
    process.destroy();
    if (!process.waitFor(STOP_TIMEOUT.toSeconds(), TimeUnit.SECONDS)) {
      process.destroyForcibly().waitFor();
    }
  }
}
