//! Untrusted text (DOMAIN §8): what a remote server says, made safe to show a model or a user.
//!
//! Threat model. Everything a remote tool server returns — a task's result, error, input
//! request, artifact, even the name it was given back — is attacker-controlled and ends up in a
//! model's context, where text that *looks* like authority (a `<system>` tag, our own
//! `<tasklatch-event>` tag, a forged end of the untrusted block) can hijack the conversation.
//! Public shapes are a second leak channel: a listing or projection that copied the row would
//! carry the remote handle and driver data, which are secrets.
//!
//! Defence. [`neutralise`] reads text as a model does (compatibility forms, invisible and
//! look-alike characters folded away), escapes a denylist of authority tags and template tokens
//! in every spelling and defuses forged boundary markers; [`frame`] wraps neutralised text between [`BEGIN_MARKER`] and
//! [`END_MARKER`], so a frame always holds exactly one marker of each; [`notification_prompt`]
//! puts our trusted instruction outside that frame. [`PublicTask`] and [`ContextEntry`] are
//! whitelists built field by field ([`TaskDetail`] for the detail view too): they have no
//! field a secret could land in. All of it is deterministic, idempotent and total (no panic on
//! any input).

mod detail;
mod fold;
mod frame;
mod html;
mod neutralise;
mod prompt;
mod public;
#[cfg(test)]
pub(crate) mod test_support;

pub use detail::{AnswerView, CancelProgress, TaskDetail, MAX_DETAIL_PREVIEW};
pub use frame::{count_markers, frame, BEGIN_MARKER, END_MARKER};
pub use html::{escape_html, push_escaped};
pub use neutralise::{neutralise, DENIED_TAGS, DENIED_TOKENS};
pub use prompt::{notification_prompt, NOTIFICATION_INSTRUCTION};
pub use public::{context_projection, ContextEntry, PublicTask};
