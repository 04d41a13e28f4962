//! The repository's example configuration (`tasklatch.example.toml`), loaded with stand-in
//! values for the environment variables it names.

use std::path::PathBuf;
use tasklatch_worker::config::{load, Settings};

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
