//! The principal of a client that presented a certificate, as Kafka's default
//! `ssl.principal.mapping.rules` makes it: `User:` and the subject's distinguished name in
//! RFC 2253 form, most specific part first ("CN=alice,OU=eng,O=Example,C=GB").

use x509_parser::prelude::{FromDer, X509Certificate};

use crate::Principal;

/// Attribute types by their short names (RFC 4514 section 3, and those Java prints).
const SHORT_NAMES: &[(&str, &str)] = &[
    ("2.5.4.3", "CN"),
    ("2.5.4.6", "C"),
    ("2.5.4.7", "L"),
    ("2.5.4.8", "ST"),
    ("2.5.4.9", "STREET"),
    ("2.5.4.10", "O"),
    ("2.5.4.11", "OU"),
    ("0.9.2342.19200300.100.1.1", "UID"),
    ("0.9.2342.19200300.100.1.25", "DC"),
];

/// None if the certificate does not parse or its subject holds a value that is not text.
pub fn principal_of(der: &[u8]) -> Option<Principal> {
    let (_, certificate) = X509Certificate::from_der(der).ok()?;
    let mut parts = Vec::new();
    for rdn in certificate
        .subject()
        .iter()
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
    {
        let mut attributes = Vec::new();
        for attribute in rdn.iter() {
            let oid = attribute.attr_type().to_id_string();
            let key = SHORT_NAMES
                .iter()
                .find(|(id, _)| *id == oid)
                .map_or(oid.clone(), |(_, short)| short.to_string());
            let value = attribute.as_str().ok()?;
            attributes.push(format!("{key}={}", escape(value)));
        }
        parts.push(attributes.join("+"));
    }
    Some(Principal::user(parts.join(",")))
}

/// RFC 2253 escaping of a value.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i + 1 == value.chars().count() && c == ' ');
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_as_rfc_2253_says() {
        assert_eq!(escape("Example, Inc."), "Example\\, Inc.");
        assert_eq!(escape("#1"), "\\#1");
        assert_eq!(escape("plain"), "plain");
    }

    #[test]
    fn garbage_is_no_principal() {
        assert_eq!(principal_of(b"not a certificate"), None);
        assert_eq!(principal_of(&[0x30, 0x82, 0xff, 0xff]), None);
    }
}
