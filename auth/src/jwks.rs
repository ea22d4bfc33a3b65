//! A JSON Web Key Set (RFC 7517) as identity providers publish them: the public keys that
//! sign their tokens, by key id. RSA keys (`n`, `e`) and EC keys on P-256 and P-384 (`x`,
//! `y`); others are skipped, as Kafka's validator skips what it cannot use.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde::Deserialize;

use crate::error::AuthError;

/// The most a JWKS document may be, and the most keys it may hold.
pub const JWKS_MAX_BYTES: usize = 1 << 20;
const KEYS_MAX: usize = 256;

/// One usable public key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicKey {
    pub kid: Option<String>,
    /// The algorithm the key is for, when the set says.
    pub alg: Option<String>,
    pub material: KeyMaterial,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyMaterial {
    /// Modulus and exponent, big-endian without leading zeros.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// An uncompressed point (0x04 || x || y) on `curve`.
    Ec { curve: Curve, point: Vec<u8> },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Curve {
    P256,
    P384,
}

impl Curve {
    fn coordinate_bytes(self) -> usize {
        match self {
            Curve::P256 => 32,
            Curve::P384 => 48,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Jwks {
    pub keys: Vec<PublicKey>,
}

#[derive(Deserialize)]
struct RawSet {
    keys: Vec<RawKey>,
}

#[derive(Deserialize)]
struct RawKey {
    kty: String,
    kid: Option<String>,
    alg: Option<String>,
    #[serde(rename = "use")]
    usage: Option<String>,
    n: Option<String>,
    e: Option<String>,
    crv: Option<String>,
    x: Option<String>,
    y: Option<String>,
}

impl Jwks {
    pub fn parse(document: &[u8]) -> Result<Jwks, AuthError> {
        if document.len() > JWKS_MAX_BYTES {
            return Err(AuthError::Jwks(format!(
                "{} bytes, over the limit of {JWKS_MAX_BYTES}",
                document.len()
            )));
        }
        let raw: RawSet =
            serde_json::from_slice(document).map_err(|e| AuthError::Jwks(e.to_string()))?;
        if raw.keys.len() > KEYS_MAX {
            return Err(AuthError::Jwks(format!("more than {KEYS_MAX} keys")));
        }
        let keys = raw
            .keys
            .into_iter()
            .filter(|k| k.usage.as_deref().is_none_or(|u| u == "sig"))
            .filter_map(|k| usable(k).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Jwks { keys })
    }

    /// The keys a token with key id `kid` may be checked against: the one with that id; with
    /// no id, every key.
    pub fn candidates<'a>(&'a self, kid: Option<&'a str>) -> impl Iterator<Item = &'a PublicKey> {
        self.keys
            .iter()
            .filter(move |key| kid.is_none() || key.kid.as_deref() == kid)
    }
}

/// The key, None when it is of a kind not served, an error when it is broken.
fn usable(raw: RawKey) -> Result<Option<PublicKey>, AuthError> {
    let decode = |field: &Option<String>, name: &str| -> Result<Vec<u8>, AuthError> {
        let text = field
            .as_deref()
            .ok_or_else(|| AuthError::Jwks(format!("a {} key without {name}", raw.kty)))?;
        URL_SAFE_NO_PAD
            .decode(text.trim_end_matches('='))
            .map_err(|e| AuthError::Jwks(format!("{name}: {e}")))
    };
    let material = match raw.kty.as_str() {
        "RSA" => {
            let strip = |mut bytes: Vec<u8>| {
                let zeros = bytes.iter().take_while(|b| **b == 0).count();
                bytes.drain(..zeros);
                bytes
            };
            KeyMaterial::Rsa {
                n: strip(decode(&raw.n, "n")?),
                e: strip(decode(&raw.e, "e")?),
            }
        }
        "EC" => {
            let curve = match raw.crv.as_deref() {
                Some("P-256") => Curve::P256,
                Some("P-384") => Curve::P384,
                _ => return Ok(None),
            };
            let (x, y) = (decode(&raw.x, "x")?, decode(&raw.y, "y")?);
            let size = curve.coordinate_bytes();
            if x.len() > size || y.len() > size {
                return Err(AuthError::Jwks("an EC coordinate too long".into()));
            }
            let mut point = vec![0x04];
            for coordinate in [x, y] {
                point.extend(std::iter::repeat_n(0, size - coordinate.len()));
                point.extend(coordinate);
            }
            KeyMaterial::Ec { curve, point }
        }
        _ => return Ok(None),
    };
    Ok(Some(PublicKey {
        kid: raw.kid,
        alg: raw.alg,
        material,
    }))
}
