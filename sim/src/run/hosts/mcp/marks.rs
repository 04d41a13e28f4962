//! The coverage marks the server's answers exercise: hostile content and quirks a view shows,
//! the shape of a new task's secrets, and what a task's run of answers did (a status served
//! again or gone back to, degraded tracking twice).

use super::content::SecretShape;
use super::model::View;
use crate::plan::echo::EchoPiece;
use crate::plan::WorkloadMark;
use crate::plan::{Content, QuirkKind, ScriptStatus};
use tasklatch_core::policy::DEGRADED_AFTER;

/// The mark of what `view` shows: hostile content, a quirk, or a task that cancelled itself.
pub fn of_view(view: &View<'_>) -> Option<WorkloadMark> {
    match view {
        View::Scripted(ScriptStatus::Cancelled, _) => Some(WorkloadMark::RemoteCancelledItself),
        View::Scripted(_, Some(c)) | View::Asking { text: Some(c), .. } => Some(match c {
            Content::Plain(_) => return None,
            Content::Oversized(_) => WorkloadMark::HostileOversized,
            Content::NulBytes(_) => WorkloadMark::HostileNul,
            Content::InvalidUtf8(_) => WorkloadMark::HostileInvalidUtf8,
            Content::ForgedTags => WorkloadMark::HostileForgedTags,
            Content::EchoSecrets(_) => WorkloadMark::HostileSecrets,
            Content::Disguised(_) => WorkloadMark::HostileDisguised,
        }),
        View::Quirk(q) => Some(match q {
            QuirkKind::UnknownTask => WorkloadMark::RemoteUnknownTask,
            QuirkKind::NanHint => WorkloadMark::HostileNanHint,
            QuirkKind::WrongTaskId => WorkloadMark::HostileWrongTaskId,
            QuirkKind::UnknownStatus => WorkloadMark::HostileUnknownStatus,
            QuirkKind::OversizedInputRequest | QuirkKind::OversizedArtifact => {
                WorkloadMark::HostileOversizedField
            }
            QuirkKind::DuplicateHandle => WorkloadMark::RemoteDuplicateHandle,
        }),
        _ => None,
    }
}

/// The marks of the shape of the secret echo `view` shows, if it shows one: a secret cut
/// short, a secret at an edge of the text, a whole secret right against punctuation.
pub fn of_echo(view: &View<'_>) -> Vec<WorkloadMark> {
    let (View::Scripted(_, Some(Content::EchoSecrets(pieces)))
    | View::Asking {
        text: Some(Content::EchoSecrets(pieces)),
        ..
    }) = view
    else {
        return Vec::new();
    };
    let mut marks = Vec::new();
    if pieces.iter().any(EchoPiece::is_cut) {
        marks.push(WorkloadMark::SecretEchoCut);
    }
    let edges = [pieces.first(), pieces.last()];
    if edges.iter().flatten().any(|p| p.is_secret()) {
        marks.push(WorkloadMark::SecretEchoAtEdge);
    }
    if pieces.windows(2).any(delimited) {
        marks.push(WorkloadMark::SecretEchoDelimited);
    }
    marks
}

/// Whether one of two adjacent pieces is a whole secret touching the other's punctuation.
fn delimited(pair: &[EchoPiece]) -> bool {
    let punct = |c: Option<char>| c.is_some_and(|c| !c.is_alphanumeric() && !c.is_whitespace());
    match pair {
        [EchoPiece::Text(t), EchoPiece::Whole(_)] => punct(t.chars().next_back()),
        [EchoPiece::Whole(_), EchoPiece::Text(t)] => punct(t.chars().next()),
        _ => false,
    }
}

/// The mark of a new task's secrets shape (none for secrets apart).
pub fn of_secrets(shape: SecretShape) -> Option<WorkloadMark> {
    match shape {
        SecretShape::Apart => None,
        SecretShape::Nested => Some(WorkloadMark::SecretNested),
        SecretShape::ShortId => Some(WorkloadMark::SecretShortId),
        SecretShape::ShortIdNested => Some(WorkloadMark::SecretShortIdNested),
    }
}

/// What the server answered one remote task so far, as far as coverage cares.
#[derive(Clone, Debug, Default)]
pub struct AnswerTally {
    /// Statuses served so far, consecutive repeats collapsed.
    served: Vec<&'static str>,
    /// Status polls answered with a transient error in a row.
    failing: u32,
    /// How many such runs reached the engine's degradation threshold.
    degraded: u32,
}

impl AnswerTally {
    /// Counts a report with `status`: its mark when the task served that status just before
    /// (a repeat) or earlier, something else in between (a flap).
    pub fn served(&mut self, status: &'static str) -> Option<WorkloadMark> {
        let mark = match self.served.last() {
            Some(last) if *last == status => Some(WorkloadMark::RemoteStatusRepeat),
            _ if self.served.contains(&status) => Some(WorkloadMark::RemoteStatusFlap),
            _ => None,
        };
        if self.served.last() != Some(&status) {
            self.served.push(status);
        }
        mark
    }

    /// Counts a status poll's answer, `unavailable` or not, towards "degraded, recovered,
    /// degraded again": `true` exactly when a second run of [`DEGRADED_AFTER`] transient
    /// errors in a row completes.
    pub fn polled(&mut self, unavailable: bool) -> bool {
        if !unavailable {
            self.failing = 0;
            return false;
        }
        self.failing += 1;
        if self.failing != DEGRADED_AFTER {
            return false;
        }
        self.degraded += 1;
        self.degraded == 2
    }
}
