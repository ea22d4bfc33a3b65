//! SASL/PLAIN (RFC 4616): `[authzid] NUL authcid NUL passwd`, checked against the users the
//! config file names. Meant for small setups and for use over TLS: the password travels as is.

use std::collections::BTreeMap;

/// The user a PLAIN token authenticates, or None. The comparison takes the same time
/// whatever the password's bytes, so timing tells nothing about them.
pub fn authenticate(token: &[u8], users: &BTreeMap<String, String>) -> Option<String> {
    let mut parts = token.split(|b| *b == 0);
    let (Some(authzid), Some(user), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let user = std::str::from_utf8(user).ok()?;
    // Acting as another identity is not supported: an authzid must name the user itself.
    if !authzid.is_empty() && authzid != user.as_bytes() {
        return None;
    }
    let expected = users.get(user)?;
    constant_time_eq(expected.as_bytes(), password).then(|| user.to_string())
}

/// Equal bytes, compared without an early exit.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut difference = u8::from(a.len() != b.len());
    for (x, y) in a.iter().zip(b) {
        difference |= x ^ y;
    }
    difference == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn users() -> BTreeMap<String, String> {
        BTreeMap::from([("alice".to_string(), "alice-secret".to_string())])
    }

    #[test]
    fn a_right_password_authenticates_and_anything_else_does_not() {
        assert_eq!(
            authenticate(b"\0alice\0alice-secret", &users()).as_deref(),
            Some("alice")
        );
        assert_eq!(
            authenticate(b"alice\0alice\0alice-secret", &users()).as_deref(),
            Some("alice")
        );
        assert_eq!(authenticate(b"\0alice\0wrong", &users()), None);
        assert_eq!(authenticate(b"\0alice\0alice-secre", &users()), None);
        assert_eq!(authenticate(b"\0bob\0alice-secret", &users()), None);
        assert_eq!(authenticate(b"bob\0alice\0alice-secret", &users()), None);
        assert_eq!(authenticate(b"\0alice", &users()), None);
        assert_eq!(authenticate(b"\0alice\0alice-secret\0", &users()), None);
        assert_eq!(authenticate(b"", &users()), None);
    }
}
