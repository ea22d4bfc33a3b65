package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.tp;
import static dev.shoal.compat.harness.Clients.get;
import static dev.shoal.compat.harness.Clients.cause;
import static dev.shoal.compat.harness.Clients.nodeId;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeClusterResult;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FeatureUpdate;
import org.apache.kafka.clients.admin.ListTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.UpdateFeaturesOptions;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.TopicPartitionReplica;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.BrokerIdNotRegisteredException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.MismatchedEndpointTypeException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.junit.jupiter.api.Test;

/** Admin calls on topics, partitions, the cluster, features and log dirs. */
class AdminTopicsTest extends BrokerTest {

  @Test
  void createDescribeListAndDeleteTopics() throws Exception {
    Admin admin = clients.admin();
    String name = Clients.unique("admin-topic");
    CreateTopicsResult created =
        admin.createTopics(
            List.of(new NewTopic(name, 3, (short) 1).configs(Map.of("retention.ms", "3600000"))));
    get(created.all());
    assertEquals(3, get(created.numPartitions(name)));
    assertEquals(1, get(created.replicationFactor(name)));
    Uuid id = get(created.topicId(name));
    assertNotNull(id);
    assertEquals(
        "3600000", get(created.config(name)).get("retention.ms").value(), "the created config");

    assertTrue(get(admin.listTopics().names()).contains(name));
    TopicDescription byName = get(admin.describeTopics(List.of(name)).allTopicNames()).get(name);
    assertEquals(id, byName.topicId());
    assertEquals(3, byName.partitions().size());
    assertFalse(byName.isInternal());
    for (TopicPartitionInfo partition : byName.partitions()) {
      assertNotNull(partition.leader());
      assertEquals(List.of(partition.leader()), partition.replicas());
      assertEquals(List.of(partition.leader()), partition.isr());
    }
    TopicDescription byId =
        get(admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds()).get(id);
    assertEquals(name, byId.name());

    get(admin.deleteTopics(TopicCollection.ofTopicIds(List.of(id))).all());
    // Kafka's broker learns of the deletion from the controller a moment after the call
    // returns: the topic is unknown by name and by id within a short while.
    Eventually.until(
        () -> failsWith(admin.describeTopics(List.of(name)).allTopicNames(), UnknownTopicOrPartitionException.class)
            && failsWith(admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds(),
                UnknownTopicIdException.class),
        () -> name + " is unknown by name and by id once deleted");
  }

  /** Whether the call fails with `expected` (false while it still succeeds). */
  private static boolean failsWith(KafkaFuture<?> future, Class<? extends Throwable> expected) throws Exception {
    try {
      get(future);
      return false;
    } catch (ExecutionException e) {
      assertInstanceOf(expected, e.getCause());
      return true;
    }
  }

  @Test
  void createTopicRefusals() throws Exception {
    Admin admin = clients.admin();
    String name = clients.createTopic("exists", 1);
    assertInstanceOf(
        TopicExistsException.class,
        cause(admin.createTopics(List.of(new NewTopic(name, 1, (short) 1))).all()));
    assertInstanceOf(
        InvalidTopicException.class,
        cause(admin.createTopics(List.of(new NewTopic("bad/name", 1, (short) 1))).all()));
    String replicated = Clients.unique("rf");
    CreateTopicsResult threeReplicas =
        admin.createTopics(List.of(new NewTopic(replicated, 1, (short) 3)));
    if (onShoal()) {
      // Diskless: the object store keeps the data, so any replication factor is accepted (an
      // application that asks for 3, as Streams and Connect do, runs unchanged) and the topic
      // is described as it is served, by one broker a partition.
      get(threeReplicas.all());
      TopicDescription described = get(admin.describeTopics(List.of(replicated)).allTopicNames()).get(replicated);
      assertEquals(1, described.partitions().get(0).replicas().size());
    } else {
      assertInstanceOf(InvalidReplicationFactorException.class, cause(threeReplicas.all()));
    }
    // validateOnly checks and creates nothing.
    String checked = Clients.unique("validate-only");
    get(
        admin
            .createTopics(
                List.of(new NewTopic(checked, 2, (short) 1)), new CreateTopicsOptions().validateOnly(true))
            .all());
    assertFalse(get(admin.listTopics().names()).contains(checked));
  }

  @Test
  void deleteUnknownTopicIsRefused() {
    Admin admin = clients.admin();
    assertInstanceOf(
        UnknownTopicOrPartitionException.class,
        cause(admin.deleteTopics(List.of(Clients.unique("never-made"))).all()));
  }

