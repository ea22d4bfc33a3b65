package dev.shoal.compat.harness;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The brokers of this test run, each started once on first use and stopped when the JVM
 * exits. Which kinds run: $SHOAL_JAVA_BROKERS (comma-separated), default both.
 */
public final class Brokers {
  private static final Map<String, Broker> started = new HashMap<>();

  private Brokers() {}

  /** The kinds every test class runs against (its @ParameterizedClass source). */
  public static List<String> kinds() {
    String configured = System.getenv().getOrDefault("SHOAL_JAVA_BROKERS", "kafka,shoal");
    return Arrays.stream(configured.split(",")).map(String::trim).filter(s -> !s.isEmpty()).toList();
  }

  public static synchronized Broker get(String kind) {
    return started.computeIfAbsent(kind, Brokers::start);
  }

  private static Broker start(String kind) {
    Broker broker = create(kind, "shared");
    Runtime.getRuntime().addShutdownHook(new Thread(() -> stop(broker)));
    return started(broker);
  }

  /**
   * A broker of `kind` for one test alone (named `name` under target/brokers), set up by
   * `setUp` before it starts; the caller closes it.
   */
  public static Broker startOwn(String kind, String name, Consumer<Broker> setUp) {
    Broker broker = create(kind, name);
    setUp.accept(broker);
    return started(broker);
  }

  private static Broker create(String kind, String name) {
    Path dir = Path.of(System.getProperty("user.dir"), "target", "brokers", name, kind);
    try {
      return switch (kind) {
        case "kafka" -> new KafkaBroker(dir, List.of());
        case "shoal" -> new ShoalBroker(dir);
        default -> throw new IllegalArgumentException("unknown broker kind " + kind);
      };
    } catch (RuntimeException e) {
      throw e;
    } catch (Exception e) {
      throw new IllegalStateException("setting up " + kind + " failed", e);
    }
  }

  private static Broker started(Broker broker) {
    try {
      broker.start();
      return broker;
    } catch (Exception e) {
      stop(broker);
      throw new IllegalStateException("starting " + broker.kind() + " failed", e);
    }
  }

  private static void stop(Broker broker) {
    try {
      broker.close();
    } catch (Exception e) {
      System.err.println("stopping " + broker.kind() + ": " + e);
    }
  }
}
