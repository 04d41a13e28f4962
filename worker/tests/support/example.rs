//! The repository's example configuration (`tasklatch.example.toml`), loaded with stand-in
//! values for the environment variables it names.
#![allow(dead_code)]

use std::path::PathBuf;
use tasklatch_worker::config::{load, parse, Settings};

/// The example file's settings; panics with the loader's message when it does not load.
pub fn example_settings() -> Settings {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tasklatch.example.toml");
    let env = |k: &str| match k {
        "TASKLATCH_DATABASE_URL" => Some("postgres://tasklatch:pw@127.0.0.1:5432/tasklatch".into()),
        "TASKLATCH_TOKEN_ALICE_SHA256" => Some("a".repeat(64)),
        "RESEARCH_MCP_AUTHORIZATION" => Some("Bearer x".into()),
        _ => None,
    };
    load(&path, &env).unwrap_or_else(|e| panic!("{e}"))
}

/// The example file's settings with the database at `url` and the `key = value` lines of
/// `extra` in its `[database]` section (replacing the example's lines of those keys); panics
/// with the loader's message when they do not load.
pub fn settings_for(url: &str, extra: &str) -> Settings {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tasklatch.example.toml");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path:?}: {e}"));
    let keys: Vec<String> = extra
        .lines()
        .filter_map(|l| l.split('=').next())
        .map(|k| format!("{} =", k.trim()))
        .collect();
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| !keys.iter().any(|k| l.starts_with(k.as_str())))
        .collect();
    let text = kept
        .join("\n")
        .replace("[database]", &format!("[database]\n{extra}"));
    let env = |k: &str| match k {
        "TASKLATCH_DATABASE_URL" => Some(url.to_owned()),
        "TASKLATCH_TOKEN_ALICE_SHA256" => Some("a".repeat(64)),
        "RESEARCH_MCP_AUTHORIZATION" => Some("Bearer x".into()),
        _ => None,
    };
    let file = parse(&text, &env).unwrap_or_else(|e| panic!("{e}"));
    Settings::check(file).unwrap_or_else(|e| panic!("{e}"))
}
