package dev.shoal.compat.harness;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * The shoal binary ($SHOAL_BIN, else the release build under the repository's target/), on
 * the embedded default (local object store and coordinator log), set up as KafkaBroker is:
 * the same listeners, users, authorizer and group timings. $SHOAL_JAVA_EXTRA_CONFIG is
 * appended to its config (scripts/with_postgres.py puts the coordinator in PostgreSQL so).
 */
public final class ShoalBroker extends Broker {
  public ShoalBroker(Path dir) throws Exception {
    super(dir);
  }

  @Override
  public String kind() {
    return "shoal";
  }

  public static Path binary() {
    String configured = System.getenv("SHOAL_BIN");
    if (configured != null && !configured.isEmpty()) {
      return Path.of(configured);
    }
    return Path.of(System.getProperty("user.dir"), "..", "..", "target", "release", "shoal").normalize();
  }

  @Override
  protected List<String> prepare() throws Exception {
    Path config = dir.resolve("shoal.toml");
    Files.writeString(config, config(), StandardCharsets.UTF_8);
    return List.of(binary().toString(), "--config", config.toString());
  }

  private String config() {
    return """
        listeners = "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
        advertised_listeners = "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
        data_dir = "%s"

        [groups]
        initial_rebalance_delay_ms = 0
        consumer_heartbeat_interval_ms = 1000
        streams_heartbeat_interval_ms = 1000
        streams_session_timeout_ms = 10000

        [authorizer]
        enabled = true
        super_users = ["User:%s", "User:ANONYMOUS"]
        allow_everyone_if_no_acl_found = true

        [sasl]
        enabled_mechanisms = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"%s]

        [sasl.plain_users]
        %s = "%s"
        %s = "%s"
        %s = "%s"

        [delegation_token]
        secret_key = "%s"
        %s
        %s
        """
        .formatted(
            port,
            saslPort,
            advertisedPort,
            saslPort,
            dir.resolve("data"),
            ADMIN_USER,
            oauthBearer == null ? "" : ", \"OAUTHBEARER\"",
            ADMIN_USER,
            ADMIN_PASSWORD,
            ALICE,
            ALICE_PASSWORD,
            BOB,
            BOB_PASSWORD,
            DELEGATION_TOKEN_SECRET,
            oauthBearerSection(),
            coordinatorSection(System.getenv().getOrDefault("SHOAL_JAVA_EXTRA_CONFIG", "")));
  }

  /**
   * Retention each second, as the Kafka broker beside it (a test waits for it), in the
   * [coordinator] table that `extra` (SHOAL_JAVA_EXTRA_CONFIG: a PostgreSQL log) may open.
   */
  private static String coordinatorSection(String extra) {
    String retention = "retention_check_interval_ms = 1000";
    if (extra.contains("[coordinator]")) {
      return extra.replace("[coordinator]", "[coordinator]\n" + retention);
    }
    return "[coordinator]\n" + retention + "\n" + extra;
  }

  private String oauthBearerSection() {
    if (oauthBearer == null) {
      return "";
    }
    return """
        [sasl.oauthbearer]
        jwks_endpoint_url = "%s"
        expected_issuer = "%s"
        expected_audience = ["%s"]
        """
        .formatted(
            oauthBearer.jwksFile().toUri(), oauthBearer.issuer(), oauthBearer.audience());
  }
}
