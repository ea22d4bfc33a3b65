package dev.shoal.compat.harness;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The classpaths the tests start JVMs on, written by the build (see pom.xml, connect/pom.xml). */
public final class KafkaClasspath {
  private KafkaClasspath() {}

  /** The pinned Kafka jars (broker, clients, tools, Streams) and this project's test classes. */
  public static String kafka() throws IOException {
    String file = System.getProperty("kafka.classpath.file", "target/kafka.classpath");
    String testClasses = Path.of(System.getProperty("user.dir"), "target", "test-classes").toString();
    return testClasses + ":" + Files.readString(Path.of(file)).trim();
  }

  /** Kafka Connect with the FileStream connectors and MirrorMaker 2 (connect/pom.xml). */
  public static String connect() throws IOException {
    Path file = Path.of(System.getProperty("user.dir"), "target", "connect.classpath");
    if (!Files.exists(file)) {
      throw new IOException(file + " is missing: scripts/java_tests.sh writes it (mvn -f connect/pom.xml generate-resources)");
    }
    return Files.readString(file).trim();
  }
}
