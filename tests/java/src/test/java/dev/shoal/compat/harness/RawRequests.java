package dev.shoal.compat.harness;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceRequestData.PartitionProduceData;
import org.apache.kafka.common.message.ProduceRequestData.TopicProduceData;
import org.apache.kafka.common.message.ProduceRequestData.TopicProduceDataCollection;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestHeader;

/**
 * One request sent as bytes on a new connection, encoded by Kafka's own request classes: what a
 * test needs when the clients would never send it (a write the producer has long given up on).
 */
public final class RawRequests {
  private static final int TIMEOUT_MS = 30_000;

  private RawRequests() {}

  /** The answer to `request`, sent at `version` to the broker at `bootstrap` (host:port). */
  public static AbstractResponse send(String bootstrap, AbstractRequest.Builder<?> request, short version)
      throws IOException {
    RequestHeader header = new RequestHeader(request.apiKey(), version, "raw-request", 1);
    ByteBuffer body = request.build(version).serializeWithHeader(header);
    String[] hostPort = bootstrap.split(":");
    try (Socket socket = new Socket()) {
      socket.connect(new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1])), TIMEOUT_MS);
      socket.setSoTimeout(TIMEOUT_MS);
      DataOutputStream out = new DataOutputStream(socket.getOutputStream());
      out.writeInt(body.remaining());
      out.write(body.array(), body.arrayOffset() + body.position(), body.remaining());
      out.flush();
      DataInputStream in = new DataInputStream(socket.getInputStream());
      byte[] answer = new byte[in.readInt()];
      in.readFully(answer);
      return AbstractResponse.parseResponse(ByteBuffer.wrap(answer), header);
    }
  }

  /** Produce (acks=all) of `records` to one partition, by topic name; the partition's error. */
  public static Errors produce(
      String bootstrap, String transactionalId, String topic, int partition, MemoryRecords records, short version)
      throws IOException {
    TopicProduceDataCollection topics = new TopicProduceDataCollection();
    topics.add(
        new TopicProduceData()
            .setName(topic)
            .setPartitionData(List.of(new PartitionProduceData().setIndex(partition).setRecords(records))));
    ProduceRequestData data =
        new ProduceRequestData()
            .setAcks((short) -1)
            .setTimeoutMs(TIMEOUT_MS)
            .setTransactionalId(transactionalId)
            .setTopicData(topics);
    ProduceResponse response = (ProduceResponse) send(bootstrap, ProduceRequest.builder(data), version);
    return Errors.forCode(
        response.data().responses().iterator().next().partitionResponses().get(0).errorCode());
  }
}