  @Test
  void listTopicsHidesInternalTopicsUnlessAsked() throws Exception {
    Admin admin = clients.admin();
    // Committing an offset makes Kafka's __consumer_offsets exist.
    String topic = clients.createTopic("internal", 1);
    String group = Clients.unique("internal-group");
    clients.consumer(group, Map.of()).commitSync(Map.of(tp(topic, 0), new org.apache.kafka.clients.consumer.OffsetAndMetadata(0)));
    Set<String> plain = get(admin.listTopics().names());
    assertFalse(plain.stream().anyMatch(n -> n.startsWith("__")), plain.toString());
    Set<String> all = get(admin.listTopics(new ListTopicsOptions().listInternal(true)).names());
    if (onShoal()) {
      // Diskless: groups and transactions live in the coordinator, not in internal topics.
      assertFalse(all.stream().anyMatch(n -> n.startsWith("__")), all.toString());
    } else {
      assertTrue(all.contains("__consumer_offsets"), all.toString());
    }
  }

  @Test
  void createPartitionsGrowsATopicAndRefusesShrinking() throws Exception {
    Admin admin = clients.admin();
    String name = clients.createTopic("grow", 2);
    get(admin.createPartitions(Map.of(name, NewPartitions.increaseTo(5))).all());
    Eventually.until(
        () -> get(admin.describeTopics(List.of(name)).allTopicNames()).get(name).partitions().size() == 5,
        () -> "the topic is described with 5 partitions");
    assertInstanceOf(
        InvalidPartitionsException.class,
        cause(admin.createPartitions(Map.of(name, NewPartitions.increaseTo(3))).all()));
  }

  @Test
  void describeClusterNamesTheBroker() throws Exception {
    Admin admin = clients.admin();
    DescribeClusterResult cluster = admin.describeCluster();
    List<Node> nodes = List.copyOf(get(cluster.nodes()));
    assertEquals(1, nodes.size());
    assertEquals("127.0.0.1", nodes.get(0).host());
    assertEquals(broker.bootstrap(), "127.0.0.1:" + nodes.get(0).port());
    assertEquals(nodes.get(0), get(cluster.controller()));
    assertNotNull(get(cluster.clusterId()));
    // DescribeCluster v2 (KIP-1073): with fenced brokers asked for, the one broker is unfenced.
    List<Node> withFenced =
        List.copyOf(get(admin.describeCluster(new DescribeClusterOptions().includeFencedBrokers(true)).nodes()));
    assertEquals(nodes, withFenced);
    assertFalse(withFenced.get(0).isFenced());
  }

