package dev.shoal.compat.harness;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.Uuid;

/**
 * Apache Kafka as a real single-node KRaft broker (combined broker and controller), run from
 * the pinned jars of this project's classpath in its own JVM: the storage formatted by
 * StorageTool, then {@code kafka.Kafka} with a generated server.properties.
 */
public final class KafkaBroker extends Broker {
  private final int controllerPort = Ports.free();
  /** Extra server.properties lines (for example log.flush.interval.messages=1). */
  private final List<String> extraProperties;

  public KafkaBroker(Path dir, List<String> extraProperties) throws Exception {
    super(dir);
    this.extraProperties = extraProperties;
  }

  private boolean formatted;

  @Override
  public String kind() {
    return "kafka";
  }

  @Override
  protected List<String> prepare() throws Exception {
    Path properties = dir.resolve("server.properties");
    Files.writeString(properties, serverProperties(), StandardCharsets.UTF_8);
    // Formatted once: a broker started again (after a kill) comes back on its own storage.
    if (!formatted) {
      List<String> format = java("kafka.tools.StorageTool");
      format.addAll(List.of("format", "-t", Uuid.randomUuid().toString(), "-c", properties.toString()));
      Process formatting =
          new ProcessBuilder(format)
              .directory(dir.toFile())
              .redirectErrorStream(true)
              .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile().toFile()))
              .start();
      if (!formatting.waitFor(120, TimeUnit.SECONDS) || formatting.exitValue() != 0) {
        formatting.destroyForcibly();
        throw new IllegalStateException("formatting Kafka's storage failed:\n" + logTail());
      }
      formatted = true;
    }
    List<String> command = java("kafka.Kafka");
    command.add(properties.toString());
    if (oauthBearer != null) {
      // Kafka reads a JWKS only from URLs (and files) allowed by these system properties.
      String jwks = oauthBearer.jwksFile().toUri().toString();
      command.add(1, "-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=" + jwks);
      command.add(1, "-Dorg.apache.kafka.sasl.oauthbearer.allowed.files=" + oauthBearer.jwksFile());
    }
    return command;
  }

  /** A JVM on the pinned jars, with 1 GiB of heap as Kafka's own start script gives it. */
  private List<String> java(String mainClass) throws Exception {
    return JvmProcess.command(dir, "1g", KafkaClasspath.kafka(), mainClass, List.of());
  }

  private String serverProperties() {
    String users =
        "user_%s=\"%s\" user_%s=\"%s\" user_%s=\"%s\""
            .formatted(ADMIN_USER, ADMIN_PASSWORD, ALICE, ALICE_PASSWORD, BOB, BOB_PASSWORD);
    List<String> lines =
        new ArrayList<>(
            List.of(
                "process.roles=broker,controller",
                "node.id=1",
                "controller.quorum.voters=1@127.0.0.1:" + controllerPort,
                "listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                    .formatted(port, saslPort, controllerPort),
                "advertised.listeners=PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
                    .formatted(advertisedPort, saslPort),
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
                "log.dirs=" + dir.resolve("logs"),
                "num.partitions=1",
                "auto.create.topics.enable=true",
                "offsets.topic.replication.factor=1",
                "offsets.topic.num.partitions=4",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "transaction.state.log.num.partitions=4",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
                "group.initial.rebalance.delay.ms=0",
                // Retention each second (Kafka's default: 5 minutes), as the Shoal beside it.
                "log.retention.check.interval.ms=1000",
                "group.consumer.min.heartbeat.interval.ms=500",
                "group.consumer.heartbeat.interval.ms=1000",
                // Streams groups: quick heartbeats and a short session, so a killed
                // instance's tasks move within seconds, as on the Shoal beside it.
                "group.streams.initial.rebalance.delay.ms=0",
                "group.streams.min.heartbeat.interval.ms=500",
                "group.streams.heartbeat.interval.ms=1000",
                "group.streams.min.session.timeout.ms=6000",
                "group.streams.session.timeout.ms=10000",
                "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config="
                    + "org.apache.kafka.common.security.plain.PlainLoginModule required "
                    + users
                    + ";",
                "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config="
                    + "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config="
                    + "org.apache.kafka.common.security.scram.ScramLoginModule required;",
                "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users=User:" + ADMIN_USER + ";User:ANONYMOUS",
                "delegation.token.secret.key=" + DELEGATION_TOKEN_SECRET,
                "allow.everyone.if.no.acl.found=true"));
    if (oauthBearer != null) {
      String prefix = "listener.name.sasl_plaintext.oauthbearer.";
      lines.addAll(
          List.of(
              "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
              prefix
                  + "sasl.jaas.config="
                  + "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;",
              prefix
                  + "sasl.server.callback.handler.class="
                  + "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
              "sasl.oauthbearer.jwks.endpoint.url=" + oauthBearer.jwksFile().toUri(),
              "sasl.oauthbearer.expected.issuer=" + oauthBearer.issuer(),
              "sasl.oauthbearer.expected.audience=" + oauthBearer.audience()));
    }
    lines.addAll(extraProperties);
    return String.join("\n", lines) + "\n";
  }
}
