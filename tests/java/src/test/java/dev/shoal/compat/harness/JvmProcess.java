package dev.shoal.compat.harness;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A Java main class in a JVM of its own (a broker, a Streams application, a Connect worker),
 * logging to a file under its
 * directory; killed with SIGKILL when a test wants a crash.
 */
public final class JvmProcess implements AutoCloseable {
  private static final long STOP_SECONDS = 30;

  private final String name;
  private final Path logFile;
  private final Process process;

  private JvmProcess(String name, Path logFile, Process process) {
    this.name = name;
    this.logFile = logFile;
    this.process = process;
  }

  /**
   * The command line that runs `mainClass` with `args` on `classpath` (one of {@link
   * KafkaClasspath}'s); log4j's settings written to dir.
   */
  public static List<String> command(
      Path dir, String heap, String classpath, String mainClass, List<String> args) throws IOException {
    Files.createDirectories(dir);
    Path log4j = dir.resolve("log4j2.properties");
    Files.writeString(log4j, LOG4J2, StandardCharsets.UTF_8);
    List<String> command = new ArrayList<>();
    command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    command.addAll(List.of("-Xms64m", "-Xmx" + heap, "-XX:+UseG1GC", "-Djava.awt.headless=true"));
    command.add("-Dlog4j2.configurationFile=" + log4j);
    command.addAll(List.of("-cp", classpath, mainClass));
    command.addAll(args);
    return command;
  }

  /** Starts `mainClass` in dir; its output goes to dir/name.log (appended across restarts). */
  public static JvmProcess start(
      String name, Path dir, String heap, String classpath, String mainClass, List<String> args)
      throws IOException {
    List<String> command = command(dir, heap, classpath, mainClass, args);
    Path logFile = dir.resolve(name + ".log");
    Process process =
        new ProcessBuilder(command)
            .directory(dir.toFile())
            .redirectErrorStream(true)
            .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()))
            .start();
    return new JvmProcess(name, logFile, process);
  }

  public boolean isAlive() {
    return process.isAlive();
  }

  public long pid() {
    return process.pid();
  }

  /** kill -9, and waits until it is gone. */
  public void kill() throws InterruptedException {
    process.destroyForcibly().waitFor();
  }

  public String log() throws IOException {
    return Files.exists(logFile) ? Files.readString(logFile, StandardCharsets.UTF_8) : "";
  }

  /** The last lines of its output, for failure messages. */
  public String logTail() {
    try {
      List<String> lines = Files.readAllLines(logFile, StandardCharsets.UTF_8);
      return name + ":\n" + String.join("\n", lines.subList(Math.max(0, lines.size() - 80), lines.size()));
    } catch (IOException e) {
      return name + ": (no log: " + e + ")";
    }
  }

  /** SIGTERM, then SIGKILL if it has not exited in time. */
  @Override
  public void close() throws InterruptedException {
    if (!process.isAlive()) {
      return;
    }
    process.destroy();
    if (!process.waitFor(STOP_SECONDS, TimeUnit.SECONDS)) {
      kill();
    }
  }

  private static final String LOG4J2 =
      """
      status = warn
      appender.out.type = Console
      appender.out.name = out
      appender.out.layout.type = PatternLayout
      appender.out.layout.pattern = [%d] %p %m (%c)%n
      rootLogger.level = info
      rootLogger.appenderRef.out.ref = out
      logger.kafka.name = kafka
      logger.kafka.level = info
      logger.request.name = kafka.request.logger
      logger.request.level = warn
      logger.clients.name = org.apache.kafka.clients
      logger.clients.level = warn
      logger.config.name = org.apache.kafka.common.config
      logger.config.level = warn
      """;
}
