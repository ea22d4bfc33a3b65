package dev.shoal.compat.streams;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Brokers;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import dev.shoal.compat.harness.Tool;
import dev.shoal.compat.streams.StreamsInstance.Topics;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.LongStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Kafka Streams on the broker: a stateful exactly-once application (repartition, a persistent
 * count with its compacted changelog, a table join) in JVMs of its own, killed with SIGKILL
 * under a steady producer. Each page's committed outputs must be exactly 1, 2, ..., n: a gap is
 * a lost click, a repeat a duplicate from a committed transaction.
 */
class StreamsTest extends BrokerTest {
  private static final int PARTITIONS = 3;
  /** Two sub-topologies (re-key, then count and join) of three partitions each. */
  private static final int TASKS = 2 * PARTITIONS;
  private static final int CLICKS_PER_SECOND = 200;
  /** Kill rounds: three in CI; SHOAL_STREAMS_KILLS=10 scripts/java_tests.sh -Dtest=StreamsTest for more. */
  private static final int KILLS = Integer.parseInt(System.getenv().getOrDefault("SHOAL_STREAMS_KILLS", "3"));
  private static final Duration SETTLE = Duration.ofSeconds(120);

  private final List<StreamsInstance> instances = new java.util.ArrayList<>();

  @AfterEach
  void stopInstances() throws Exception {
    for (StreamsInstance instance : instances) {
      instance.close();
    }
  }

  @Test
  void exactlyOnceCountsSurviveKillsAndALostStateDirectory() throws Exception {
    Topics topics = topics();
    StreamsInstance app = instance("app", Clients.unique("counts"), topics, List.of());
    app.start();
    awaitRunning(app);
    ClickProducer clicks = new ClickProducer(clients, topics.clicks(), CLICKS_PER_SECOND);
    clicks.start();
    for (int round = 1; round <= KILLS; round++) {
      awaitProgress(topics, app);
      app.kill();
      // The second restart finds no local state: the store comes back from its changelog.
      if (round == 2) {
        app.deleteState();
      }
      app.start();
      awaitRunning(app);
    }
    awaitProgress(topics, app);
    Map<String, Long> expected = clicks.stop();
    PageCountsOutput output = settled(topics, expected, app);
    assertExactlyOnce(output, expected);
    assertEquals(categories(), output.lastCategories(), "the join with the pages table");
    // Interactive queries answer what the output topic says.
    for (var page : expected.entrySet()) {
      assertEquals(page.getValue(), app.count(page.getKey()), "the store's count of " + page.getKey());
    }
  }

  @Test
  void aSecondInstanceTakesOverTheTasksOfOneKilled() throws Exception {
    secondInstanceTakesOver(Clients.unique("shared"), List.of("standbys=1"));
  }

  /**
   * Two instances of `application` with a standby each share the tasks; one is killed with
   * SIGKILL and the survivor takes its tasks once its session ends; output exactly once.
   */
  private void secondInstanceTakesOver(String application, List<String> extra) throws Exception {
    Topics topics = topics();
    StreamsInstance a = instance("a", application, topics, extra);
    StreamsInstance b = instance("b", application, topics, extra);
    a.start();
    b.start();
    Eventually.until(
        () -> a.running() && b.running() && a.activeTasks() > 0 && b.activeTasks() > 0
            && a.activeTasks() + b.activeTasks() == TASKS && a.standbyTasks() + b.standbyTasks() > 0,
        SETTLE,
        () -> "the instances share the tasks, with standbys: " + states(a, b));
    ClickProducer clicks = new ClickProducer(clients, topics.clicks(), CLICKS_PER_SECOND);
    clicks.start();
    awaitProgress(topics, a, b);
    b.kill();
    Eventually.until(
        () -> a.running() && a.activeTasks() == TASKS,
        SETTLE,
        () -> "the survivor holds every task: " + states(a, b));
    awaitProgress(topics, a);
    Map<String, Long> expected = clicks.stop();
    assertExactlyOnce(settled(topics, expected, a), expected);
  }

  /**
   * KIP-1071's streams group protocol, which Streams 4.4 uses when asked to (its default is
   * classic): the broker keeps the topology, creates the repartition and changelog topics and
   * assigns the tasks. Output exactly once, as on the classic protocol.
   */
  @Test
  void theStreamsGroupProtocol() throws Exception {
    Topics topics = topics();
    StreamsInstance app = instance("app", Clients.unique("protocol"), topics, List.of("protocol=streams"));
    app.start();
    awaitRunning(app);
    ClickProducer clicks = new ClickProducer(clients, topics.clicks(), CLICKS_PER_SECOND);
    clicks.start();
    awaitProgress(topics, app);
    Map<String, Long> expected = clicks.stop();
    assertExactlyOnce(settled(topics, expected, app), expected);
  }

