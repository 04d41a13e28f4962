//! The harness itself: a peer starts on the port asked for, answers, restarts, and is gone
//! after stop (its process group killed by PID).

use std::time::Duration;
use tasklatch_peers::{http_get_status, start_everything};

#[test]
fn server_everything_starts_answers_restarts_and_stops() {
    let mut p = start_everything().unwrap_or_else(|e| panic!("{e}"));
    let port = p.port();
    assert!(http_get_status(port, "/mcp", Duration::from_secs(2)).is_ok());
    let first = p.pid();
    p.restart().unwrap_or_else(|e| panic!("{e}"));
    assert_ne!(p.pid(), first, "restart must start a new process");
    assert!(http_get_status(port, "/mcp", Duration::from_secs(2)).is_ok());
    p.stop();
    assert!(
        http_get_status(port, "/mcp", Duration::from_secs(2)).is_err(),
        "port {port} still answers after stop"
    );
}
