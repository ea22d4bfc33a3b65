package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.tp;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Brokers;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.CuttingProxy;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.junit.jupiter.api.Test;

/**
 * The idempotent producer under retries: a broker of its own advertises a proxy that cuts
 * connections mid-answer, so requests the broker has already written are sent again; each
 * record must still be stored once, in order.
 */
class IdempotentRetriesTest extends BrokerTest {
  private static final int PARTITIONS = 3;
  private static final int RECORDS = 20_000;

  @Test
  void retriedBatchesAreStoredOnceInOrder() throws Exception {
    CuttingProxy[] proxy = new CuttingProxy[1];
    try (Broker own =
            Brokers.startOwn(
                kind,
                "retries",
                b -> {
                  try {
                    proxy[0] = new CuttingProxy(b.plaintextPort());
                  } catch (Exception e) {
                    throw new IllegalStateException(e);
                  }
                  b.advertisePlaintextAt(proxy[0].port());
                });
        CuttingProxy cutting = proxy[0];
        Clients ownClients = new Clients(own)) {
      String topic = ownClients.createTopic("retried", PARTITIONS);
      KafkaProducer<String, String> producer =
          ownClients.producer(
              Map.of(
                  ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true",
                  ProducerConfig.ACKS_CONFIG, "all",
                  ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "5",
                  ProducerConfig.BATCH_SIZE_CONFIG, "1024",
                  ProducerConfig.LINGER_MS_CONFIG, "0",
                  ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "120000"));
      producer.partitionsFor(topic);
      cutting.cutting(true);
      String padding = "x".repeat(100);
      for (int i = 0; i < RECORDS; i++) {
        producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, i + " " + padding));
      }
      producer.flush();
      cutting.cutting(false);
      double retries = metric(producer, "record-retry-total");
      System.out.printf("%s: %d connections cut, %.0f records retried%n", kind, cutting.cuts(), retries);
      assertTrue(cutting.cuts() >= 3, () -> "connections cut: " + cutting.cuts());
      assertTrue(retries > 0, "the producer retried");

      KafkaConsumer<String, String> consumer = ownClients.consumer(null, Map.of());
      consumer.assign(List.of(tp(topic, 0), tp(topic, 1), tp(topic, 2)));
      // Every record (through the proxy, on a loaded machine this can take a while), then a
      // moment more for any stored twice.
      List<ConsumerRecord<String, String>> records = Clients.poll(consumer, RECORDS, Duration.ofSeconds(60));
      records.addAll(Clients.poll(consumer, 1, Duration.ofSeconds(2)));
      assertEquals(RECORDS, records.size(), "each record once");
      Map<Integer, Integer> next = new HashMap<>(Map.of(0, 0, 1, 1, 2, 2));
      for (ConsumerRecord<String, String> record : records) {
        int expected = next.get(record.partition());
        assertEquals(expected, Integer.parseInt(record.value().split(" ")[0]), "in send order");
        next.put(record.partition(), expected + PARTITIONS);
      }
    }
  }

  private static double metric(KafkaProducer<?, ?> producer, String name) {
    for (Map.Entry<MetricName, ? extends Metric> entry : producer.metrics().entrySet()) {
      if (entry.getKey().name().equals(name) && entry.getKey().group().equals("producer-metrics")) {
        return ((Number) entry.getValue().metricValue()).doubleValue();
      }
    }
    throw new AssertionError("no producer metric " + name);
  }
}
