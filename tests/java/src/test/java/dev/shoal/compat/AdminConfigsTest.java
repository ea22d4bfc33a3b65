package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.cause;
import static dev.shoal.compat.harness.Clients.nodeId;
import static dev.shoal.compat.harness.Clients.get;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigSource;
import org.apache.kafka.clients.admin.ConfigEntry.ConfigType;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.Test;

/** describeConfigs and incrementalAlterConfigs on topics, brokers, groups and client metrics. */
class AdminConfigsTest extends BrokerTest {

  private static AlterConfigOp op(String name, String value, AlterConfigOp.OpType type) {
    return new AlterConfigOp(new ConfigEntry(name, value), type);
  }

  private static KafkaFuture<Void> alter(Admin admin, ConfigResource resource, AlterConfigOp... ops) {
    return admin.incrementalAlterConfigs(Map.of(resource, List.of(ops))).all();
  }

  private static Config describe(Admin admin, ConfigResource resource) throws Exception {
    return get(admin.describeConfigs(List.of(resource)).all()).get(resource);
  }

  @Test
  void topicConfigsHaveValueSourceAndType() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("configs", 1, Map.of("retention.ms", "3600000"));
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    Config config = describe(admin, resource);
    ConfigEntry retention = config.get("retention.ms");
    assertEquals("3600000", retention.value());
    assertEquals(ConfigSource.DYNAMIC_TOPIC_CONFIG, retention.source());
    assertEquals(ConfigType.LONG, retention.type());
    ConfigEntry cleanup = config.get("cleanup.policy");
    assertEquals("delete", cleanup.value());
    assertEquals(ConfigSource.DEFAULT_CONFIG, cleanup.source());
    assertEquals(ConfigType.LIST, cleanup.type());
    assertEquals(ConfigType.INT, config.get("max.message.bytes").type());
  }

  @Test
  void incrementalAlterSetsDeletesAppendsAndSubtracts() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("alter", 1);
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    // Kafka applies a change through its metadata log, so a describe right after the alter
    // may still show the value before it: each is awaited.
    get(alter(admin, resource, op("retention.ms", "7200000", AlterConfigOp.OpType.SET)));
    awaitValue(admin, resource, "retention.ms", "7200000");
    get(alter(admin, resource, op("retention.ms", null, AlterConfigOp.OpType.DELETE)));
    awaitValue(admin, resource, "retention.ms", "604800000");
    assertEquals(ConfigSource.DEFAULT_CONFIG, describe(admin, resource).get("retention.ms").source());

    get(alter(admin, resource, op("cleanup.policy", "compact", AlterConfigOp.OpType.APPEND)));
    // Kafka keeps the list in the order it was written; Shoal keeps the policy as the set it
    // is and describes both in one order.
    String both = onShoal() ? "compact,delete" : "delete,compact";
    awaitValue(admin, resource, "cleanup.policy", both);
    get(alter(admin, resource, op("cleanup.policy", "delete", AlterConfigOp.OpType.SUBTRACT)));
    awaitValue(admin, resource, "cleanup.policy", "compact");
  }

  private void awaitValue(Admin admin, ConfigResource resource, String name, String value)
      throws Exception {
    Eventually.until(
        () -> value.equals(describe(admin, resource).get(name).value()),
        () -> name + " is described as " + value);
  }

  @Test
  void badTopicConfigsAreRefusedAndValidateOnlyChangesNothing() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("bad-config", 1);
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    assertInstanceOf(
        InvalidConfigurationException.class,
        cause(alter(admin, resource, op("retention.ms", "soon", AlterConfigOp.OpType.SET))));
    assertInstanceOf(
        InvalidConfigurationException.class,
        cause(alter(admin, resource, op("no.such.config", "1", AlterConfigOp.OpType.SET))));
    get(
        admin
            .incrementalAlterConfigs(
                Map.of(resource, List.of(op("retention.ms", "1000", AlterConfigOp.OpType.SET))),
                new AlterConfigsOptions().validateOnly(true))
            .all());
    assertEquals("604800000", describe(admin, resource).get("retention.ms").value());
  }

  /**
   * A topic default set cluster-wide (log.retention.bytes on the default broker resource) holds
   * for a topic that does not set retention.bytes, not for one that does; deleted, Kafka's
   * default holds again.
   */
  @Test
  void clusterWideTopicDefaultHoldsForTopicsThatDoNotSetTheConfig() throws Exception {
    Admin admin = clients.admin();
    ConfigResource follows =
        new ConfigResource(ConfigResource.Type.TOPIC, clients.createTopic("follows-default", 1));
    ConfigResource own = new ConfigResource(
        ConfigResource.Type.TOPIC,
        clients.createTopic("own-retention", 1, Map.of("retention.bytes", "5000")));
    ConfigResource cluster = new ConfigResource(ConfigResource.Type.BROKER, "");
    String large = "1099511627776";
    try {
      get(alter(admin, cluster, op("log.retention.bytes", large, AlterConfigOp.OpType.SET)));
      Eventually.until(
          () -> large.equals(describe(admin, follows).get("retention.bytes").value()),
          () -> "the topic takes the cluster-wide default");
      ConfigEntry followed = describe(admin, follows).get("retention.bytes");
      assertEquals(ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG, followed.source());
      ConfigEntry kept = describe(admin, own).get("retention.bytes");
      assertEquals("5000", kept.value());
      assertEquals(ConfigSource.DYNAMIC_TOPIC_CONFIG, kept.source());
    } finally {
      get(alter(admin, cluster, op("log.retention.bytes", null, AlterConfigOp.OpType.DELETE)));
    }
    Eventually.until(
        () -> describe(admin, follows).get("retention.bytes").source() == ConfigSource.DEFAULT_CONFIG,
        () -> "the topic is back at Kafka's default");
    assertEquals("-1", describe(admin, follows).get("retention.bytes").value());
  }

  /** The config file's settings, described read-only, with the type Kafka gives each. */
  @Test
  void staticBrokerConfigsHaveKafkasTypes() throws Exception {
    Admin admin = clients.admin();
    ConfigResource resource =
        new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(nodeId(admin)));
    Config config = describe(admin, resource);
    Map<String, ConfigType> types = Map.ofEntries(
        Map.entry("auto.create.topics.enable", ConfigType.BOOLEAN),
        Map.entry("broker.id", ConfigType.INT),
        Map.entry("node.id", ConfigType.INT),
        Map.entry("compression.type", ConfigType.STRING),
        Map.entry("errors.deadletterqueue.auto.create.topics.enable", ConfigType.BOOLEAN),
        Map.entry("errors.deadletterqueue.topic.name.prefix", ConfigType.STRING),
        Map.entry("group.initial.rebalance.delay.ms", ConfigType.INT),
        Map.entry("group.max.session.timeout.ms", ConfigType.INT),
        Map.entry("group.min.session.timeout.ms", ConfigType.INT),
        Map.entry("group.max.size", ConfigType.INT),
        Map.entry("log.retention.bytes", ConfigType.LONG),
        Map.entry("log.retention.ms", ConfigType.LONG),
        Map.entry("message.max.bytes", ConfigType.INT),
        Map.entry("num.partitions", ConfigType.INT),
        Map.entry("offsets.retention.minutes", ConfigType.INT),
        Map.entry("socket.request.max.bytes", ConfigType.INT));
    types.forEach((name, type) -> {
      ConfigEntry entry = config.get(name);
      assertEquals(type, entry == null ? null : entry.type(), name);
    });
  }

  /** A dynamic per-broker config both serve: set, described as DYNAMIC_BROKER_CONFIG, deleted. */
  @Test
  void dynamicBrokerConfigSetAndDeleted() throws Exception {
    Admin admin = clients.admin();
    ConfigResource resource =
        new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(nodeId(admin)));
    get(alter(admin, resource, op("max.connections.per.ip", "500", AlterConfigOp.OpType.SET)));
    Eventually.until(
        () -> describe(admin, resource).get("max.connections.per.ip").value().equals("500"),
        () -> "the broker describes its new value");
    ConfigEntry set = describe(admin, resource).get("max.connections.per.ip");
    assertEquals(ConfigSource.DYNAMIC_BROKER_CONFIG, set.source());
    assertEquals(ConfigType.INT, set.type());
    get(alter(admin, resource, op("max.connections.per.ip", null, AlterConfigOp.OpType.DELETE)));
    Eventually.until(
        () -> describe(admin, resource).get("max.connections.per.ip").source() == ConfigSource.DEFAULT_CONFIG,
        () -> "the deleted config is described at its default");
  }

  @Test
  void groupConfigSetAndDescribed() throws Exception {
    Admin admin = clients.admin();
    ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, Clients.unique("configured"));
    get(alter(admin, resource, op("consumer.session.timeout.ms", "50000", AlterConfigOp.OpType.SET)));
    // Kafka's broker applies the controller's record a moment after the call returns.
    Eventually.until(
        () -> "50000".equals(describe(admin, resource).get("consumer.session.timeout.ms").value()),
        () -> "the group config is described as set");
    ConfigEntry timeout = describe(admin, resource).get("consumer.session.timeout.ms");
    assertEquals(ConfigSource.DYNAMIC_GROUP_CONFIG, timeout.source());
    assertInstanceOf(
        InvalidConfigurationException.class,
        cause(alter(admin, resource, op("consumer.session.timeout.ms", "1", AlterConfigOp.OpType.SET))));
  }

  @Test
  void clientMetricsResources() throws Exception {
    Admin admin = clients.admin();
    ConfigResource resource =
        new ConfigResource(ConfigResource.Type.CLIENT_METRICS, Clients.unique("metrics"));
    KafkaFuture<Void> altered =
        alter(admin, resource, op("metrics", "org.apache.kafka.producer.", AlterConfigOp.OpType.SET));
    if (onShoal()) {
      // KIP-714's client metrics are not collected by Shoal: their resource is refused.
      assertInstanceOf(InvalidRequestException.class, cause(altered));
    } else {
      get(altered);
      Eventually.until(
          () -> describe(admin, resource).get("metrics").value().equals("org.apache.kafka.producer."),
          () -> "the subscription is described");
    }
  }

  /** listConfigResources (KIP-1142): the resources describeConfigs can show, by type. */
  @Test
  void listConfigResourcesByType() throws Exception {
    Admin admin = clients.admin();
    String topic = clients.createTopic("listed", 1);
    String configured = Clients.unique("listed-group");
    get(alter(admin, new ConfigResource(ConfigResource.Type.GROUP, configured),
        op("consumer.session.timeout.ms", "50000", AlterConfigOp.OpType.SET)));
    String node = String.valueOf(nodeId(admin));
    Eventually.until(
        () -> listed(admin, ConfigResource.Type.GROUP).contains(configured),
        () -> "the group that sets a config is listed");
    assertTrue(listed(admin, ConfigResource.Type.TOPIC).contains(topic));
    assertEquals(List.of(node), listed(admin, ConfigResource.Type.BROKER));
    Collection<ConfigResource> all = get(admin.listConfigResources().all());
    for (ConfigResource expected : List.of(
        new ConfigResource(ConfigResource.Type.TOPIC, topic),
        new ConfigResource(ConfigResource.Type.BROKER, node),
        new ConfigResource(ConfigResource.Type.GROUP, configured))) {
      assertTrue(all.contains(expected), () -> expected + " in " + all);
    }
  }

  private static List<String> listed(Admin admin, ConfigResource.Type type) throws Exception {
    return get(admin.listConfigResources(Set.of(type), new ListConfigResourcesOptions()).all())
        .stream()
        .map(ConfigResource::name)
        .toList();
  }
}
