package dev.shoal.compat;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;

/**
 * A group member on its own thread (a KafkaConsumer belongs to one thread): polls, records
 * each value it sees in a shared set, commits after every poll that returned records (again
 * after the next one when a rebalance refused it), and publishes its assignment.
 */
final class GroupMember implements AutoCloseable {
  private final KafkaConsumer<String, String> consumer;
  private final Set<String> seen;
  private final Thread thread;
  private final AtomicReference<Set<TopicPartition>> assignment = new AtomicReference<>(Set.of());
  private final AtomicReference<Throwable> failure = new AtomicReference<>();
  private volatile boolean running = true;
  private boolean uncommitted;

  GroupMember(KafkaConsumer<String, String> consumer, String topic, Set<String> seen) {
    this.consumer = consumer;
    this.seen = seen;
    this.thread = new Thread(() -> run(topic), "member");
    thread.setDaemon(true);
    thread.start();
  }

  static Set<String> sharedSeen() {
    return ConcurrentHashMap.newKeySet();
  }

  private void run(String topic) {
    try {
      consumer.subscribe(List.of(topic));
      while (running) {
        var records = consumer.poll(Duration.ofMillis(100));
        for (ConsumerRecord<String, String> record : records) {
          seen.add(record.value());
        }
        uncommitted |= !records.isEmpty();
        if (uncommitted) {
          uncommitted = !tryCommit();
        }
        assignment.set(Set.copyOf(consumer.assignment()));
      }
    } catch (Throwable e) {
      failure.set(e);
    } finally {
      consumer.close();
    }
  }

  /**
   * A commit during a rebalance is refused (RebalanceInProgressException under the cooperative
   * protocol, CommitFailedException when the generation moved on), as an application sees it:
   * try again after the next poll.
   */
  private boolean tryCommit() {
    try {
      consumer.commitSync();
      return true;
    } catch (RebalanceInProgressException | CommitFailedException refused) {
      return false;
    }
  }

  Set<TopicPartition> assignment() {
    return assignment.get();
  }

  /** Stops polling and closes the consumer (leaving the group, as close() does). */
  @Override
  public void close() throws Exception {
    running = false;
    thread.join(60_000);
    if (failure.get() != null) {
      throw new AssertionError("member failed: " + failure.get(), failure.get());
    }
  }
}
