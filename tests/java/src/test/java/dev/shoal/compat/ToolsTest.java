package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.nodeId;
import static dev.shoal.compat.harness.Clients.tp;
import static dev.shoal.compat.harness.Broker.ALICE;
import static dev.shoal.compat.harness.Broker.ALICE_PASSWORD;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import dev.shoal.compat.harness.Tool;
import dev.shoal.compat.harness.Tool.Result;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

/**
 * Kafka's own command-line tools, run from the pinned jars against each broker; their output
 * parsed for what an operator reads off it.
 */
class ToolsTest extends BrokerTest {
  private static final String TOPICS = "org.apache.kafka.tools.TopicCommand";
  private static final String CONFIGS = "org.apache.kafka.tools.ConfigCommand";
  private static final String GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
  private static final String SHARE_GROUPS = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";
  private static final String ACLS = "org.apache.kafka.tools.AclCommand";
  private static final String TRANSACTIONS = "org.apache.kafka.tools.TransactionsCommand";
  private static final String GET_OFFSETS = "org.apache.kafka.tools.GetOffsetShell";
  private static final String DELETE_RECORDS = "org.apache.kafka.tools.DeleteRecordsCommand";
  private static final String PRODUCER_PERF = "org.apache.kafka.tools.ProducerPerformance";
  private static final String CONSUMER_PERF = "org.apache.kafka.tools.ConsumerPerformance";
  private static final String LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand";
  private static final String FEATURES = "org.apache.kafka.tools.FeatureCommand";
  private static final String TOKENS = "org.apache.kafka.tools.DelegationTokenCommand";

  /** Runs a tool with --bootstrap-server first; fails on a non-zero exit. */
  private Result ok(String tool, String... args) throws Exception {
    Result result = tool(tool, args);
    assertEquals(0, result.status(), result::toString);
    return result;
  }

  private Result tool(String tool, String... args) throws Exception {
    String[] all = new String[args.length + 2];
    all[0] = "--bootstrap-server";
    all[1] = broker.bootstrap();
    System.arraycopy(args, 0, all, 2, args.length);
    return Tool.run(tool, all);
  }

  private void produce(String topic, int count) throws Exception {
    KafkaProducer<String, String> producer = clients.producer(Map.of());
    for (int i = 0; i < count; i++) {
      producer.send(new ProducerRecord<>(topic, 0, "k" + i, "v" + i));
    }
    producer.flush();
  }

  @Test
  void kafkaTopics() throws Exception {
    String topic = Clients.unique("tool-topic");
    ok(TOPICS, "--create", "--topic", topic, "--partitions", "3", "--replication-factor", "1",
        "--config", "retention.ms=100000");
    assertTrue(ok(TOPICS, "--list").out().lines().anyMatch(topic::equals));
    Result described = ok(TOPICS, "--describe", "--topic", topic);
    assertTrue(described.out().contains("PartitionCount: 3"), described::toString);
    assertTrue(described.out().contains("retention.ms=100000"), described::toString);
    assertEquals(3, described.out().lines().filter(l -> l.contains("Partition: ")).count(), described::toString);
    // Kafka 4.4's tool describes through DescribeTopicPartitions (KIP-966) where the broker
    // serves it: only that answer carries eligible leader replicas; from Metadata it prints N/A.
    assertEquals(3, described.out().lines().filter(l -> l.contains("\tElr: ")).count(), described::toString);
    assertTrue(!described.out().contains("Elr: N/A"), described::toString);
    ok(TOPICS, "--alter", "--topic", topic, "--partitions", "4");
    Eventually.until(
        () -> ok(TOPICS, "--describe", "--topic", topic).out().contains("PartitionCount: 4"),
        () -> "the tool describes 4 partitions");
    ok(TOPICS, "--delete", "--topic", topic);
    Eventually.until(
        () -> ok(TOPICS, "--list").out().lines().noneMatch(topic::equals), () -> "the topic is gone");
  }

