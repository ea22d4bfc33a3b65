package dev.shoal.compat.harness;

import java.nio.file.Path;

/** How a broker checks OAUTHBEARER tokens: the provider's keys (a JWKS file), issuer, audience. */
public record OAuthBearerSettings(Path jwksFile, String issuer, String audience) {}
