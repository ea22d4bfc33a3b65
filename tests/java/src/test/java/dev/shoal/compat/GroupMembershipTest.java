package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.tp;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Consumer groups while records keep arriving: members join and leave, and no record is lost;
 * static members come back to their own partitions. Each with the classic protocol (eager
 * range and cooperative-sticky assignment) and the consumer protocol (KIP-848).
 */
class GroupMembershipTest extends BrokerTest {
  private static final int PARTITIONS = 6;
  private static final int RECORDS = 3000;

  private Map<String, Object> protocol(String mode) {
    return switch (mode) {
      case "classic-eager" ->
          Map.of(
              ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
              ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName());
      case "classic-cooperative" ->
          Map.of(
              ConsumerConfig.GROUP_PROTOCOL_CONFIG, "classic",
              ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG,
                  CooperativeStickyAssignor.class.getName());
      case "consumer" -> Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
      default -> throw new IllegalArgumentException(mode);
    };
  }

  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"classic-eager", "classic-cooperative", "consumer"})
  void membersJoinAndLeaveUnderLoadWithoutLosingRecords(String mode) throws Exception {
    String topic = clients.createTopic("members-" + mode, PARTITIONS);
    String group = Clients.unique("members");
    Set<String> seen = GroupMember.sharedSeen();
    AtomicReference<Throwable> producerFailure = new AtomicReference<>();
    KafkaProducer<String, String> producer = clients.producer(Map.of());
    Thread producing =
        new Thread(
            () -> {
              try {
                for (int i = 0; i < RECORDS; i++) {
                  producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, "r" + i));
                  if (i % 100 == 0) {
                    Thread.sleep(200); // about 6 s of load while members come and go
                  }
                }
                producer.flush();
              } catch (Throwable e) {
                producerFailure.set(e);
              }
            });
    producing.start();

    GroupMember first = member(group, topic, seen, protocol(mode));
    Thread.sleep(1500);
    GroupMember second = member(group, topic, seen, protocol(mode));
    Thread.sleep(1500);
    GroupMember third = member(group, topic, seen, protocol(mode));
    Thread.sleep(1500);
    second.close();
    producing.join();
    assertEquals(null, producerFailure.get());

    Eventually.until(() -> seen.size() == RECORDS, () -> "every record consumed: " + seen.size());
    Set<TopicPartition> all =
        IntStream.range(0, PARTITIONS).mapToObj(p -> tp(topic, p)).collect(Collectors.toSet());
    Eventually.until(
        () -> {
          Set<TopicPartition> union = new HashSet<>(first.assignment());
          union.addAll(third.assignment());
          return union.equals(all) && first.assignment().size() + third.assignment().size() == PARTITIONS;
        },
        () -> "the two remaining members share every partition, each once: " + first.assignment() + " " + third.assignment());
    first.close();
    third.close();

    // Every member committed after each poll: the group's offsets reach the end of each partition.
    try (Admin admin = Admin.create(clients.base())) {
      Map<TopicPartition, Long> committed = new HashMap<>();
      admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get()
          .forEach((partition, offset) -> committed.put(partition, offset.offset()));
      Map<TopicPartition, Long> ends = new HashMap<>();
      for (TopicPartition partition : all) {
        ends.put(partition, (long) RECORDS / PARTITIONS);
      }
      assertEquals(ends, committed);
    }
  }

  /**
   * A static member (group.instance.id) that restarts gets the same partitions back, and the
   * other member's assignment does not move.
   */
  @ParameterizedTest(name = "{0}")
  @ValueSource(strings = {"classic-eager", "consumer"})
  void staticMemberRestartKeepsItsPartitions(String mode) throws Exception {
    String topic = clients.createTopic("static-" + mode, 4);
    String group = Clients.unique("static");
    Set<String> seen = GroupMember.sharedSeen();
    GroupMember one = member(group, topic, seen, withInstance(protocol(mode), "one"));
    GroupMember two = member(group, topic, seen, withInstance(protocol(mode), "two"));
    Eventually.until(
        () -> one.assignment().size() == 2 && two.assignment().size() == 2,
        () -> "two static members with two partitions each");
    // Settled before the restart: no rebalance of the group's own still under way.
    Admin admin = clients.admin();
    Eventually.until(
        () -> Clients.get(admin.describeConsumerGroups(List.of(group)).all()).get(group).groupState()
            == GroupState.STABLE,
        () -> "the group is stable");
    Set<TopicPartition> onesPartitions = one.assignment();
    Set<TopicPartition> twosPartitions = two.assignment();
    one.close();
    GroupMember again = member(group, topic, seen, withInstance(protocol(mode), "one"));
    Eventually.until(() -> again.assignment().size() == 2, () -> "the restarted member assigned again");
    assertEquals(onesPartitions, again.assignment());
    assertEquals(twosPartitions, two.assignment());
    again.close();
    two.close();
  }

  private static Map<String, Object> withInstance(Map<String, Object> protocol, String instance) {
    Map<String, Object> settings = new HashMap<>(protocol);
    settings.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
    return settings;
  }

  private GroupMember member(String group, String topic, Set<String> seen, Map<String, Object> settings) {
    // Tracked so a failed test still closes its consumers; close() twice is harmless.
    return clients.track(new GroupMember(clients.consumer(group, settings), topic, seen));
  }

}
