package dev.shoal.compat.harness;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The runtime classpath of the pinned Kafka jars, written by the build (see pom.xml). */
public final class KafkaClasspath {
  private KafkaClasspath() {}

  public static String get() throws IOException {
    String file = System.getProperty("kafka.classpath.file", "target/kafka.classpath");
    return Files.readString(Path.of(file)).trim();
  }
}
