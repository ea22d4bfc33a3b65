package dev.shoal.compat.migration;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.ShoalBroker;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/** `shoal mirror` against a destination Shoal, as an operator runs it (docs/mirroring.md). */
final class MirrorCli {
  private final Broker destination;

  MirrorCli(Broker destination) {
    this.destination = destination;
  }

  /** Runs `shoal mirror --bootstrap DEST args...`; fails the test unless it exits 0. */
  String run(String... args) throws IOException, InterruptedException {
    List<String> command = new ArrayList<>(
        List.of(ShoalBroker.binary().toString(), "mirror", "--bootstrap", destination.bootstrap()));
    command.addAll(List.of(args));
    Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
    if (!process.waitFor(60, TimeUnit.SECONDS)) {
      process.destroyForcibly();
      throw new AssertionError("shoal mirror " + String.join(" ", args) + " did not finish");
    }
    String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertEquals(0, process.exitValue(), () -> "shoal mirror " + String.join(" ", args) + ":\n" + output);
    return output;
  }

  /** `describe MIRROR`: per "topic/partition", the destination's end offset and the state. */
  Map<String, String> describe(String mirror) throws IOException, InterruptedException {
    Map<String, String> rows = new HashMap<>();
    String[] lines = run("describe", mirror).split("\n");
    for (int i = 1; i < lines.length; i++) {
      String[] words = lines[i].trim().split("\\s+");
      if (words.length >= 7) {
        rows.put(words[1] + "/" + words[2], words[4] + " " + String.join(" ", List.of(words).subList(6, words.length)));
      }
    }
    return rows;
  }
}
