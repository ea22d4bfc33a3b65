package dev.shoal.compat;

import static dev.shoal.compat.harness.Clients.cause;
import static dev.shoal.compat.harness.Clients.get;
import static dev.shoal.compat.harness.Broker.ADMIN_PASSWORD;
import static dev.shoal.compat.harness.Broker.ADMIN_USER;
import static dev.shoal.compat.harness.Broker.ALICE;
import static dev.shoal.compat.harness.Broker.ALICE_PASSWORD;
import static dev.shoal.compat.harness.Broker.BOB;
import static dev.shoal.compat.harness.Broker.BOB_PASSWORD;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.shoal.compat.harness.BrokerTest;
import dev.shoal.compat.harness.Clients;
import dev.shoal.compat.harness.Eventually;
import java.util.Base64;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateDelegationTokenOptions;
import org.apache.kafka.clients.admin.DescribeDelegationTokenOptions;
import org.apache.kafka.clients.admin.ExpireDelegationTokenOptions;
import org.apache.kafka.clients.admin.NewTopic;
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
import org.apache.kafka.common.errors.DelegationTokenNotFoundException;
import org.apache.kafka.common.errors.DelegationTokenOwnerMismatchException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.UnsupportedByAuthenticationException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.quota.ClientQuotaFilterComponent;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.token.delegation.DelegationToken;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
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
   * Delegation tokens (KIP-48), on both brokers with a secret key: the admin makes one for alice
   * that bob may renew; a client logs in with it by SCRAM and acts as alice (an ACL that denies
   * her a topic denies it) but may not use the token APIs; only the owner and renewers renew
   * it, a super user included in neither; a PLAINTEXT client may not ask; once alice expires it,
   * it is neither described nor logged in with.
   */
  @Test
  void delegationTokensAreMadeUsedRenewedAndExpired() throws Exception {
    Admin admin = clients.admin(clients.sasl(ADMIN_USER, ADMIN_PASSWORD));
    KafkaPrincipal alice = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, ALICE);
    KafkaPrincipal bob = new KafkaPrincipal(KafkaPrincipal.USER_TYPE, BOB);
    DelegationToken token =
        get(
            admin
                .createDelegationToken(
                    new CreateDelegationTokenOptions().owner(alice).renewers(List.of(bob)))
                .delegationToken());
    TokenInformation info = token.tokenInfo();
    assertEquals(alice, info.owner());
    assertEquals(new KafkaPrincipal(KafkaPrincipal.USER_TYPE, ADMIN_USER), info.tokenRequester());
    assertEquals(List.of(bob), List.copyOf(info.renewers()));
    assertTrue(info.issueTimestamp() < info.expiryTimestamp());
    assertTrue(info.expiryTimestamp() <= info.maxTimestamp());
    assertEquals(64, token.hmac().length);

    DescribeDelegationTokenOptions alicesTokens =
        new DescribeDelegationTokenOptions().owners(List.of(alice));
    Eventually.until(
        () -> described(admin, alicesTokens, info.tokenId()) != null,
        () -> "the token is described");
    DelegationToken described = described(admin, alicesTokens, info.tokenId());
    assertArrayEquals(token.hmac(), described.hmac());
    assertEquals(info.expiryTimestamp(), described.tokenInfo().expiryTimestamp());

    String topic = Clients.unique("token-topic");
    get(admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all());
    AclBinding denyAlice =
        new AclBinding(
            new ResourcePattern(ResourceType.TOPIC, topic, PatternType.LITERAL),
            new AccessControlEntry(
                alice.toString(), "*", AclOperation.DESCRIBE, AclPermissionType.DENY));
    get(admin.createAcls(List.of(denyAlice)).all());
    String hmac = Base64.getEncoder().encodeToString(token.hmac());
    Admin withToken =
        clients.admin(clients.delegationToken("SCRAM-SHA-512", info.tokenId(), hmac));
    Eventually.until(
        () ->
            cause(withToken.describeTopics(List.of(topic)).allTopicNames())
                instanceof TopicAuthorizationException,
        () -> "the token's client acts as alice, whom the ACL denies");
    assertInstanceOf(
        UnsupportedByAuthenticationException.class,
        cause(withToken.createDelegationToken().delegationToken()));
    get(admin.deleteAcls(List.of(denyAlice.toFilter())).all());

    Admin asBob = clients.admin(clients.sasl(BOB, BOB_PASSWORD));
    long renewed = get(asBob.renewDelegationToken(token.hmac()).expiryTimestamp());
    assertTrue(renewed >= info.expiryTimestamp() && renewed <= info.maxTimestamp());
    assertInstanceOf(
        DelegationTokenOwnerMismatchException.class,
        cause(admin.renewDelegationToken(token.hmac()).expiryTimestamp()));
    assertInstanceOf(
        DelegationTokenNotFoundException.class,
        cause(admin.renewDelegationToken(new byte[64]).expiryTimestamp()));
    assertInstanceOf(
        UnsupportedByAuthenticationException.class,
        cause(clients.admin().describeDelegationToken().delegationTokens()));

    Admin asAlice = clients.admin(clients.sasl(ALICE, ALICE_PASSWORD));
    get(
        asAlice
            .expireDelegationToken(
                token.hmac(), new ExpireDelegationTokenOptions().expiryTimePeriodMs(-1))
            .expiryTimestamp());
    Eventually.until(
        () -> described(admin, alicesTokens, info.tokenId()) == null,
        () -> "the expired token is no longer described");
    Eventually.until(
        () ->
            cause(
                    clients
                        .admin(clients.delegationToken("SCRAM-SHA-256", info.tokenId(), hmac))
                        .describeCluster()
                        .nodes())
                instanceof SaslAuthenticationException,
        () -> "a login with the expired token is refused");
  }

  private static DelegationToken described(
      Admin admin, DescribeDelegationTokenOptions options, String tokenId) throws Exception {
    return get(admin.describeDelegationToken(options).delegationTokens()).stream()
        .filter(t -> t.tokenInfo().tokenId().equals(tokenId))
        .findFirst()
        .orElse(null);
  }

  @Test
  void wrongPasswordIsRefused() {
    Admin admin = clients.admin(clients.sasl("alice", "not-her-password"));
    Throwable refused = cause(admin.describeCluster().nodes());
    assertInstanceOf(SaslAuthenticationException.class, refused);
    assertTrue(refused.getMessage() != null);
  }
}
