package dev.shoal.compat.harness;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import org.apache.kafka.common.utils.internals.Exit;

/**
 * Kafka's command-line tools, run through their main classes from the pinned jars inside this
 * JVM (a JVM per command would cost seconds each): their exit is caught through Kafka's own
 * Exit hook, and what they print is captured.
 */
public final class Tool {
  /** What one command printed and its exit status. */
  public record Result(int status, String out, String err) {
    @Override
    public String toString() {
      return "status " + status + "\n--- out\n" + out + "\n--- err\n" + err;
    }
  }

  /** Thrown by the exit hook, so a tool's exit ends its main and not the test JVM. */
  private static final class Exited extends RuntimeException {
    Exited() {
      super(null, null, false, false);
    }
  }

  private Tool() {}

  /** Runs `mainClass`'s main with `args`; tools run one at a time (System.out is shared). */
  public static synchronized Result run(String mainClass, String... args) throws Exception {
    PrintStream out = System.out;
    PrintStream err = System.err;
    ByteArrayOutputStream capturedOut = new ByteArrayOutputStream();
    ByteArrayOutputStream capturedErr = new ByteArrayOutputStream();
    // The first exit is the tool's answer: some tools exit inside a try whose catch reports
    // the Exited throwable as a failure and exits again with 1.
    Integer[] firstExit = {null};
    Exit.setExitProcedure((status, message) -> {
      if (firstExit[0] == null) {
        firstExit[0] = status;
      }
      throw new Exited();
    });
    int status = 0;
    try {
      System.setOut(new PrintStream(capturedOut, true, StandardCharsets.UTF_8));
      System.setErr(new PrintStream(capturedErr, true, StandardCharsets.UTF_8));
      Class.forName(mainClass).getMethod("main", String[].class).invoke(null, (Object) args);
    } catch (InvocationTargetException e) {
      if (e.getCause() instanceof Exited) {
        status = firstExit[0];
      } else {
        throw e;
      }
    } finally {
      System.out.flush();
      System.err.flush();
      System.setOut(out);
      System.setErr(err);
      Exit.resetExitProcedure();
    }
    return new Result(
        status, capturedOut.toString(StandardCharsets.UTF_8), capturedErr.toString(StandardCharsets.UTF_8));
  }
}
