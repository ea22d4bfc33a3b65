package dev.shoal.compat.bench;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Records a second through one share consumer (KIP-932) that accepts each record it is handed
 * (`accept`), against one that first renews each record's lock (KIP-1222, `renew`: the record
 * comes back at a later poll, as the same delivery) and accepts it then, as a consumer whose
 * processing outlasts a lock does (scripts/share_renew_bench.py runs it against each broker).
 * The records (100 bytes each, one partition) are produced before the consumer starts; timed
 * from its first poll until every record is accepted. Every client setting at its default but
 * explicit acknowledgement. Prints one JSON line.
 *
 * <p>java -cp ... dev.shoal.compat.bench.ShareRenewBench BOOTSTRAP MODE RECORDS
 */
public final class ShareRenewBench {
  private static final long DEADLINE_MS = 300_000;

  private ShareRenewBench() {}

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    boolean renew = args[1].equals("renew");
    int records = Integer.parseInt(args[2]);
    String run = UUID.randomUUID().toString().substring(0, 8);
    String topic = "renew-" + run;
    String group = "renewers-" + run;
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
      ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
      AlterConfigOp earliest =
          new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
      admin.incrementalAlterConfigs(Map.of(resource, List.of(earliest))).all().get();
    }
    Properties producerProps = new Properties();
    producerProps.put("bootstrap.servers", bootstrap);
    producerProps.put("key.serializer", ByteArraySerializer.class.getName());
    producerProps.put("value.serializer", ByteArraySerializer.class.getName());
    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProps)) {
      byte[] value = new byte[100];
      for (int i = 0; i < records; i++) {
        producer.send(new ProducerRecord<>(topic, 0, null, value));
      }
      producer.flush();
    }
    Properties props = new Properties();
    props.put("bootstrap.servers", bootstrap);
    props.put("group.id", group);
    props.put("key.deserializer", ByteArrayDeserializer.class.getName());
    props.put("value.deserializer", ByteArrayDeserializer.class.getName());
    props.put("share.acknowledgement.mode", "explicit");
    Set<Long> renewed = new HashSet<>();
    Set<Long> accepted = new HashSet<>();
    long polls = 0;
    long started = 0;
    try (KafkaShareConsumer<byte[], byte[]> consumer = new KafkaShareConsumer<>(props)) {
      consumer.subscribe(List.of(topic));
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (accepted.size() < records && System.currentTimeMillis() < deadline) {
        var batch = consumer.poll(java.time.Duration.ofMillis(100));
        if (started == 0 && !batch.isEmpty()) {
          started = System.nanoTime();
        }
        polls++;
        for (ConsumerRecord<byte[], byte[]> record : batch) {
          if (renew && renewed.add(record.offset())) {
            consumer.acknowledge(record, AcknowledgeType.RENEW);
          } else {
            consumer.acknowledge(record, AcknowledgeType.ACCEPT);
            accepted.add(record.offset());
          }
        }
      }
      consumer.commitSync();
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    if (accepted.size() < records) {
      throw new IllegalStateException("accepted " + accepted.size() + " of " + records);
    }
    System.out.printf(
        "{\"mode\": \"%s\", \"records\": %d, \"seconds\": %.3f, \"records_per_s\": %.0f, \"polls\": %d}%n",
        args[1], records, seconds, records / seconds, polls);
  }
}
