package dev.shoal.compat.harness;

import org.junit.jupiter.api.extension.ExtensionContext;
import org.junit.jupiter.api.extension.TestExecutionExceptionHandler;

/**
 * A failing test's message starts with the broker it ran against, and carries that broker's
 * last log lines: Maven's summary names only the method, and CI keeps only the end of its
 * output, so without this a failure on a shared machine cannot be told apart by broker.
 */
public final class NamesTheBroker implements TestExecutionExceptionHandler {
  @Override
  public void handleTestExecutionException(ExtensionContext context, Throwable failure)
      throws Throwable {
    Object instance = context.getTestInstance().orElse(null);
    if (!(instance instanceof BrokerTest test) || test.broker == null) {
      throw failure;
    }
    AssertionError named =
        new AssertionError(
            "on " + test.broker.kind() + ": " + failure + "\n--- its log's last lines ---\n"
                + test.broker.logTail(),
            failure);
    throw named;
  }
}
