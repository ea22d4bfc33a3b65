//! The broker's log filter (RUST_LOG's syntax: `info`, `warn,shoal=debug`), set at start from
//! RUST_LOG (default `info`) and replaceable while the broker runs by the `log.level` dynamic
//! broker config.

use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, reload, EnvFilter};

type Replace = Box<dyn Fn(EnvFilter) -> Result<(), String> + Send + Sync>;

static REPLACE: OnceLock<Replace> = OnceLock::new();
static AT_START: OnceLock<String> = OnceLock::new();

/// Installs the process's log output with a filter that can be replaced later.
pub fn init() {
    let at_start = std::env::var("RUST_LOG")
        .ok()
        .filter(|d| check(d).is_ok())
        .unwrap_or_else(|| "info".to_string());
    let (filter, handle) = reload::Layer::new(EnvFilter::new(&at_start));
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt::layer().with_target(false))
        .init();
    let _ = AT_START.set(at_start);
    let replace: Replace = Box::new(move |filter| {
        handle
            .reload(filter)
            .map_err(|e| format!("the log filter cannot be replaced: {e}"))
    });
    let _ = REPLACE.set(replace);
}

/// The filter the process started with.
pub fn at_start() -> String {
    AT_START
        .get()
        .cloned()
        .unwrap_or_else(|| "info".to_string())
}

/// Why `directives` is not a filter, if it is not.
pub fn check(directives: &str) -> Result<(), String> {
    EnvFilter::try_new(directives)
        .map(|_| ())
        .map_err(|e| format!("'{directives}' is not a log filter: {e}"))
}

/// Filters the log with `directives` from now on (no-op where `init` did not run: tests).
pub fn set(directives: &str) -> Result<(), String> {
    let filter = EnvFilter::try_new(directives)
        .map_err(|e| format!("'{directives}' is not a log filter: {e}"))?;
    match REPLACE.get() {
        Some(replace) => replace(filter),
        None => Ok(()),
    }
}