  /**
   * Two instances of one application on the streams protocol with a standby each: the broker
   * spreads the tasks, one instance is killed with SIGKILL, and the survivor takes its tasks
   * once its session ends; output exactly once.
   */
  @Test
  void onTheStreamsProtocolASecondInstanceTakesOverTheTasksOfOneKilled() throws Exception {
    String application = Clients.unique("streams-shared");
    // On the streams protocol the broker decides the standbys, by the group's config.
    Admin admin = clients.admin();
    ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, application);
    AlterConfigOp standbys =
        new AlterConfigOp(new ConfigEntry("streams.num.standby.replicas", "1"), AlterConfigOp.OpType.SET);
    admin.incrementalAlterConfigs(Map.of(group, List.of(standbys))).all().get();
    secondInstanceTakesOver(application, List.of("protocol=streams"));
  }

  /**
   * A streams group outlives its broker: the broker is killed with SIGKILL and started again
   * under a steady producer, and the application goes on where it was (on Shoal the group is
   * read back from the coordinator's log); output exactly once.
   */
  @Test
  void onTheStreamsProtocolTheGroupOutlivesAKillOfTheBroker() throws Exception {
    // This test's own broker, which it kills: the helpers below work on `broker` and
    // `clients`, which point at it until the test ends.
    Broker shared = broker;
    Clients sharedClients = clients;
    try (Broker own = Brokers.startOwn(kind, Clients.unique("streams-restart"), b -> {});
        Clients ownClients = new Clients(own)) {
      broker = own;
      clients = ownClients;
      Topics topics = topics();
      String application = Clients.unique("outlives");
      // A crash of Kafka's broker can end a transaction's commit with InvalidTxnStateException,
      // which Streams takes as fatal to the thread: the application replaces the thread.
      List<String> extra = List.of("protocol=streams", "on_error=replace");
      StreamsInstance app = instance("app", application, topics, extra);
      app.start();
      awaitRunning(app);
      ClickProducer clicks = new ClickProducer(clients, topics.clicks(), CLICKS_PER_SECOND);
      clicks.start();
      awaitProgress(topics, app);
      int epochBefore = groupEpoch(application);
      own.kill();
      own.start();
      awaitProgress(topics, app);
      Map<String, Long> expected = clicks.stop();
      assertExactlyOnce(settled(topics, expected, app), expected);
      // The group was read back as it was: no member rejoined, nothing was reassigned.
      assertEquals(epochBefore, groupEpoch(application), "the group epoch after the broker's restart");
    } finally {
      broker = shared;
      clients = sharedClients;
    }
  }

  /**
   * Kafka's `kafka-streams-groups` against a streams group: listed, described with its state,
   * members and their tasks, and its offsets with lag.
   */
  @Test
  void theStreamsGroupsToolListsAndDescribesTheGroup() throws Exception {
    Topics topics = topics();
    String application = Clients.unique("tool");
    StreamsInstance app = instance("app", application, topics, List.of("protocol=streams"));
    app.start();
    awaitRunning(app);
    ClickProducer clicks = new ClickProducer(clients, topics.clicks(), CLICKS_PER_SECOND);
    clicks.start();
    awaitProgress(topics, app);
    clicks.stop();
    Tool.Result listed = streamsGroups("--list");
    assertTrue(listed.out().lines().anyMatch(line -> line.startsWith(application)), listed::toString);
    Eventually.until(
        () -> streamsGroups("--describe", "--group", application, "--state").out().contains("Stable"),
        SETTLE,
        () -> "the group is stable: " + safely(() -> streamsGroups("--describe", "--group", application, "--state")));
    Tool.Result members = streamsGroups("--describe", "--group", application, "--members");
    // One member (one stream thread) with the six active tasks of the two subtopologies.
    assertEquals(1, members.out().lines().filter(line -> line.startsWith(application)).count(), members::toString);
    assertTrue(members.out().contains("0:[0,1,2]") && members.out().contains("1:[0,1,2]"), members::toString);
    Tool.Result offsets = streamsGroups("--describe", "--group", application, "--offsets");
    assertTrue(offsets.out().contains(topics.clicks()), offsets::toString);
  }

  private int groupEpoch(String application) throws Exception {
    return clients.admin().describeStreamsGroups(List.of(application)).all().get().get(application).groupEpoch();
  }

  private Tool.Result streamsGroups(String... args) throws Exception {
    String[] all = new String[args.length + 2];
    all[0] = "--bootstrap-server";
    all[1] = broker.bootstrap();
    System.arraycopy(args, 0, all, 2, args.length);
    Tool.Result result = Tool.run("org.apache.kafka.tools.streams.StreamsGroupCommand", all);
    assertEquals(0, result.status(), result::toString);
    return result;
  }

  private static String safely(java.util.concurrent.Callable<Object> what) {
    try {
      return String.valueOf(what.call());
    } catch (Exception e) {
      return e.toString();
    }
  }

  private Topics topics() throws Exception {
    Topics topics =
        new Topics(
            clients.createTopic("clicks", PARTITIONS),
            clients.createTopic("pages", PARTITIONS, Map.of("cleanup.policy", "compact")),
            clients.createTopic("page-counts", PARTITIONS));
    try (KafkaProducer<String, String> producer = clients.producer(Map.of())) {
      categories().forEach((page, category) -> producer.send(new ProducerRecord<>(topics.pages(), page, category)));
    }
    return topics;
  }

  /** The pages table: page-i is in category cat-(i % 3). */
  private static Map<String, String> categories() {
    Map<String, String> categories = new TreeMap<>();
    for (int i = 0; i < ClickProducer.PAGES; i++) {
      categories.put("page-" + i, "cat-" + (i % 3));
    }
    return categories;
  }

  private StreamsInstance instance(String name, String application, Topics topics, List<String> extra) {
    Path dir = Path.of(System.getProperty("user.dir"), "target", "streams", kind, application);
    StreamsInstance instance = new StreamsInstance(broker, dir, name, application, topics, extra);
    instances.add(instance);
    return instance;
  }

  private static void awaitRunning(StreamsInstance app) throws InterruptedException {
    Eventually.until(app::running, SETTLE, () -> "the application runs: " + app.logTail());
  }

  /** Waits until the committed output has grown by a few hundred records. */
  private void awaitProgress(Topics topics, StreamsInstance... apps) throws InterruptedException {
    int before = PageCountsOutput.read(clients, topics.output(), PARTITIONS).records();
    Eventually.until(
        () -> PageCountsOutput.read(clients, topics.output(), PARTITIONS).records() >= before + 300,
        SETTLE,
        () -> "the output grows past " + (before + 300) + ": " + states(apps));
  }

  /** The output once every acknowledged click is counted in it. */
  private PageCountsOutput settled(Topics topics, Map<String, Long> expected, StreamsInstance... apps)
      throws InterruptedException {
    Eventually.until(
        () -> PageCountsOutput.read(clients, topics.output(), PARTITIONS).last().equals(expected),
        SETTLE,
        () -> "the last counts reach " + expected + ", are "
            + PageCountsOutput.read(clients, topics.output(), PARTITIONS).last() + ": " + states(apps));
    return PageCountsOutput.read(clients, topics.output(), PARTITIONS);
  }

  private static void assertExactlyOnce(PageCountsOutput output, Map<String, Long> expected) {
    assertEquals(expected.keySet(), output.counts().keySet());
    output.counts().forEach((page, counts) -> {
      List<Long> once = LongStream.rangeClosed(1, expected.get(page)).boxed().toList();
      assertTrue(counts.equals(once), () -> page + ": committed counts are not 1.." + expected.get(page)
          + " once each: " + firstDifference(counts, once));
    });
  }

  private static String firstDifference(List<Long> counts, List<Long> once) {
    for (int i = 0; i < Math.min(counts.size(), once.size()); i++) {
      if (!counts.get(i).equals(once.get(i))) {
        return "at index " + i + " found " + counts.subList(i, Math.min(counts.size(), i + 5)) + " of " + counts.size();
      }
    }
    return counts.size() + " counts for " + once.size() + " clicks";
  }

  private static String states(StreamsInstance... apps) {
    StringBuilder text = new StringBuilder();
    for (StreamsInstance app : apps) {
      String state;
      try {
        state = app.state();
      } catch (Exception e) {
        state = e.toString();
      }
      text.append("\n").append(state).append("\n").append(app.logTail());
    }
    return text.toString();
  }
}
