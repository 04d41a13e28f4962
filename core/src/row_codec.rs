//! The stores' row codec for secrets: the one serialiser of a [`Secret`]'s value.
//!
//! [`Secret`] has no `Serialize`. The row types a store must carry whole — the remote handle
//! inside [`crate::task::TaskRow`], the answer text of [`crate::task::AnswerState`] and of
//! [`crate::store::AnswerRequest`] — name these functions on their secret fields with
//! `#[serde(serialize_with = ...)]`, for stores whose rows travel as serde data (the
//! simulation's store host). The Postgres adapter binds the exposed value itself. Nothing else
//! may name this module: a log, a report or a user-facing shape never serialises a row.

use crate::secret::Secret;
use serde::Serializer;

/// Writes the secret's value as a string (a store row field).
pub fn secret<S: Serializer>(value: &Secret, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(value.expose())
}

/// Writes an optional secret's value as a string or null (a store row field).
pub fn optional_secret<S: Serializer>(
    value: &Option<Secret>,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    match value {
        Some(v) => serializer.serialize_some(v.expose()),
        None => serializer.serialize_none(),
    }
}
