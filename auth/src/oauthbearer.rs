//! SASL/OAUTHBEARER (RFC 7628) as Kafka speaks it: the client's initial message — a GS2
//! header (`n,` and an optional `a=authzid,`), then `auth=Bearer <token>` and any extensions
//! as `key=value` pairs, each ended by 0x01, the whole ended by another — and the server's
//! error challenge, a JSON object the client answers (with a lone 0x01) before the failure.

use std::collections::BTreeMap;

use crate::error::AuthError;

/// The separator RFC 7628 puts after each key/value pair (and once more at the end).
const SEPARATOR: u8 = 0x01;
/// The most a client message may hold: a JWT of some kilobytes and a few extensions.
pub const CLIENT_MESSAGE_MAX_BYTES: usize = 64 << 10;
/// The most extensions one message may carry.
const EXTENSIONS_MAX: usize = 32;

/// A parsed initial client message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientMessage {
    /// The identity the client asks to act as; when given it must be the token's principal.
    pub authzid: Option<String>,
    pub token: String,
    /// SASL extensions (KIP-342), passed through to whoever wants them.
    pub extensions: BTreeMap<String, String>,
}

impl ClientMessage {
    pub fn parse(message: &[u8]) -> Result<ClientMessage, AuthError> {
        if message.len() > CLIENT_MESSAGE_MAX_BYTES {
            return Err(AuthError::ClientMessage("the client message is too long"));
        }
        let text =
            std::str::from_utf8(message).map_err(|_| AuthError::ClientMessage("not UTF-8"))?;
        let (header, rest) = text
            .split_once(SEPARATOR as char)
            .ok_or(AuthError::ClientMessage("no GS2 header"))?;
        let authzid = gs2_authzid(header)?;
        let pairs = rest
            .strip_suffix("\u{1}\u{1}")
            .ok_or(AuthError::ClientMessage(
                "the message does not end with 0x01 0x01",
            ))?;
        let mut token = None;
        let mut extensions = BTreeMap::new();
        for pair in pairs.split(SEPARATOR as char) {
            if pair.is_empty() {
                return Err(AuthError::ClientMessage("an empty key/value pair"));
            }
            let (key, value) = pair
                .split_once('=')
                .ok_or(AuthError::ClientMessage("a pair without '='"))?;
            if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphabetic()) {
                return Err(AuthError::ClientMessage("a key that is not letters"));
            }
            if !value
                .bytes()
                .all(|b| (0x20..=0x7e).contains(&b) || b"\t\r\n".contains(&b))
            {
                return Err(AuthError::ClientMessage("a value with control characters"));
            }
            if key == "auth" {
                let (scheme, bearer) = value
                    .split_once(' ')
                    .ok_or(AuthError::ClientMessage("auth is not 'Bearer <token>'"))?;
                if !scheme.eq_ignore_ascii_case("bearer") || bearer.trim().is_empty() {
                    return Err(AuthError::ClientMessage("auth is not 'Bearer <token>'"));
                }
                if token.replace(bearer.trim().to_string()).is_some() {
                    return Err(AuthError::ClientMessage("auth given twice"));
                }
            } else {
                if extensions.len() >= EXTENSIONS_MAX {
                    return Err(AuthError::ClientMessage("too many extensions"));
                }
                if extensions
                    .insert(key.to_string(), value.to_string())
                    .is_some()
                {
                    return Err(AuthError::ClientMessage("an extension given twice"));
                }
            }
        }
        Ok(ClientMessage {
            authzid,
            token: token.ok_or(AuthError::ClientMessage("no auth=Bearer token"))?,
            extensions,
        })
    }
}

/// The authzid of a GS2 header: `n,,` or `n,a=name,` (`y,` too: the client could have bound
/// a channel but thinks the server cannot; `p=` asks for binding, which is not served).
fn gs2_authzid(header: &str) -> Result<Option<String>, AuthError> {
    let mut parts = header.splitn(3, ',');
    let (Some(flag), Some(authzid), Some("")) = (parts.next(), parts.next(), parts.next()) else {
        return Err(AuthError::ClientMessage("a malformed GS2 header"));
    };
    if flag != "n" && flag != "y" {
        return Err(AuthError::ClientMessage("channel binding is not served"));
    }
    match authzid {
        "" => Ok(None),
        named => named
            .strip_prefix("a=")
            .filter(|name| !name.is_empty())
            .map(|name| Some(name.replace("=2C", ",").replace("=3D", "=")))
            .ok_or(AuthError::ClientMessage("a malformed authzid")),
    }
}

/// The server's error challenge (RFC 7628 3.2.2): the client answers it with a lone 0x01,
/// then the authentication fails. `scope` names what a token lacked, when that was the fault.
pub fn error_challenge(scope: Option<&str>) -> Vec<u8> {
    let mut body = String::from(r#"{"status":"invalid_token""#);
    if let Some(scope) = scope {
        body.push_str(r#","scope":""#);
        body.extend(scope.chars().filter(|c| *c != '"' && *c != '\\'));
        body.push('"');
    }
    body.push('}');
    body.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_clients_messages_parse() {
        let message = b"n,,\x01auth=Bearer eyJ.a.b\x01traceId=123\x01\x01";
        let parsed = ClientMessage::parse(message).unwrap();
        assert_eq!(parsed.token, "eyJ.a.b");
        assert_eq!(parsed.authzid, None);
        assert_eq!(
            parsed.extensions.get("traceId").map(String::as_str),
            Some("123")
        );
        let named = ClientMessage::parse(b"n,a=al=2Cice,\x01auth=bearer t\x01\x01").unwrap();
        assert_eq!(named.authzid.as_deref(), Some("al,ice"));
    }

    #[test]
    fn malformed_messages_are_refused() {
        for message in [
            &b""[..],
            b"n,,",
            b"n,,\x01auth=Bearer t\x01",
            b"p=tls-unique,,\x01auth=Bearer t\x01\x01",
            b"n,,\x01auth=Basic t\x01\x01",
            b"n,,\x01auth=Bearer \x01\x01",
            b"n,,\x01x=1\x01\x01",
            b"n,,\x01auth=Bearer t\x01auth=Bearer u\x01\x01",
            b"n,,\x01auth=Bearer t\x01\x01\x01",
            b"n,,\x01k3y=v\x01auth=Bearer t\x01\x01",
            b"n,,\x01k=\x02\x01auth=Bearer t\x01\x01",
        ] {
            assert!(ClientMessage::parse(message).is_err(), "{message:?}");
        }
        assert!(ClientMessage::parse(&vec![b'a'; CLIENT_MESSAGE_MAX_BYTES + 1]).is_err());
    }

    #[test]
    fn the_error_challenge_is_json() {
        assert_eq!(error_challenge(None), br#"{"status":"invalid_token"}"#);
        assert_eq!(
            error_challenge(Some("write")),
            br#"{"status":"invalid_token","scope":"write"}"#
        );
    }
}
