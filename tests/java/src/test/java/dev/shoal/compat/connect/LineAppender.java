package dev.shoal.compat.connect;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicReference;

/** Appends "line-N" lines to a file at about `perSecond`, on a thread of its own. */
final class LineAppender implements AutoCloseable {
  private final Path file;
  private final int perSecond;
  private final Thread thread;
  private final AtomicReference<IOException> failure = new AtomicReference<>();
  private volatile boolean stopping;
  private volatile int written;

  LineAppender(Path file, int perSecond) throws IOException {
    this.file = file;
    this.perSecond = perSecond;
    Files.writeString(file, "", StandardCharsets.UTF_8);
    this.thread = new Thread(this::run, "lines");
  }

  static String line(int i) {
    return "line-" + i;
  }

  void start() {
    thread.start();
  }

  private void run() {
    long started = System.nanoTime();
    try {
      while (!stopping) {
        // One write per whole line: the source connector never sees half a line.
        Files.writeString(file, line(written) + "\n", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        written++;
        long wait = started + (long) written * 1_000_000_000L / perSecond - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
      }
    } catch (IOException e) {
      failure.set(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  int written() {
    return written;
  }

  /** Stops appending; how many lines were written. */
  int stop() throws Exception {
    stopping = true;
    thread.join();
    if (failure.get() != null) {
      throw failure.get();
    }
    return written;
  }

  @Override
  public void close() throws Exception {
    if (thread.isAlive()) {
      stop();
    }
  }
}
