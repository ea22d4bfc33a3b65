package dev.shoal.compat.harness;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.LifecycleMethodExecutionExceptionHandler;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * A failing test's message starts with the broker it ran against, and carries that broker's
 * last log lines: Maven's summary names only the method, and CI keeps only the end of its
 * output, so without this a failure on a shared machine cannot be told apart by broker. A
 * failure while closing a test's clients (a group member's thread that failed) is named the
 * same way, with the test that was running.
 */
public final class NamesTheBroker
    implements TestExecutionExceptionHandler, LifecycleMethodExecutionExceptionHandler {
  @Override
  public void handleTestExecutionException(ExtensionContext context, Throwable failure)
      throws Throwable {
    throw named(context, failure);
  }

  @Override
  public void handleAfterEachMethodExecutionException(ExtensionContext context, Throwable failure)
      throws Throwable {
    throw named(context, failure);
  }

  private static Throwable named(ExtensionContext context, Throwable failure) {
    Object instance = context.getTestInstance().orElse(null);
    if (!(instance instanceof BrokerTest test) || test.broker == null) {
      return failure;
    }
    return new AssertionError(
        "on " + test.broker.kind() + " in " + context.getDisplayName() + ": " + failure
            + "\n--- its log's last lines ---\n" + test.broker.logTail(),
        failure);
  }
}