  @Test
  void aBrokerRefusesAdminsThatWantAController() {
    // bootstrap.controllers sends DescribeCluster with the controller endpoint type (KIP-919);
    // a broker's listener answers MISMATCHED_ENDPOINT_TYPE.
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_CONTROLLERS_CONFIG, broker.bootstrap());
    props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
    props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    Admin admin = clients.admin(props);
    assertInstanceOf(MismatchedEndpointTypeException.class, cause(admin.describeCluster().nodes()));
  }

  @Test
  void describeFeaturesListsTheVersions() throws Exception {
    FeatureMetadata features = get(clients.admin().describeFeatures().featureMetadata());
    assertTrue(features.finalizedFeaturesEpoch().isPresent(), features.toString());
    // The consumer group protocol (KIP-848) on both.
    assertEquals(1, features.finalizedFeatures().get("group.version").maxVersionLevel());
    assertEquals(1, features.supportedFeatures().get("group.version").maxVersion());
    // The producer runs transactions by this level: both finalize KIP-890's level 2.
    assertEquals(2, features.supportedFeatures().get("transaction.version").maxVersion());
    assertEquals(2, features.finalizedFeatures().get("transaction.version").maxVersionLevel());
  }

  @Test
  void electLeadersAndReassignments() throws Exception {
    Admin admin = clients.admin();
    String name = clients.createTopic("elect", 1);
    Set<org.apache.kafka.common.TopicPartition> partitions = Set.of(tp(name, 0));
    int node = nodeId(admin);
    KafkaFuture<?> elected = admin.electLeaders(ElectionType.PREFERRED, partitions).all();
    KafkaFuture<?> reassigned =
        admin
            .alterPartitionReassignments(
                Map.of(tp(name, 0), Optional.of(new NewPartitionReassignment(List.of(node)))))
            .all();
    KafkaFuture<?> listed = admin.listPartitionReassignments().reassignments();
    if (onShoal()) {
      // Diskless partitions have no replicas to elect or move: not served.
      assertInstanceOf(UnsupportedVersionException.class, cause(elected));
      assertInstanceOf(UnsupportedVersionException.class, cause(reassigned));
      assertInstanceOf(UnsupportedVersionException.class, cause(listed));
    } else {
      // The only replica is already the preferred leader.
      assertInstanceOf(
          org.apache.kafka.common.errors.ElectionNotNeededException.class, cause(elected));
      get(reassigned);
      get(listed);
    }
  }

  @Test
  void logDirs() throws Exception {
    Admin admin = clients.admin();
    String name = clients.createTopic("logdirs", 1);
    int node = nodeId(admin);
    // One dir per broker: Kafka's log dir; Shoal's stands for its object store.
    assertEquals(1, get(admin.describeLogDirs(List.of(node)).allDescriptions()).get(node).size());
    TopicPartitionReplica replica = new TopicPartitionReplica(name, 0, node);
    assertNotNull(
        get(admin.describeReplicaLogDirs(List.of(replica)).all()).get(replica).getCurrentReplicaLogDir());
  }

  /**
   * describeLogDirs: a partition's size grows with what is written to it and shrinks once
   * retention drops it (on Kafka, the segments rolled by segment.ms; Shoal sizes partitions by
   * the bytes of their live batches).
   */
  @Test
  void logDirSizesGrowWithWritesAndShrinkAfterRetention() throws Exception {
    Admin admin = clients.admin();
    String name = clients.createTopic("logdirs-retention", 1, Map.of("segment.ms", "100"));
    int node = nodeId(admin);
    KafkaProducer<String, String> producer = clients.producer(Map.of());
    String value = "v".repeat(1000);
    for (int i = 0; i < 200; i++) {
      producer.send(new ProducerRecord<>(name, 0, "k", value));
    }
    producer.flush();
    Thread.sleep(300);
    // On Kafka this write rolls the segment, so the first is closed and retention may drop it.
    producer.send(new ProducerRecord<>(name, 0, "k", "last")).get();
    long grown = partitionSize(admin, node, name);
    assertTrue(grown >= 200 * 1000, "the written bytes are counted: " + grown);
    ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, name);
    AlterConfigOp retention =
        new AlterConfigOp(new ConfigEntry("retention.ms", "1000"), AlterConfigOp.OpType.SET);
    get(admin.incrementalAlterConfigs(Map.of(topic, List.of(retention))).all());
    Eventually.until(
        () -> partitionSize(admin, node, name) < grown / 2,
        () -> "retention shrinks the partition below half of " + grown);
  }

  private static long partitionSize(Admin admin, int node, String topic) throws Exception {
    return get(admin.describeLogDirs(List.of(node)).allDescriptions()).get(node).values().stream()
        .flatMap(dir -> dir.replicaInfos().entrySet().stream())
        .filter(replica -> replica.getKey().topic().equals(topic))
        .mapToLong(replica -> replica.getValue().size())
        .sum();
  }

  /**
   * KRaft's own calls: Kafka answers them; Shoal, with no KRaft quorum, serves neither.
   * updateFeatures and listConfigResources are served by both.
   */
  @Test
  void quorumFeaturesAndConfigResources() throws Exception {
    Admin admin = clients.admin();
    KafkaFuture<?> quorum = admin.describeMetadataQuorum().quorumInfo();
    KafkaFuture<?> unregistered = admin.unregisterBroker(99).all();
    KafkaFuture<?> updated =
        admin
            .updateFeatures(
                Map.of("group.version", new FeatureUpdate((short) 1, FeatureUpdate.UpgradeType.UPGRADE)),
                new UpdateFeaturesOptions().validateOnly(true))
            .all();
    KafkaFuture<?> resources = admin.listConfigResources().all();
    if (onShoal()) {
      for (KafkaFuture<?> call : List.of(quorum, unregistered)) {
        assertInstanceOf(UnsupportedVersionException.class, cause(call));
      }
    } else {
      assertEquals(1, get(admin.describeMetadataQuorum().quorumInfo()).leaderId());
      assertInstanceOf(BrokerIdNotRegisteredException.class, cause(unregistered));
    }
    get(updated);
    get(resources);
  }
}
