package dev.shoal.compat.harness;

import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/** Java clients of one broker, closed together; topic and group names unique to the run. */
public final class Clients implements AutoCloseable {
  public static final Duration TIMEOUT = Duration.ofSeconds(30);

  private final Broker broker;
  private final List<AutoCloseable> made = Collections.synchronizedList(new ArrayList<>());

  public Clients(Broker broker) {
    this.broker = broker;
  }

  /** A name no other test of this run uses ("orders" becomes "orders-1a2b3c4d"). */
  public static String unique(String prefix) {
    return prefix + "-" + UUID.randomUUID().toString().substring(0, 8);
  }

  public Properties base() {
    Properties props = new Properties();
    props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
    return props;
  }

  /** Settings that log in on the SASL_PLAINTEXT listener with PLAIN. */
  public Properties sasl(String user, String password) {
    return sasl("PLAIN", user, password);
  }

  /** Settings that log in on the SASL_PLAINTEXT listener with PLAIN or SCRAM-SHA-256/512. */
  public Properties sasl(String mechanism, String user, String password) {
    String module =
        mechanism.equals("PLAIN")
            ? "org.apache.kafka.common.security.plain.PlainLoginModule"
            : "org.apache.kafka.common.security.scram.ScramLoginModule";
    Properties props = new Properties();
    props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, broker.saslBootstrap());
    props.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
    props.put(SaslConfigs.SASL_MECHANISM, mechanism);
    props.put(
        SaslConfigs.SASL_JAAS_CONFIG,
        "%s required username=\"%s\" password=\"%s\";".formatted(module, user, password));
    return props;
  }

  /**
   * Settings that log in on the SASL_PLAINTEXT listener with a delegation token: SCRAM with the
   * token id as user, its HMAC (base64) as password and the tokenauth extension.
   */
  public Properties delegationToken(String mechanism, String tokenId, String hmacBase64) {
    Properties props = sasl(mechanism, tokenId, hmacBase64);
    props.put(
        SaslConfigs.SASL_JAAS_CONFIG,
        "org.apache.kafka.common.security.scram.ScramLoginModule required"
            + " username=\"%s\" password=\"%s\" tokenauth=\"true\";".formatted(tokenId, hmacBase64));
    return props;
  }

  public <T extends AutoCloseable> T track(T client) {
    made.add(client);
    return client;
  }

  public Admin admin() {
    return admin(base());
  }

  public Admin admin(Properties props) {
    return track(Admin.create(props));
  }

  public KafkaProducer<String, String> producer(Map<String, Object> overrides) {
    return producer(base(), overrides);
  }

  public KafkaProducer<String, String> producer(Properties base, Map<String, Object> overrides) {
    Properties props = new Properties();
    props.putAll(base);
    props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    props.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    props.putAll(overrides);
    return track(new KafkaProducer<>(props));
  }

  /** A consumer reading from the earliest offset; group null for one without a group. */
  public KafkaConsumer<String, String> consumer(String group, Map<String, Object> overrides) {
    return consumer(base(), group, overrides);
  }

  public KafkaConsumer<String, String> consumer(
      Properties base, String group, Map<String, Object> overrides) {
    Properties props = new Properties();
    props.putAll(base);
    props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    if (group != null) {
      props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    }
    props.putAll(overrides);
    return track(new KafkaConsumer<>(props));
  }

  /**
   * Creates a topic and waits until the broker describes a leader for each of its partitions.
   * Apache Kafka answers CreateTopics once its controller committed the topic, before the broker
   * applied it; a produce in that gap gets a retriable error for some batches, and an idempotent
   * producer whose first batch failed that way while a later one succeeded retries it forever
   * with OutOfOrderSequence (KAFKA-14359; seen in CI).
   */
  public String createTopic(String prefix, int partitions, Map<String, String> configs)
      throws ExecutionException, InterruptedException {
    String name = unique(prefix);
    try (Admin admin = Admin.create(base())) {
      admin
          .createTopics(List.of(new NewTopic(name, partitions, (short) 1).configs(configs)))
          .all()
          .get();
      awaitLeaders(admin, name, partitions);
    }
    return name;
  }

  private static void awaitLeaders(Admin admin, String topic, int partitions)
      throws InterruptedException {
    long deadline = System.nanoTime() + TIMEOUT.toNanos();
    while (true) {
      try {
        TopicDescription description =
            admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
        if (description.partitions().size() == partitions
            && description.partitions().stream().allMatch(p -> p.leader() != null && !p.leader().isEmpty())) {
          return;
        }
      } catch (ExecutionException notYetKnown) {
        // The broker has not applied the topic yet: asked again below.
      }
      if (System.nanoTime() > deadline) {
        throw new AssertionError(topic + " has no leader for each partition after " + TIMEOUT);
      }
      Thread.sleep(50);
    }
  }

  public String createTopic(String prefix, int partitions)
      throws ExecutionException, InterruptedException {
    return createTopic(prefix, partitions, Map.of());
  }

  /** Polls until `count` records arrived or the timeout passed; returns what arrived. */
  public static List<ConsumerRecord<String, String>> poll(
      KafkaConsumer<String, String> consumer, int count, Duration timeout) {
    List<ConsumerRecord<String, String>> records = new ArrayList<>();
    long deadline = System.nanoTime() + timeout.toNanos();
    while (records.size() < count && System.nanoTime() < deadline) {
      consumer.poll(Duration.ofMillis(200)).forEach(records::add);
    }
    return records;
  }

  /**
   * Every record of the topic's first `partitions` partitions, read without a group from the
   * start to the end a consumer of `isolation` sees (read_committed: the last stable offset).
   */
  public List<ConsumerRecord<String, String>> readToEnd(String topic, int partitions, String isolation) {
    List<ConsumerRecord<String, String>> records = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer =
        consumer(null, Map.of(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation))) {
      List<TopicPartition> all = new ArrayList<>();
      for (int p = 0; p < partitions; p++) {
        all.add(new TopicPartition(topic, p));
      }
      consumer.assign(all);
      consumer.seekToBeginning(all);
      Map<TopicPartition, Long> ends = consumer.endOffsets(all, TIMEOUT);
      long deadline = System.nanoTime() + TIMEOUT.toNanos();
      while (all.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))) {
        if (System.nanoTime() > deadline) {
          throw new AssertionError(topic + " was not read to its end " + ends + " in " + TIMEOUT);
        }
        consumer.poll(Duration.ofMillis(200)).forEach(records::add);
      }
    }
    return records;
  }

  public static <T> T get(KafkaFuture<T> future) throws Exception {
    return future.get(TIMEOUT.toSeconds(), TimeUnit.SECONDS);
  }

  /** The exception a call failed with (the test fails if it succeeded or timed out). */
  public static Throwable cause(KafkaFuture<?> future) {
    ExecutionException failed = assertThrows(ExecutionException.class, () -> get(future));
    return failed.getCause();
  }

  public static TopicPartition tp(String topic, int partition) {
    return new TopicPartition(topic, partition);
  }

  /** The broker's node id (Kafka's is 1, Shoal's 0). */
  public static int nodeId(Admin admin) throws Exception {
    return get(admin.describeCluster().nodes()).iterator().next().id();
  }

  /**
   * Closes the newest first, as try-with-resources would: what was made later may use what was
   * made before it (a GroupMember's thread polls the consumer tracked just before it), and a
   * consumer closed under a thread still polling it fails that thread.
   */
  @Override
  public void close() {
    synchronized (made) {
      List<AutoCloseable> newestFirst = new ArrayList<>(made);
      Collections.reverse(newestFirst);
      for (AutoCloseable client : newestFirst) {
        try {
          client.close();
        } catch (Exception ignored) {
          // A client that fails to close does not hide the test's own result.
        }
      }
      made.clear();
    }
  }
}
