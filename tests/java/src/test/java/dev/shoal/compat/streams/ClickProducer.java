package dev.shoal.compat.streams;

import dev.shoal.compat.harness.Clients;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;

/**
 * A steady idempotent producer of clicks (user -> page) on a thread of its own, at about
 * `perSecond`, counting what the broker acknowledged per page: the counts an exactly-once
 * application must end with.
 */
public final class ClickProducer implements AutoCloseable {
  public static final int PAGES = 10;

  private final KafkaProducer<String, String> producer;
  private final String topic;
  private final int perSecond;
  private final Map<String, Long> acknowledged = new TreeMap<>();
  private final AtomicReference<Exception> failure = new AtomicReference<>();
  private final Thread thread;
  private volatile boolean stopping;
  private long sent;

  public ClickProducer(Clients clients, String topic, int perSecond) {
    this.producer =
        clients.producer(
            Map.of(ProducerConfig.ACKS_CONFIG, "all", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true));
    this.topic = topic;
    this.perSecond = perSecond;
    this.thread = new Thread(this::run, "clicks");
  }

  public static String page(long i) {
    return "page-" + (i * 7919 % PAGES);
  }

  public void start() {
    thread.start();
  }

  private void run() {
    long started = System.nanoTime();
    try {
      while (!stopping) {
        String page = page(sent);
        producer.send(
            new ProducerRecord<>(topic, "user-" + (sent % 97), page),
            (metadata, e) -> {
              if (e != null) {
                failure.compareAndSet(null, e);
              } else {
                synchronized (acknowledged) {
                  acknowledged.merge(page, 1L, Long::sum);
                }
              }
            });
        sent++;
        long due = started + sent * 1_000_000_000L / perSecond;
        long wait = due - System.nanoTime();
        if (wait > 0) {
          Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
        }
      }
      producer.flush();
    } catch (Exception e) {
      failure.compareAndSet(null, e);
    }
  }

  /** Stops sending and waits for every acknowledgement; fails if any send failed. */
  public Map<String, Long> stop() throws Exception {
    stopping = true;
    thread.join();
    if (failure.get() != null) {
      throw new AssertionError("a click was not acknowledged", failure.get());
    }
    synchronized (acknowledged) {
      return new TreeMap<>(acknowledged);
    }
  }

  public long acknowledgedSoFar() {
    synchronized (acknowledged) {
      return acknowledged.values().stream().mapToLong(Long::longValue).sum();
    }
  }

  @Override
  public void close() throws Exception {
    if (thread.isAlive()) {
      stop();
    }
  }
}
