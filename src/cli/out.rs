//! Standard output of the commands that print listings and reports (`migrate`, `tasks`,
//! `dead-letters`): a reader that closes the pipe early (`| head -1`) ends the output, not the
//! command.
//!
//! Rust ignores SIGPIPE, so a write to a closed pipe fails with `BrokenPipe` — on which
//! `println!` panics. [`line`] takes that error as the end of the output instead. SIGPIPE stays
//! ignored process-wide: a signal must never stop the worker for a peer's closed socket.

use std::fmt::Display;
use std::io::{ErrorKind, Write};

/// Writes `text` and a newline to stdout, flushed. When the reader has closed the pipe, the text
/// is dropped and `Ok` returned (as are later lines): the command goes on to its own exit code.
/// Any other write error is returned.
pub fn line(text: impl Display) -> std::io::Result<()> {
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        written => written,
    }
}
