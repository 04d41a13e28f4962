//! The documented example configuration is a valid one (with its `env:` variables set), and
//! its defaults are the ones the code uses.

#[path = "support/example.rs"]
mod example;

use example::example_settings;
use std::path::PathBuf;
use tasklatch_worker::config::{load, Auth};

#[test]
fn the_example_file_loads() {
    let s = example_settings();
    assert_eq!(s.lanes, 1);
    assert_eq!(s.listen.to_string(), "127.0.0.1:8080");
    assert!(matches!(&s.auth, Auth::Tokens(t) if t.len() == 1));
    assert_eq!(s.mcp.servers.len(), 1);
    assert!(
        s.agent_tools.is_none(),
        "the agent tools are off unless enabled"
    );
    assert!(s.ui.is_none(), "the panel is off unless enabled");
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tasklatch.example.toml");
    let missing = load(&path, &|_| None)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(missing.contains("is not set"), "{missing}");
}
