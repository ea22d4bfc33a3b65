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
 * the broker's advertised listener reconnects and retries.
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
        long cutAfter = cutting.get() ? ThreadLocalRandom.current().nextLong(MIN_CUT_BYTES, MAX_CUT_BYTES) : Long.MAX_VALUE;
        pump(client, broker, Long.MAX_VALUE);
        pump(broker, client, cutAfter);
      } catch (IOException closedOrRefused) {
        // The server closed (the test is over) or the broker refused: the client sees a
        // closed connection, as from a real network.
      }
    }
  }

  /** Copies from -> to until either closes, or closes both after `limit` bytes. */
  private void pump(Socket from, Socket to, long limit) {
    Thread thread =
        new Thread(
            () -> {
              byte[] buffer = new byte[8192];
              long copied = 0;
              try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                  if (copied + n > limit) {
                    out.write(buffer, 0, (int) (limit - copied));
                    out.flush();
                    cuts.incrementAndGet();
                    break;
                  }
                  out.write(buffer, 0, n);
                  copied += n;
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
