package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.cause;
import static dev.shoal.compat.harness.Clients.tp;
import static dev.shoal.compat.harness.Clients.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/** The exception classes the Java client raises for the errors applications handle. */
class ErrorsTest extends BrokerTest {
  private static final Map<String, Object> FAIL_FAST =
      Map.of(ProducerConfig.MAX_BLOCK_MS_CONFIG, "10000", ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "10000",
          ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");

  @Test
  void invalidTopicNameIsRefused() {
    KafkaProducer<String, String> producer = clients.producer(FAIL_FAST);
    ExecutionException refused =
        assertThrows(
            ExecutionException.class, () -> producer.send(new ProducerRecord<>("bad topic!", "v")).get());
    assertInstanceOf(InvalidTopicException.class, refused.getCause());
  }

  @Test
  void unknownTopicIsRefused() {
    Admin admin = clients.admin();
    String missing = Clients.unique("missing");
    assertInstanceOf(
        UnknownTopicOrPartitionException.class,
        cause(admin.listOffsets(Map.of(tp(missing, 0), OffsetSpec.latest())).all()));
  }

  @Test
  void refusedLoginReachesProducerAndConsumer() {
    KafkaProducer<String, String> producer =
        clients.producer(clients.sasl(Broker.ALICE, "wrong-password"), FAIL_FAST);
    assertThrows(SaslAuthenticationException.class, () -> producer.partitionsFor("anything"));
    KafkaConsumer<String, String> consumer =
        clients.consumer(clients.sasl(Broker.BOB, "wrong-password"), null, Map.of());
    assertThrows(SaslAuthenticationException.class, () -> consumer.listTopics(Duration.ofSeconds(10)));
  }

  /** Bob alone may write and read the topic and use the group: Alice is denied both. */
  @Test
  void deniedTopicAndGroup() throws Exception {
    String topic = clients.createTopic("guarded", 1);
    String group = Clients.unique("guarded-group");
    Admin admin = clients.admin();
    List<AclBinding> bobOnly =
        List.of(
            allow(ResourceType.TOPIC, topic, AclOperation.ALL),
            allow(ResourceType.GROUP, group, AclOperation.ALL));
    get(admin.createAcls(bobOnly).all());
    Eventually.until(
        () -> get(admin.describeAcls(AclBindingFilter.ANY).values()).containsAll(bobOnly),
        () -> "the ACLs are in place");

    KafkaProducer<String, String> alice =
        clients.producer(clients.sasl(Broker.ALICE, Broker.ALICE_PASSWORD), FAIL_FAST);
    ExecutionException denied =
        assertThrows(ExecutionException.class, () -> alice.send(new ProducerRecord<>(topic, 0, "k", "v")).get());
    assertInstanceOf(TopicAuthorizationException.class, denied.getCause());

    KafkaProducer<String, String> bob =
        clients.producer(clients.sasl(Broker.BOB, Broker.BOB_PASSWORD), FAIL_FAST);
    assertEquals(0, bob.send(new ProducerRecord<>(topic, 0, "k", "v")).get().offset());

    KafkaConsumer<String, String> aliceReads =
        clients.consumer(clients.sasl(Broker.ALICE, Broker.ALICE_PASSWORD), group, Map.of());
    // An offset commit checks the group first.
    assertThrows(
        GroupAuthorizationException.class,
        () -> aliceReads.commitSync(Map.of(tp(topic, 0), new OffsetAndMetadata(0)), Duration.ofSeconds(10)));
    get(admin.deleteAcls(bobOnly.stream().map(AclBinding::toFilter).toList()).all());
  }

  private static AclBinding allow(ResourceType type, String name, AclOperation operation) {
    return new AclBinding(
        new ResourcePattern(type, name, PatternType.LITERAL),
        new AccessControlEntry("User:" + Broker.BOB, "*", operation, AclPermissionType.ALLOW));
  }
}
