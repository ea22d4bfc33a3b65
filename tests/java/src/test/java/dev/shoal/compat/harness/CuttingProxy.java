package dev.shoal.compat.harness;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A loopback TCP proxy in front of a broker's listener that, while cutting, closes each
 * connection after a random 2-20 KB of the broker's answers: mid-answer, after the broker has
 * acted on the requests whose answers are lost, as a network fault does. A client sent here by
 * the broker's advertised listener reconnects and retries. Only bytes relayed while cutting is
 * on count, so a connection opened before cutting starts (a producer connects as soon as it
 * learns the leader) is cut too.
 */
public final class CuttingProxy implements AutoCloseable {
  private static final int MIN_CUT_BYTES = 2_000;
  private static final int MAX_CUT_BYTES = 20_000;

  private final ServerSocket server;
  private final int targetPort;
  private final AtomicBoolean cutting = new AtomicBoolean();
  private final AtomicInteger cuts = new AtomicInteger();

  public CuttingProxy(int targetPort) throws IOException {
    this.targetPort = targetPort;
    this.server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    Thread acceptor = new Thread(this::accept, "proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  public int port() {
    return server.getLocalPort();
  }

  public void cutting(boolean on) {
    cutting.set(on);
  }

  /** Connections closed mid-stream so far. */
  public int cuts() {
    return cuts.get();
  }

  private void accept() {
    while (!server.isClosed()) {
      try {
        Socket client = server.accept();
        Socket broker = new Socket(InetAddress.getLoopbackAddress(), targetPort);
        pump(client, broker, false);
        pump(broker, client, true);
      } catch (IOException closedOrRefused) {
        // The server closed (the test is over) or the broker refused: the client sees a
        // closed connection, as from a real network.
      }
    }
  }

  /**
   * Copies from -> to until either closes; when `cuttable`, closes both once a random 2-20 KB
   * has been relayed while cutting is on.
   */
  private void pump(Socket from, Socket to, boolean cuttable) {
    long limit = cuttable ? ThreadLocalRandom.current().nextLong(MIN_CUT_BYTES, MAX_CUT_BYTES) : Long.MAX_VALUE;
    Thread thread =
        new Thread(
            () -> {
              byte[] buffer = new byte[8192];
              long counted = 0;
              try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                  if (!cutting.get()) {
                    out.write(buffer, 0, n);
                    continue;
                  }
                  if (counted + n > limit) {
                    out.write(buffer, 0, (int) (limit - counted));
                    out.flush();
                    cuts.incrementAndGet();
                    break;
                  }
                  out.write(buffer, 0, n);
                  counted += n;
                }
              } catch (IOException closed) {
                // The other side closed: close this one too (below).
              } finally {
                closeQuietly(from);
                closeQuietly(to);
              }
            },
            "proxy-pump");
    thread.setDaemon(true);
    thread.start();
  }

  private static void closeQuietly(Socket socket) {
    try {
      socket.close();
    } catch (IOException ignored) {
      // Already closed.
    }
  }

  @Override
  public void close() throws IOException {
    server.close();
  }
}
