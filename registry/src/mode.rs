//! Registry modes: whether a subject takes new schemas, and whether the caller picks their ids.

use crate::RegistryError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadWrite,
    ReadOnly,
    /// Registrations keep the ids (and versions) the caller gives: for copying a registry.
    Import,
}

impl Mode {
    pub const DEFAULT: Mode = Mode::ReadWrite;

    pub fn name(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::Import => "IMPORT",
        }
    }

    pub fn parse(name: &str) -> Result<Mode, RegistryError> {
        match name.to_ascii_uppercase().as_str() {
            "READWRITE" => Ok(Mode::ReadWrite),
            "READONLY" => Ok(Mode::ReadOnly),
            "IMPORT" => Ok(Mode::Import),
            _ => Err(RegistryError::InvalidMode),
        }
    }
}
