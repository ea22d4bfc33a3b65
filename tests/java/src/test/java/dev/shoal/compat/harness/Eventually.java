package dev.shoal.compat.harness;

import static org.junit.jupiter.api.Assertions.fail;

import java.time.Duration;
import java.util.concurrent.Callable;
import java.util.function.Supplier;

/**
 * Waits for a condition that becomes true some time after the call that causes it, as
 * Kafka's metadata does when it propagates to brokers (and group assignments do).
 */
public final class Eventually {
  public static final Duration TIMEOUT = Duration.ofSeconds(60);

  private Eventually() {}

  /** Retries until `condition` holds (an exception counts as not yet); fails with `what`. */
  public static void until(Callable<Boolean> condition, Supplier<String> what) throws InterruptedException {
    until(condition, TIMEOUT, what);
  }

  /** As {@link #until(Callable, Supplier)}, waiting at most `timeout`. */
  public static void until(Callable<Boolean> condition, Duration timeout, Supplier<String> what)
      throws InterruptedException {
    long deadline = System.nanoTime() + timeout.toNanos();
    Exception last = null;
    while (System.nanoTime() < deadline) {
      try {
        if (condition.call()) {
          return;
        }
      } catch (Exception e) {
        last = e;
      }
      Thread.sleep(100);
    }
    fail("timed out waiting until " + what.get() + (last == null ? "" : " (last error: " + last + ")"));
  }
}
