//! The questions of an `input_required` task: rendered as a bounded text for the report, each
//! under a public question id.
//!
//! The server's keys for its questions embed the remote task id (fastmcp: `"<taskId>:<hash>"`),
//! a secret, so they are never shown. A question's public id is `q` followed by the first 16
//! hex digits of the SHA-256 of its server key: stable across polls (the same question always
//! renders the same text, so re-polling never notifies twice) and revealing nothing of the key.
//! [`crate::McpDriver::answer`] maps an id back by reading the task's current questions again.

use crate::redact::Redactor;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// The rendered text stays under this many characters (core refuses input requests over
/// 4,000 as a protocol error; questions that do not fit are counted, not cut mid-way).
const TEXT_BUDGET: usize = 3_600;
/// Characters of one question's message.
const MESSAGE_MAX: usize = 600;
/// Field names listed per question.
const FIELDS_MAX: usize = 10;
/// Characters of one field name.
const FIELD_NAME_MAX: usize = 40;

/// The public id of the question the server keys `server_key`.
pub(crate) fn question_id(server_key: &str) -> String {
    let digest = Sha256::digest(server_key.as_bytes());
    format!("q{}", &hex::encode(digest)[..16])
}

/// Renders `requests` (server key → request object with `method` and `params`) in key order.
pub(crate) fn render(requests: &BTreeMap<String, Value>, redactor: &Redactor) -> String {
    let mut out = format!(
        "The task asks {} question(s); answer each by its id.",
        requests.len()
    );
    let mut hidden = 0;
    for (key, request) in requests {
        let line = format!("\n[{}] {}", question_id(key), describe(request, redactor));
        if hidden == 0 && out.chars().count() + line.chars().count() <= TEXT_BUDGET {
            out.push_str(&line);
        } else {
            hidden += 1;
        }
    }
    if hidden > 0 {
        out.push_str(&format!("\n(+{hidden} more not shown)"));
    }
    out
}

/// One question: its kind, message and the fields an elicitation asks for.
fn describe(request: &Value, redactor: &Redactor) -> String {
    let method = request.get("method").and_then(Value::as_str).unwrap_or("");
    let params = request.get("params");
    match method {
        "elicitation/create" => {
            let message = params
                .and_then(|p| p.get("message"))
                .and_then(Value::as_str)
                .unwrap_or("(no message)");
            let fields: Vec<String> = params
                .and_then(|p| p.get("requestedSchema"))
                .and_then(|s| s.get("properties"))
                .and_then(Value::as_object)
                .map(|props| {
                    props
                        .keys()
                        .take(FIELDS_MAX)
                        .map(|k| redactor.clean(k, FIELD_NAME_MAX))
                        .collect()
                })
                .unwrap_or_default();
            let mut text = redactor.clean(message, MESSAGE_MAX);
            if !fields.is_empty() {
                text.push_str(&format!(" (fields: {})", fields.join(", ")));
            }
            text
        }
        "sampling/createMessage" => "the server asks the client to sample a model message".into(),
        "roots/list" => "the server asks for the client's roots".into(),
        _ => "a request of a kind this driver does not know".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(message: &str) -> Value {
        json!({"method": "elicitation/create", "params": {"mode": "form", "message": message,
            "requestedSchema": {"type": "object", "properties": {"colour": {"type": "string"}}}}})
    }

    #[test]
    fn ids_are_stable_and_do_not_reveal_the_key() {
        let key = "TASK-SECRET-ID:589c76e455baa627";
        let id = question_id(key);
        assert_eq!(id, question_id(key));
        assert_eq!(id.len(), 17);
        assert!(!id.contains("589c") && !key.contains(&id[1..]));
        assert_ne!(id, question_id("TASK-SECRET-ID:other"));
    }

    #[test]
    fn renders_each_question_without_its_server_key() {
        let key = "TASK-SECRET-ID:589c".to_owned();
        let requests = BTreeMap::from([(key.clone(), ask("Which colour for TASK-SECRET-ID?"))]);
        let r = Redactor::default().with("TASK-SECRET-ID");
        let text = render(&requests, &r);
        assert!(!text.contains("TASK-SECRET-ID"), "{text}");
        assert!(text.contains(&format!(
            "[{}] Which colour for [redacted]? (fields: colour)",
            question_id(&key)
        )));
    }

    #[test]
    fn many_or_huge_questions_stay_within_the_budget() {
        let requests: BTreeMap<String, Value> = (0..100)
            .map(|i| (format!("k{i}"), ask(&"m".repeat(10_000))))
            .collect();
        let text = render(&requests, &Redactor::default());
        assert!(text.chars().count() <= TEXT_BUDGET + 40, "{}", text.len());
        assert!(text.ends_with("more not shown)"));
    }
}
