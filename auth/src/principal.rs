//! Who a connection acts as, in Kafka's form: `User:alice`, or `User:ANONYMOUS` where the
//! listener authenticates no one.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    /// Kafka's principal type; always "User" here.
    pub kind: &'static str,
    pub name: String,
}

impl Principal {
    pub const ANONYMOUS_NAME: &'static str = "ANONYMOUS";
    /// Kafka's principal type for users.
    pub const USER_TYPE: &'static str = "User";

    pub fn user(name: impl Into<String>) -> Principal {
        Principal {
            kind: Self::USER_TYPE,
            name: name.into(),
        }
    }

    pub fn anonymous() -> Principal {
        Principal::user(Self::ANONYMOUS_NAME)
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}
