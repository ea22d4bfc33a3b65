//! The broker's log: text (coloured only on a terminal) or one JSON object a line, on
//! standard output, through a filter in RUST_LOG's syntax (`info`, `warn,shoal=debug`) set at
//! start from RUST_LOG or `[log] level` (default `info`) and replaceable while the broker runs
//! by the `log.level` dynamic broker config.

use std::io::IsTerminal;
use std::sync::OnceLock;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{fmt, reload, EnvFilter, Layer};

use shoal_config::log::{parse_filter as parse, LogConfig, LogFormat};

type Replace = Box<dyn Fn(EnvFilter) -> Result<(), String> + Send + Sync>;

static REPLACE: OnceLock<Replace> = OnceLock::new();
static AT_START: OnceLock<String> = OnceLock::new();

/// Installs the process's log output with a filter that can be replaced later.
pub fn init(config: &LogConfig) {
    let at_start = [std::env::var("RUST_LOG").ok(), config.level.clone()]
        .into_iter()
        .flatten()
        .find(|d| check(d).is_ok())
        .unwrap_or_else(|| "info".to_string());
    let (filter, handle) = reload::Layer::new(EnvFilter::new(&at_start));
    let output = match config.format {
        LogFormat::Text => fmt::layer()
            .with_target(false)
            .with_ansi(std::io::stdout().is_terminal())
            .boxed(),
        LogFormat::Json => fmt::layer()
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    tracing_subscriber::registry()
        .with(filter)
        .with(output)
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
    parse(directives).map(|_| ())
}

/// Filters the log with `directives` from now on (no-op where `init` did not run: tests).
pub fn set(directives: &str) -> Result<(), String> {
    let filter = parse(directives)?;
    match REPLACE.get() {
        Some(replace) => replace(filter),
        None => Ok(()),
    }
}