  @Test
  void kafkaConfigs() throws Exception {
    String topic = clients.createTopic("tool-configs", 1);
    ok(CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--alter", "--add-config", "retention.ms=2000");
    Eventually.until(
        () -> ok(CONFIGS, "--entity-type", "topics", "--entity-name", topic, "--describe").out()
            .contains("retention.ms=2000"),
        () -> "the topic config is described");

    String node = Integer.toString(nodeId(clients.admin()));
    ok(CONFIGS, "--entity-type", "brokers", "--entity-name", node, "--alter", "--add-config", "max.connections.per.ip=400");
    Eventually.until(
        () -> ok(CONFIGS, "--entity-type", "brokers", "--entity-name", node, "--describe").out()
            .contains("max.connections.per.ip=400"),
        () -> "the broker config is described");
    ok(CONFIGS, "--entity-type", "brokers", "--entity-name", node, "--alter", "--delete-config", "max.connections.per.ip");

    String user = Clients.unique("tool-user");
    ok(CONFIGS, "--entity-type", "users", "--entity-name", user, "--alter", "--add-config", "producer_byte_rate=1024");
    ok(CONFIGS, "--entity-type", "users", "--entity-name", user, "--alter",
        "--add-config", "SCRAM-SHA-256=[iterations=8192,password=tool-secret]");
    Eventually.until(
        () -> {
          String out = ok(CONFIGS, "--entity-type", "users", "--entity-name", user, "--describe").out();
          return out.contains("producer_byte_rate=1024.0") && out.contains("SCRAM-SHA-256=iterations=8192");
        },
        () -> "the user's quota and SCRAM credential are described");
  }

  @Test
  void kafkaConsumerGroups() throws Exception {
    String topic = clients.createTopic("tool-groups", 1);
    produce(topic, 10);
    String group = Clients.unique("tool-group");
    clients.consumer(group, Map.of()).commitSync(Map.of(tp(topic, 0), new OffsetAndMetadata(4)));

    assertTrue(ok(GROUPS, "--list").out().lines().anyMatch(group::equals));
    Result described = ok(GROUPS, "--describe", "--group", group);
    // GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG ...
    Matcher row = Pattern.compile(Pattern.quote(group) + "\\s+" + Pattern.quote(topic) + "\\s+0\\s+(\\d+)\\s+(\\d+)\\s+(\\d+)")
        .matcher(described.out());
    assertTrue(row.find(), described::toString);
    assertEquals(List.of("4", "10", "6"), List.of(row.group(1), row.group(2), row.group(3)));

    Result reset = ok(GROUPS, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute");
    assertTrue(Pattern.compile(Pattern.quote(topic) + "\\s+0\\s+0").matcher(reset.out()).find(), reset::toString);
    Result deleted = ok(GROUPS, "--delete", "--group", group);
    assertTrue(deleted.out().contains("Deletion of requested consumer groups ('" + group + "') was successful."),
        deleted::toString);
  }

  @Test
  void kafkaShareGroups() throws Exception {
    String topic = clients.createTopic("tool-shares", 1);
    produce(topic, 10);
    String group = Clients.unique("tool-share");
    ok(CONFIGS, "--alter", "--entity-type", "groups", "--entity-name", group,
        "--add-config", "share.auto.offset.reset=earliest");
    Properties props = clients.base();
    props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(props)) {
      consumer.subscribe(List.of(topic));
      int read = 0;
      long deadline = System.nanoTime() + Clients.TIMEOUT.toNanos();
      while (read < 10 && System.nanoTime() < deadline) {
        read += consumer.poll(Duration.ofMillis(200)).count();
      }
      assertEquals(10, read);
      consumer.commitSync();
      Result members = ok(SHARE_GROUPS, "--describe", "--group", group, "--members");
      assertTrue(members.out().contains(topic + ":0"), members::toString);
    }
    assertTrue(ok(SHARE_GROUPS, "--list").out().lines().anyMatch(group::equals));
    Result described = ok(SHARE_GROUPS, "--describe", "--group", group);
    // GROUP TOPIC PARTITION START-OFFSET ...
    Matcher row = Pattern.compile(Pattern.quote(group) + "\\s+" + Pattern.quote(topic) + "\\s+0\\s+(\\d+)")
        .matcher(described.out());
    assertTrue(row.find(), described::toString);
    Result reset = ok(SHARE_GROUPS, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute");
    assertTrue(Pattern.compile(Pattern.quote(topic) + "\\s+0\\s+0").matcher(reset.out()).find(), reset::toString);
    Result again = ok(SHARE_GROUPS, "--describe", "--group", group);
    Matcher start = Pattern.compile(Pattern.quote(topic) + "\\s+0\\s+0\\b").matcher(again.out());
    assertTrue(start.find(), again::toString);
    Result deleted = ok(SHARE_GROUPS, "--delete", "--group", group);
    assertTrue(deleted.out().contains(group), deleted::toString);
  }

  @Test
  void kafkaAcls() throws Exception {
    String topic = Clients.unique("tool-acl");
    ok(ACLS, "--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic);
    Eventually.until(
        () -> ok(ACLS, "--list", "--topic", topic).out().contains("principal=User:alice, host=*, operation=READ, permissionType=ALLOW"),
        () -> "the ACL is listed");
    ok(ACLS, "--remove", "--force", "--allow-principal", "User:alice", "--operation", "Read", "--topic", topic);
    Eventually.until(
        () -> !ok(ACLS, "--list", "--topic", topic).out().contains("User:alice"), () -> "the ACL is removed");
  }

  @Test
  void kafkaTransactions() throws Exception {
    String topic = clients.createTopic("tool-txn", 1);
    String id = Clients.unique("tool-txn-id");
    KafkaProducer<String, String> producer =
        clients.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id));
    producer.initTransactions();
    producer.beginTransaction();
    producer.send(new ProducerRecord<>(topic, 0, "k", "v")).get();

    Result listed = ok(TRANSACTIONS, "list");
    assertTrue(Pattern.compile(Pattern.quote(id) + "\\s+\\d+\\s+\\d+\\s+Ongoing").matcher(listed.out()).find(),
        listed::toString);
    Result described = ok(TRANSACTIONS, "describe", "--transactional-id", id);
    assertTrue(described.out().contains("Ongoing"), described::toString);
    assertTrue(described.out().contains(topic + "-0"), described::toString);
    Result producers = ok(TRANSACTIONS, "describe-producers", "--topic", topic, "--partition", "0");
    assertTrue(producers.out().lines().count() >= 2, producers::toString);
    producer.commitTransaction();
  }

  /**
   * kafka-transactions abort: an open transaction found by the offset it began at is aborted
   * (Admin abortTransaction, WriteTxnMarkers), so read_committed readers move past it.
   */
  @Test
  void kafkaTransactionsAbort() throws Exception {
    String topic = clients.createTopic("tool-abort", 1);
    produce(topic, 3);
    KafkaProducer<String, String> producer =
        clients.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, Clients.unique("tool-abort-id")));
    producer.initTransactions();
    producer.beginTransaction();
    producer.send(new ProducerRecord<>(topic, 0, "k", "left open")).get();
    KafkaConsumer<String, String> reader =
        clients.consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"));
    TopicPartition partition = tp(topic, 0);
    assertEquals(3L, reader.endOffsets(List.of(partition)).get(partition), "the open transaction holds the LSO");

