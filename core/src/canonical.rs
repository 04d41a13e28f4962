//! Canonical JSON: sorted keys, compact separators, UTF-8. The basis of every fingerprint.
//!
//! Written out by hand rather than relying on `serde_json`'s map ordering, which a feature flag
//! anywhere in the dependency graph (`preserve_order`) would silently change.

use serde::Serialize;
use serde_json::Value;

/// The canonical JSON text of `value`.
pub fn to_canonical_json<T: Serialize>(value: &T) -> String {
    let v = serde_json::to_value(value).unwrap_or(Value::Null);
    let mut out = String::new();
    write_value(&v, &mut out);
    out
}

fn write_value(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write_value(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_sorted_recursively_and_compact() {
        let v = json!({"b": 1, "a": {"z": [1, {"y": null, "x": "é"}], "c": true}});
        assert_eq!(
            to_canonical_json(&v),
            r#"{"a":{"c":true,"z":[1,{"x":"é","y":null}]},"b":1}"#
        );
    }

    #[test]
    fn strings_are_escaped_as_json() {
        assert_eq!(
            to_canonical_json(&json!({"k": "a\"b\n"})),
            r#"{"k":"a\"b\n"}"#
        );
    }
}
