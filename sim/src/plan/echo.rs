//! Secret echoes: a small grammar of the ways a remote server writes a task's own secrets (its
//! remote id and driver data) back into the texts it serves — results, errors and questions
//! (DOMAIN §8, issue 29 item 2). Real servers put ids inside JSON strings, URL paths,
//! parentheses and quotes, at the start or end of a line, right before punctuation, twice, or
//! cut short; a redaction that only finds a secret between spaces passes a fixed sentence.
//!
//! ```text
//! echo       := frame (sep frame){0..2}
//! frame      := json | url | enclosed | punctuated | labelled | repeated | bare
//! json       := {"task":" secret ","ok":false}
//! url        := GET https://mcp.example/v1/tasks/ secret /status
//! enclosed   := open secret close    (open, close) ∈ () [] '' "" `` <> «» {}
//! punctuated := secret (, | . | : | ; | ! | ? | …)
//! labelled   := (id= | task# | handle: | session=) secret
//! repeated   := secret " " secret
//! bare       := secret
//! secret     := id | data | head(id | data, n) | tail(id | data, n)   n ∈ FRAGMENT..=24 bytes
//! sep        := " " | "\n" | "; " | " - "
//! ```
//!
//! A frame may open or close the whole text, so secrets stand at the edges too. The pieces are
//! drawn when the plan is generated; the secrets themselves exist only once the server has
//! created the task, so a piece names which secret and how much of it.

use rand::seq::IndexedRandom;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use tasklatch_core::redaction::FRAGMENT;

use crate::plan::{Content, TaskPlan};

/// Which of a remote task's secrets a piece echoes.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretPart {
    /// The remote task id.
    RemoteId,
    /// The driver's private data.
    DriverData,
}

/// One piece of an echo: literal text, or a secret whole or cut short.
#[derive(Clone, PartialEq, Eq, Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EchoPiece {
    /// Text as it is.
    Text(String),
    /// The whole secret.
    Whole(SecretPart),
    /// The secret's first bytes (all of it when it is shorter).
    Head(SecretPart, u32),
    /// The secret's last bytes (all of it when it is shorter).
    Tail(SecretPart, u32),
}

impl EchoPiece {
    /// Whether the piece shows a secret (whole or cut).
    pub fn is_secret(&self) -> bool {
        !matches!(self, EchoPiece::Text(_))
    }

    /// Whether the piece shows a secret cut short.
    pub fn is_cut(&self) -> bool {
        matches!(self, EchoPiece::Head(..) | EchoPiece::Tail(..))
    }
}

/// On two seeds in five, about a third of the plain scripted texts become secret echoes; every
/// echo (these and the swarm's hostile ones, drawn empty) gets its pieces from the grammar.
/// Tasks and steps are visited in plan order, so the draws depend on the seed alone.
pub fn draw_echoes(rng: &mut ChaCha8Rng, tasks: &mut [TaskPlan]) {
    let more = rng.random_bool(0.4);
    for step in tasks.iter_mut().flat_map(|t| t.steps.iter_mut()) {
        let becomes = more && matches!(step.text, Some(Content::Plain(_))) && rng.random_bool(0.3);
        if becomes || matches!(step.text, Some(Content::EchoSecrets(_))) {
            step.text = Some(Content::EchoSecrets(echo(rng)));
        }
    }
}

/// Separators between frames.
const SEPARATORS: [&str; 4] = [" ", "\n", "; ", " - "];
/// (opening, closing) around an enclosed secret.
const ENCLOSURES: [(&str, &str); 8] = [
    ("(", ")"),
    ("[", "]"),
    ("'", "'"),
    ("\"", "\""),
    ("`", "`"),
    ("<", ">"),
    ("«", "»"),
    ("{", "}"),
];
/// Punctuation right after a secret.
const PUNCTUATION: [&str; 7] = [",", ".", ":", ";", "!", "?", "…"];
/// Labels right before a secret.
const LABELS: [&str; 4] = ["id=", "task#", "handle:", "session="];

/// One echo: one to three frames.
pub fn echo(rng: &mut ChaCha8Rng) -> Vec<EchoPiece> {
    let mut pieces = Vec::new();
    for i in 0..rng.random_range(1..=3u32) {
        if i > 0 {
            pieces.push(text(SEPARATORS.choose(rng).copied().unwrap_or(" ")));
        }
        frame(rng, &mut pieces);
    }
    pieces
}

/// Appends one frame of the grammar to `pieces`.
fn frame(rng: &mut ChaCha8Rng, pieces: &mut Vec<EchoPiece>) {
    let s = secret(rng);
    match rng.random_range(0..7u32) {
        0 => pieces.extend([text("{\"task\":\""), s, text("\",\"ok\":false}")]),
        1 => pieces.extend([
            text("GET https://mcp.example/v1/tasks/"),
            s,
            text("/status"),
        ]),
        2 => {
            let (open, close) = ENCLOSURES.choose(rng).copied().unwrap_or(("(", ")"));
            pieces.extend([text(open), s, text(close)]);
        }
        3 => {
            let mark = PUNCTUATION.choose(rng).copied().unwrap_or(".");
            pieces.extend([s, text(mark)]);
        }
        4 => pieces.extend([text(LABELS.choose(rng).copied().unwrap_or("id=")), s]),
        5 => pieces.extend([s.clone(), text(" "), s]),
        _ => pieces.push(s),
    }
}

/// A secret, whole on half the draws, otherwise cut to `FRAGMENT..=24` bytes from either end.
fn secret(rng: &mut ChaCha8Rng) -> EchoPiece {
    let part = if rng.random_bool(0.5) {
        SecretPart::RemoteId
    } else {
        SecretPart::DriverData
    };
    let bytes = rng.random_range(FRAGMENT as u32..=24);
    match rng.random_range(0..4u32) {
        0 => EchoPiece::Head(part, bytes),
        1 => EchoPiece::Tail(part, bytes),
        _ => EchoPiece::Whole(part),
    }
}

fn text(s: &str) -> EchoPiece {
    EchoPiece::Text(s.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;

    #[test]
    fn the_same_seed_draws_the_same_echo_and_every_frame_is_reached() {
        let draw = |seed| echo(&mut ChaCha8Rng::seed_from_u64(seed));
        assert_eq!(draw(3), draw(3));
        let echoes: Vec<Vec<EchoPiece>> = (0..300).map(draw).collect();
        assert!(echoes.iter().all(|e| e.iter().any(EchoPiece::is_secret)));
        let shows = |needle: &str| {
            echoes.iter().any(|e| {
                e.iter()
                    .any(|p| matches!(p, EchoPiece::Text(t) if t.contains(needle)))
            })
        };
        for needle in ["{\"task\":\"", "/tasks/", "«", "…", "session=", "\n"] {
            assert!(shows(needle), "no echo holds {needle:?}");
        }
        assert!(echoes.iter().any(|e| e.iter().any(EchoPiece::is_cut)));
        assert!(echoes
            .iter()
            .any(|e| e.first().is_some_and(EchoPiece::is_secret)));
        assert!(echoes
            .iter()
            .any(|e| e.last().is_some_and(EchoPiece::is_secret)));
    }
}