    Result aborted = ok(TRANSACTIONS, "abort", "--topic", topic, "--partition", "0", "--start-offset", "3");
    // The abort marker takes offset 4: the LSO moves past it, and nothing of it is read.
    Eventually.until(() -> reader.endOffsets(List.of(partition)).get(partition) == 5L, aborted::toString);
    reader.assign(List.of(partition));
    List<String> values =
        Clients.poll(reader, 4, Duration.ofSeconds(3)).stream().map(ConsumerRecord::value).toList();
    assertEquals(List.of("v0", "v1", "v2"), values);
    producer.close(Duration.ZERO);
  }

  @Test
  void kafkaGetOffsetsAndDeleteRecords() throws Exception {
    String topic = clients.createTopic("tool-offsets", 1);
    produce(topic, 10);
    assertEquals(topic + ":0:10", ok(GET_OFFSETS, "--topic", topic).out().strip());
    assertEquals(topic + ":0:0", ok(GET_OFFSETS, "--topic", topic, "--time", "-2").out().strip());

    Path json = Files.createTempFile("delete-records", ".json");
    Files.writeString(json, "{\"partitions\":[{\"topic\":\"%s\",\"partition\":0,\"offset\":3}],\"version\":1}".formatted(topic));
    Result deleted = ok(DELETE_RECORDS, "--offset-json-file", json.toString());
    assertTrue(deleted.out().contains("low_watermark: 3"), deleted::toString);
    assertEquals(topic + ":0:3", ok(GET_OFFSETS, "--topic", topic, "--time", "-2").out().strip());
  }

  @Test
  void kafkaProducerAndConsumerPerfTests() throws Exception {
    String topic = clients.createTopic("tool-perf", 1);
    Result produced =
        Tool.run(PRODUCER_PERF, "--topic", topic, "--num-records", "5000", "--record-size", "100",
            "--throughput", "-1", "--producer-props", "bootstrap.servers=" + broker.bootstrap(), "acks=all");
    assertEquals(0, produced.status(), produced::toString);
    assertTrue(produced.out().contains("5000 records sent"), produced::toString);
    Result consumed = ok(CONSUMER_PERF, "--topic", topic, "--messages", "5000", "--timeout", "30000");
    // start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, ...
    String data = consumed.out().lines().filter(l -> l.matches("^\\d{4}-.*")).findFirst().orElseThrow(
        () -> new AssertionError(consumed.toString()));
    assertEquals("5000", data.split(",\\s*")[4].strip(), consumed::toString);
  }

  @Test
  void kafkaFeatures() throws Exception {
    Result described = ok(FEATURES, "describe");
    assertTrue(
        Pattern.compile("Feature: group.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: 1\\s+FinalizedVersionLevel: 1")
            .matcher(described.out()).find(),
        described::toString);
    assertTrue(
        Pattern.compile("Feature: transaction.version\\s+SupportedMinVersion: 0\\s+SupportedMaxVersion: \\d+\\s+FinalizedVersionLevel: 2")
            .matcher(described.out()).find(),
        described::toString);
  }

  /**
   * kafka-features downgrade and upgrade (UpdateFeatures): a dry run changes nothing, a level
   * the broker does not serve is refused, and the finalized level moves both ways.
   */
  @Test
  void kafkaFeaturesDowngradeAndUpgrade() throws Exception {
    try {
      ok(FEATURES, "downgrade", "--feature", "transaction.version=1", "--dry-run");
      assertEquals(2, finalizedLevel("transaction.version"), "a dry run changes nothing");
      ok(FEATURES, "downgrade", "--feature", "transaction.version=1");
      Eventually.until(() -> finalizedLevel("transaction.version") == 1, () -> "downgraded to 1");
      Result beyond = tool(FEATURES, "upgrade", "--feature", "transaction.version=3");
      assertTrue(beyond.status() != 0 && beyond.out().contains("only supports versions 0-2"), beyond::toString);
    } finally {
      ok(FEATURES, "upgrade", "--feature", "transaction.version=2");
      Eventually.until(() -> finalizedLevel("transaction.version") == 2, () -> "upgraded to 2");
    }
  }

  private int finalizedLevel(String feature) throws Exception {
    Result described = ok(FEATURES, "describe");
    Matcher level =
        Pattern.compile("Feature: " + Pattern.quote(feature) + "\\s.*?FinalizedVersionLevel: (\\d+)")
            .matcher(described.out());
    assertTrue(level.find(), described::toString);
    return Integer.parseInt(level.group(1));
  }

  /**
   * kafka-log-dirs: each broker lists one log dir (Shoal's stands for its object store) with
   * each partition's size, which grows as records are written.
   */
  @Test
  void kafkaLogDirs() throws Exception {
    String topic = clients.createTopic("log-dirs", 1);
    produce(topic, 200);
    long first = partitionSize(topic);
    assertTrue(first >= 200 * 4, "a written partition has a size: " + first);
    produce(topic, 200);
    long second = partitionSize(topic);
    assertTrue(second > first, "the size grows with writes: " + first + " then " + second);
  }

  /**
   * kafka-delegation-tokens, logged in as alice on the SASL listener: creates a token bob may
   * renew, describes it, and expires it at once, after which it is no longer described.
   */
  @Test
  void kafkaDelegationTokens() throws Exception {
    Path config = Files.createTempFile("token-tool", ".properties");
    Files.writeString(
        config,
        """
        security.protocol=SASL_PLAINTEXT
        sasl.mechanism=PLAIN
        sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
          username="%s" password="%s";
        """
            .formatted(ALICE, ALICE_PASSWORD));
    String[] login = {"--bootstrap-server", broker.saslBootstrap(), "--command-config", config.toString()};
    Result created = tokens(login, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob");
    Matcher id = Pattern.compile("Created delegation token with tokenId : (\\S+)").matcher(created.out());
    assertTrue(id.find(), created::toString);
    String tokenId = id.group(1);
    Matcher row = Pattern.compile(Pattern.quote(tokenId) + "\\s+(\\S+)\\s+User:alice\\s+User:alice\\s+\\[User:bob\\]")
        .matcher(created.out());
    assertTrue(row.find(), created::toString);
    String hmac = row.group(1);
    Eventually.until(() -> tokens(login, "--describe", "--owner-principal", "User:alice").out().contains(tokenId), () -> "the token is described");
    tokens(login, "--expire", "--hmac", hmac, "--expiry-time-period", "-1");
    Eventually.until(() -> !tokens(login, "--describe", "--owner-principal", "User:alice").out().contains(tokenId), () -> "the token is gone");
  }

  private static Result tokens(String[] login, String... args) throws Exception {
    String[] all = new String[login.length + args.length];
    System.arraycopy(login, 0, all, 0, login.length);
    System.arraycopy(args, 0, all, login.length, args.length);
    Result result = Tool.run(TOKENS, all);
    assertEquals(0, result.status(), result::toString);
    return result;
  }

  private long partitionSize(String topic) throws Exception {
    Result described = ok(LOG_DIRS, "--describe", "--topic-list", topic);
    assertTrue(described.out().contains("\"logDir\""), described::toString);
    Matcher size = Pattern.compile("\"partition\":\"" + Pattern.quote(topic) + "-0\",\"size\":(\\d+)")
        .matcher(described.out());
    assertTrue(size.find(), described::toString);
    return Long.parseLong(size.group(1));
  }
}
