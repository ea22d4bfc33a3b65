package dev.shoal.compat.harness;

import static org.junit.jupiter.api.Assertions.assertFalse;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Every Java test class extends this: its tests run once against each broker kind (Apache
 * Kafka, then Shoal), with the broker's name in the test's display name. Clients made through
 * {@link #clients} are closed after each test; a failure names the broker ({@link NamesTheBroker}).
 */
@ParameterizedClass(name = "{0}")
@ExtendWith(NamesTheBroker.class)
@MethodSource("dev.shoal.compat.harness.Brokers#kinds")
public abstract class BrokerTest {
  @Parameter protected String kind;

  protected Broker broker;
  protected Clients clients;

  @BeforeEach
  void connect() {
    broker = Brokers.get(kind);
    clients = new Clients(broker);
  }

  /** Clients closed; a Shoal panic fails the test that was running when it happened. */
  @AfterEach
  void closeAndCheck() throws Exception {
    clients.close();
    if (broker.isShoal()) {
      assertFalse(broker.log().contains("panicked"), () -> "shoal panicked:\n" + broker.logTail());
    }
  }

  protected boolean onShoal() {
    return broker.isShoal();
  }
}
