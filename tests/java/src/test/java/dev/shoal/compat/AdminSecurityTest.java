package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.cause;
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
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.DelegationTokenDisabledException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/** ACLs, SCRAM users, client quotas and delegation tokens through the Admin client. */
class AdminSecurityTest extends BrokerTest {

  @Test
  void aclsCreatedDescribedAndDeleted() throws Exception {
    Admin admin = clients.admin();
    String topic = Clients.unique("acl-topic");
    String prefix = Clients.unique("acl-prefix");
    AclBinding literal =
        new AclBinding(
            new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
            new AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW));
    AclBinding prefixed =
        new AclBinding(
            new ResourcePattern(ResourceType.TOPIC, prefix, PatternType.PREFIXED),
            new AccessControlEntry("User:bob", "*", AclOperation.WRITE, AclPermissionType.DENY));
    get(admin.createAcls(List.of(literal, prefixed)).all());

    AclBindingFilter aliceOnTopic =
        new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.TOPIC, topic, PatternType.LITERAL),
            new AccessControlEntryFilter("User:alice", null, AclOperation.ANY, AclPermissionType.ANY));
    Eventually.until(
        () -> get(admin.describeAcls(aliceOnTopic).values()).equals(List.of(literal)),
        () -> "the literal binding is described");
    // MATCH finds the prefixed binding for a topic under the prefix.
    AclBindingFilter matching =
        new AclBindingFilter(
            new ResourcePatternFilter(ResourceType.TOPIC, prefix + "-orders", PatternType.MATCH),
            AccessControlEntryFilter.ANY);
    Eventually.until(
        () -> get(admin.describeAcls(matching).values()).equals(List.of(prefixed)),
        () -> "the prefixed binding matches a topic under its prefix");

    Collection<AclBinding> deleted =
        get(admin.deleteAcls(List.of(aliceOnTopic, prefixed.toFilter())).all());
    assertEquals(2, deleted.size());
    Eventually.until(
        () -> get(admin.describeAcls(aliceOnTopic).values()).isEmpty(),
        () -> "the binding is gone");
  }

  private Properties scram(String user, String password) {
    return clients.sasl("SCRAM-SHA-256", user, password);
  }

  @Test
  void scramUserLogsInUntilDeleted() throws Exception {
    Admin admin = clients.admin();
    String user = Clients.unique("carol");
    get(
        admin
            .alterUserScramCredentials(
                List.of(
                    new UserScramCredentialUpsertion(
                        user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192), "carol-secret")))
            .all());
    Map<String, UserScramCredentialsDescription> described =
        get(admin.describeUserScramCredentials(List.of(user)).all());
    assertEquals(
        List.of(new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)),
        described.get(user).credentialInfos());

    Eventually.until(
        () -> !get(clients.admin(scram(user, "carol-secret")).describeCluster().nodes()).isEmpty(),
        () -> "the new SCRAM user logs in");
    assertInstanceOf(
        SaslAuthenticationException.class,
        cause(clients.admin(scram(user, "wrong")).describeCluster().nodes()));

    get(
        admin
            .alterUserScramCredentials(
                List.of(new UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_256)))
            .all());
    Eventually.until(
        () -> {
          Throwable refused = cause(clients.admin(scram(user, "carol-secret")).describeCluster().nodes());
          return refused instanceof SaslAuthenticationException;
        },
        () -> "the deleted user is refused");
  }

  /** Sets the user's producer_byte_rate and request_percentage; null removes one. */
  private static void alterQuotas(
      Admin admin, ClientQuotaEntity entity, Double producerByteRate, Double requestPercentage)
      throws Exception {
    List<ClientQuotaAlteration.Op> ops =
        List.of(
            new ClientQuotaAlteration.Op("producer_byte_rate", producerByteRate),
            new ClientQuotaAlteration.Op("request_percentage", requestPercentage));
    get(admin.alterClientQuotas(List.of(new ClientQuotaAlteration(entity, ops))).all());
  }

  @Test
  void clientQuotasAlteredAndDescribed() throws Exception {
    Admin admin = clients.admin();
    String user = Clients.unique("quota-user");
    ClientQuotaEntity entity = new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER, user));
    alterQuotas(admin, entity, 1048576.0, 50.0);
    ClientQuotaFilter filter =
        ClientQuotaFilter.containsOnly(List.of(ClientQuotaFilterComponent.ofEntity(ClientQuotaEntity.USER, user)));
    Eventually.until(
        () ->
            get(admin.describeClientQuotas(filter).entities())
                .equals(Map.of(entity, Map.of("producer_byte_rate", 1048576.0, "request_percentage", 50.0))),
        () -> "the quotas are described");
    alterQuotas(admin, entity, null, null);
    Eventually.until(
        () -> get(admin.describeClientQuotas(filter).entities()).isEmpty(),
        () -> "the quotas are removed");
  }

  /**
   * Delegation tokens: Kafka without delegation.token.secret.key answers
   * DelegationTokenDisabledException; Shoal does not serve them (UnsupportedVersionException).
   */
  @Test
  void delegationTokens() {
    Admin admin = clients.admin(clients.sasl("admin", "admin-secret"));
    Throwable refused = cause(admin.createDelegationToken().delegationToken());
    Throwable described = cause(admin.describeDelegationToken().delegationTokens());
    Class<? extends Throwable> expected =
        onShoal() ? UnsupportedVersionException.class : DelegationTokenDisabledException.class;
    assertInstanceOf(expected, refused);
    assertInstanceOf(expected, described);
  }

  @Test
  void wrongPasswordIsRefused() {
    Admin admin = clients.admin(clients.sasl("alice", "not-her-password"));
    Throwable refused = cause(admin.describeCluster().nodes());
    assertInstanceOf(SaslAuthenticationException.class, refused);
    assertTrue(refused.getMessage() != null);
  }
}
