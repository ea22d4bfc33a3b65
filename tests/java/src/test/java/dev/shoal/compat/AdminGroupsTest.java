package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.cause;
import static dev.shoal.compat.harness.Clients.tp;
import static dev.shoal.compat.harness.Clients.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.ListGroupsOptions;
import org.apache.kafka.clients.admin.MemberToRemove;
import org.apache.kafka.clients.admin.RemoveMembersFromConsumerGroupOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.junit.jupiter.api.Test;

/** Consumer groups through the Admin client: list, describe, offsets, members, deletion. */
class AdminGroupsTest extends BrokerTest {

  /** A group with one running member (its own thread) of the given protocol. */
  private GroupMember running(String group, String topic, String protocol, String instance) {
    Map<String, Object> settings = new HashMap<>(Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol));
    if (instance != null) {
      settings.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
    }
    return clients.track(new GroupMember(clients.consumer(group, settings), topic, GroupMember.sharedSeen()));
  }

  @Test
  void listAndDescribeGroupsOfBothProtocols() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("described", 2);
    String classic = Clients.unique("classic");
    String consumer = Clients.unique("consumer");
    GroupMember classicMember = running(classic, topic, "classic", null);
    GroupMember consumerMember = running(consumer, topic, "consumer", null);
    Eventually.until(
        () -> classicMember.assignment().size() == 2 && consumerMember.assignment().size() == 2,
        () -> "both members assigned");

    Map<String, GroupListing> listed = new HashMap<>();
    for (GroupListing listing : get(admin.listGroups(ListGroupsOptions.forConsumerGroups()).all())) {
      listed.put(listing.groupId(), listing);
    }
    assertEquals(GroupType.CLASSIC, listed.get(classic).type().orElseThrow());
    assertEquals(GroupType.CONSUMER, listed.get(consumer).type().orElseThrow());
    assertEquals(GroupState.STABLE, listed.get(classic).groupState().orElseThrow());
    assertEquals(GroupState.STABLE, listed.get(consumer).groupState().orElseThrow());

    Map<String, ConsumerGroupDescription> described =
        get(admin.describeConsumerGroups(List.of(classic, consumer)).all());
    for (String group : List.of(classic, consumer)) {
      ConsumerGroupDescription description = described.get(group);
      assertEquals(GroupState.STABLE, description.groupState());
      assertEquals(1, description.members().size());
      Set<TopicPartition> assigned = description.members().iterator().next().assignment().topicPartitions();
      assertEquals(Set.of(tp(topic, 0), tp(topic, 1)), assigned);
    }
    assertEquals(GroupType.CLASSIC, described.get(classic).type());
    assertEquals(GroupType.CONSUMER, described.get(consumer).type());
    assertEquals("range", described.get(classic).partitionAssignor());
    // describeClassicGroups answers for classic groups.
    assertEquals(1, get(admin.describeClassicGroups(List.of(classic)).all()).get(classic).members().size());
  }

  /**
   * A group that does not exist is GroupIdNotFound to describeConsumerGroups and
   * describeClassicGroups (DescribeGroups v6, KIP-1043), which `kafka-consumer-groups --describe`
   * reports as such, not a Dead group.
   */
  @Test
  void describingAGroupThatDoesNotExist() throws Exception {
    Admin admin = clients.admin();
    String group = Clients.unique("absent");
    Throwable consumer = cause(admin.describeConsumerGroups(List.of(group)).all());
    assertInstanceOf(GroupIdNotFoundException.class, consumer);
    assertEquals("Group " + group + " not found.", consumer.getMessage());
    assertInstanceOf(GroupIdNotFoundException.class, cause(admin.describeClassicGroups(List.of(group)).all()));
  }

  @Test
  void offsetsListedAlteredAndDeleted() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("group-offsets", 2);
    String group = Clients.unique("offsets");
    get(
        admin
            .alterConsumerGroupOffsets(
                group,
                Map.of(tp(topic, 0), new OffsetAndMetadata(0, "zero"), tp(topic, 1), new OffsetAndMetadata(0)))
            .all());
    Map<TopicPartition, OffsetAndMetadata> listed =
        get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
    assertEquals(0, listed.get(tp(topic, 0)).offset());
    assertEquals("zero", listed.get(tp(topic, 0)).metadata());

    get(admin.deleteConsumerGroupOffsets(group, Set.of(tp(topic, 0))).all());
    Map<TopicPartition, OffsetAndMetadata> after =
        get(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata());
    assertEquals(Set.of(tp(topic, 1)), after.keySet());

    get(admin.deleteConsumerGroups(List.of(group)).all());
    assertInstanceOf(GroupIdNotFoundException.class, cause(admin.deleteConsumerGroups(List.of(group)).all()));
  }

  @Test
  void groupsWithMembersAreNotDeletedButMembersCanBeRemoved() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("members", 1);
    String group = Clients.unique("removable");
    GroupMember member = running(group, topic, "classic", "instance-1");
    Eventually.until(() -> member.assignment().size() == 1, () -> "the member assigned");
    assertInstanceOf(GroupNotEmptyException.class, cause(admin.deleteConsumerGroups(List.of(group)).all()));

    get(
        admin
            .removeMembersFromConsumerGroup(
                group, new RemoveMembersFromConsumerGroupOptions(List.of(new MemberToRemove("instance-1"))))
            .all());
    Eventually.until(() -> staticMemberGone(admin, group), () -> "the static member removed");
  }

  /**
   * Whether the group has no static member left. Kafka keeps a classic group its last member
   * left as Empty until its next offsets-expiry check; Shoal forgets one that holds no
   * offsets at once, so its DescribeGroups v6 finds no such group (docs/compatibility.md).
   */
  private boolean staticMemberGone(Admin admin, String group) throws Exception {
    ConsumerGroupDescription described;
    try {
      described = admin.describeConsumerGroups(List.of(group)).all().get().get(group);
    } catch (ExecutionException e) {
      if (onShoal() && e.getCause() instanceof GroupIdNotFoundException) {
        return true;
      }
      throw e;
    }
    return described.members().isEmpty()
        || !described.members().iterator().next().groupInstanceId().isPresent();
  }

  /**
   * Share and streams groups (KIP-932, KIP-1071): an id that is no such group is
   * GroupIdNotFound, on Kafka 4.4 as on Shoal.
   */
  @Test
  void shareAndStreamsGroups() throws Exception {
    Admin admin = clients.admin();
    String group = Clients.unique("share");
    Throwable share = cause(admin.describeShareGroups(List.of(group)).all());
    Throwable streams = cause(admin.describeStreamsGroups(List.of(group)).all());
    assertInstanceOf(GroupIdNotFoundException.class, share);
    assertInstanceOf(GroupIdNotFoundException.class, streams);
  }
}
