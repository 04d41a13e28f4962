//! Logs: `tracing` to standard error, filtered by `RUST_LOG`, as text or JSON lines.
//!
//! The default filter is `info`. `rmcp` is held at `error` unless `RUST_LOG` names it: the MCP
//! client can log previews of message bodies at lower levels, and bodies hold remote task ids.
//! Everything the worker itself logs names tasks by their local id only (see
//! [`crate::metered`]); no secret is ever a field.

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// How log lines are written.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line (`timestamp`, `level`, `target`, `fields`, spans).
    Json,
}

/// The filter in force for `rust_log` (the value of `RUST_LOG`, if set): the given directives,
/// or `info`, with `rmcp=error` added unless they mention `rmcp`. An unusable value falls back
/// to the default, with the reason.
pub fn filter(rust_log: Option<&str>) -> (EnvFilter, Option<String>) {
    let spec = rust_log
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .unwrap_or("info");
    let spec = if spec.contains("rmcp") {
        spec.to_owned()
    } else {
        format!("{spec},rmcp=error")
    };
    match EnvFilter::try_new(&spec) {
        Ok(f) => (f, None),
        Err(e) => (
            EnvFilter::new("info,rmcp=error"),
            Some(format!("RUST_LOG is not usable ({e}); logging at info")),
        ),
    }
}

/// Installs the global subscriber. Call once, before anything logs.
pub fn init(format: LogFormat) {
    let (filter, problem) = filter(std::env::var("RUST_LOG").ok().as_deref());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let installed = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
    };
    if installed.is_ok() {
        if let Some(p) = problem {
            tracing::warn!("{p}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rmcp_is_held_at_error_unless_named() {
        assert_eq!(filter(None).0.to_string(), "rmcp=error,info");
        assert_eq!(filter(Some("debug")).0.to_string(), "rmcp=error,debug");
        assert_eq!(
            filter(Some("debug,rmcp=trace")).0.to_string(),
            "rmcp=trace,debug"
        );
        let (f, problem) = filter(Some("=[=bad"));
        assert_eq!(f.to_string(), "rmcp=error,info");
        assert!(problem.is_some());
    }
}
