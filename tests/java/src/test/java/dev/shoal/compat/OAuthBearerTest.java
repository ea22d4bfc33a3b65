package dev.shoal.compat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.shoal.compat.harness.Broker;
import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Brokers;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.OAuthBearerSettings;
import java.io.IOException;
import java.math.BigInteger;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.PrivateKey;
import java.security.Signature;
import java.security.interfaces.RSAPublicKey;
import java.time.Duration;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.junit.jupiter.api.Test;

/**
 * SASL/OAUTHBEARER with the Java client's own login callback handler: it asks a local token
 * endpoint for tokens with the client-credentials grant, and the broker checks them against
 * the provider's JWKS (Apache Kafka with its KIP-768 validator, configured alike). A token
 * signed with a key the JWKS does not hold is refused.
 */
class OAuthBearerTest extends BrokerTest {
  private static final String ISSUER = "https://idp.shoal.test/realms/kafka";
  private static final String AUDIENCE = "kafka-broker";
  private static final String CLIENT_ID = "svc-java";
  private static final String CLIENT_SECRET = "java-secret";
  private static final int RECORDS = 200;

  @Test
  void clientCredentialsTokensLogInAndForgedOnesAreRefused() throws Exception {
    Path dir = Files.createTempDirectory("oauth-" + kind);
    try (IdentityProvider idp = new IdentityProvider(dir)) {
      // The Java client reads tokens only from URLs this system property allows.
      System.setProperty(
          "org.apache.kafka.sasl.oauthbearer.allowed.urls",
          idp.url("/token") + "," + idp.url("/forged-token"));
      OAuthBearerSettings settings = new OAuthBearerSettings(idp.jwksFile, ISSUER, AUDIENCE);
      try (Broker own = Brokers.startOwn(kind, "oauthbearer", b -> b.acceptOAuthBearer(settings));
          Clients ownClients = new Clients(own)) {
        String topic = ownClients.createTopic("oauth", 1);
        Properties login = oauthLogin(own, idp.url("/token"));
        KafkaProducer<String, String> producer =
            ownClients.producer(login, Map.of(ProducerConfig.ACKS_CONFIG, "all"));
        for (int i = 0; i < RECORDS; i++) {
          producer.send(new ProducerRecord<>(topic, "k" + i, "v" + i));
        }
        producer.flush();
        KafkaConsumer<String, String> consumer =
            ownClients.track(
                new KafkaConsumer<>(
                    consumerSettings(login, Clients.unique("oauth-readers"))));
        consumer.subscribe(List.of(topic));
        List<ConsumerRecord<String, String>> records =
            Clients.poll(consumer, RECORDS, Duration.ofSeconds(60));
        assertEquals(RECORDS, records.size(), "every record read with a token's login");
        assertEquals("v0", records.get(0).value());
        assertTrue(idp.issued.get() >= 1, "the client asked the token endpoint");

        Properties forged = oauthLogin(own, idp.url("/forged-token"));
        forged.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        forged.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, "10000");
        try (Admin admin = Admin.create(forged)) {
          ExecutionException refused =
              assertThrows(
                  ExecutionException.class,
                  () -> admin.describeCluster().nodes().get(15, TimeUnit.SECONDS));
          assertInstanceOf(SaslAuthenticationException.class, refused.getCause());
        }
      }
    }
  }

  /** Settings that log in on the SASL listener with tokens from `tokenUrl`. */
  private static Properties oauthLogin(Broker broker, String tokenUrl) {
    Properties props = new Properties();
    props.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, broker.saslBootstrap());
    props.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
    props.put(SaslConfigs.SASL_MECHANISM, "OAUTHBEARER");
    props.put(
        SaslConfigs.SASL_LOGIN_CALLBACK_HANDLER_CLASS,
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler");
    props.put(SaslConfigs.SASL_OAUTHBEARER_TOKEN_ENDPOINT_URL, tokenUrl);
    props.put(
        SaslConfigs.SASL_JAAS_CONFIG,
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required"
            + " clientId=\"%s\" clientSecret=\"%s\" scope=\"kafka\";"
                .formatted(CLIENT_ID, CLIENT_SECRET));
    return props;
  }

  private static Properties consumerSettings(Properties login, String group) {
    Properties props = new Properties();
    props.putAll(login);
    props.put("group.id", group);
    props.put("auto.offset.reset", "earliest");
    props.put(
        "key.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    props.put(
        "value.deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
    return props;
  }

  /**
   * A local identity provider: an RSA signing key whose public half is in the JWKS file the
   * broker reads, and a client-credentials token endpoint on loopback. /forged-token signs
   * with another key under the same key id.
   */
  static final class IdentityProvider implements AutoCloseable {
    final Path jwksFile;
    final AtomicInteger issued = new AtomicInteger();
    private final KeyPair signing;
    private final KeyPair stranger;
    private final HttpServer server;

    IdentityProvider(Path dir) throws Exception {
      KeyPairGenerator generator = KeyPairGenerator.getInstance("RSA");
      generator.initialize(2048);
      signing = generator.generateKeyPair();
      stranger = generator.generateKeyPair();
      RSAPublicKey key = (RSAPublicKey) signing.getPublic();
      jwksFile = dir.resolve("jwks.json");
      Files.writeString(
          jwksFile,
          """
          {"keys":[{"kty":"RSA","kid":"rsa-1","use":"sig","alg":"RS256","n":"%s","e":"%s"}]}
          """
              .formatted(unsigned(key.getModulus()), unsigned(key.getPublicExponent())));
      server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
      server.createContext("/token", exchange -> answer(exchange, signing.getPrivate()));
      server.createContext("/forged-token", exchange -> answer(exchange, stranger.getPrivate()));
      server.start();
    }

    String url(String path) {
      return "http://127.0.0.1:" + server.getAddress().getPort() + path;
    }

    private void answer(HttpExchange exchange, PrivateKey key) throws IOException {
      String expected =
          "Basic "
              + Base64.getEncoder()
                  .encodeToString(
                      (CLIENT_ID + ":" + CLIENT_SECRET).getBytes(StandardCharsets.UTF_8));
      String form = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
      boolean allowed =
          expected.equals(exchange.getRequestHeaders().getFirst("Authorization"))
              && form.contains("grant_type=client_credentials");
      byte[] body;
      int status;
      try {
        body =
            allowed
                ? """
                  {"access_token":"%s","token_type":"Bearer","expires_in":300}
                  """
                    .formatted(token(key))
                    .getBytes(StandardCharsets.UTF_8)
                : "{\"error\":\"invalid_client\"}".getBytes(StandardCharsets.UTF_8);
        status = allowed ? 200 : 401;
      } catch (Exception e) {
        throw new IOException(e);
      }
      if (allowed) {
        issued.incrementAndGet();
      }
      exchange.getResponseHeaders().add("Content-Type", "application/json");
      exchange.sendResponseHeaders(status, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    }

    /** An RS256 JWT for the client, valid for five minutes. */
    private String token(PrivateKey key) throws Exception {
      long now = System.currentTimeMillis() / 1000;
      String header = "{\"alg\":\"RS256\",\"typ\":\"JWT\",\"kid\":\"rsa-1\"}";
      String claims =
          """
          {"sub":"%s","iss":"%s","aud":"%s","iat":%d,"exp":%d,"scope":"kafka"}"""
              .formatted(CLIENT_ID, ISSUER, AUDIENCE, now, now + 300);
      String signed = base64Url(header.getBytes(StandardCharsets.UTF_8)) + "."
          + base64Url(claims.getBytes(StandardCharsets.UTF_8));
      Signature signature = Signature.getInstance("SHA256withRSA");
      signature.initSign(key);
      signature.update(signed.getBytes(StandardCharsets.US_ASCII));
      return signed + "." + base64Url(signature.sign());
    }

    private static String base64Url(byte[] bytes) {
      return Base64.getUrlEncoder().withoutPadding().encodeToString(bytes);
    }

    /** A JWK number: big-endian bytes without the sign byte. */
    private static String unsigned(BigInteger number) {
      byte[] bytes = number.toByteArray();
      if (bytes.length > 1 && bytes[0] == 0) {
        bytes = Arrays.copyOfRange(bytes, 1, bytes.length);
      }
      return base64Url(bytes);
    }

    @Override
    public void close() {
      server.stop(0);
    }
  }
}
