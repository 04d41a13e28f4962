//! Helpers of the Postgres tests: the conformance suite's builders (rows, reports, leases,
//! claims; see `tasklatch_core::conformance::support`) and the normalisation that compares a
//! store that keeps NUL (MemStore) with one that makes text storable (PgStore).
#![allow(dead_code, unused_imports)]

pub use tasklatch_core::conformance::support::*;

/// Replaces NUL with U+FFFD in every string of a serialisable value: a store that keeps NUL and
/// one that makes text storable then compare equal.
pub fn normalised<T: serde::Serialize>(v: &T) -> serde_json::Value {
    fn walk(v: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match v {
            Value::String(s) => Value::String(s.replace('\0', "\u{FFFD}")),
            Value::Array(a) => Value::Array(a.into_iter().map(walk).collect()),
            Value::Object(o) => Value::Object(o.into_iter().map(|(k, v)| (k, walk(v))).collect()),
            other => other,
        }
    }
    walk(serde_json::to_value(v).expect("serialisable"))
}
