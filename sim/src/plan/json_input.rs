//! Parsing JSON that a person wrote or edited (plan files, fixtures, trace lines): the error
//! names the line, the column and the field path of the first problem, e.g.
//! `line 4, column 17, field `tasks[2].hint_secs`: invalid type: string "x", expected f64`.

use serde::de::DeserializeOwned;

/// Parses `text` as a `T`; the error says where (line, column, field path) and what.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| describe(&e))?;
    de.end().map_err(|e| at(&e, None))?;
    Ok(value)
}

fn describe(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let field = (path != ".").then_some(path);
    at(e.inner(), field.as_deref())
}

fn at(e: &serde_json::Error, field: Option<&str>) -> String {
    let full = e.to_string();
    let suffix = format!(" at line {} column {}", e.line(), e.column());
    let what = full.strip_suffix(&suffix).unwrap_or(&full);
    match field {
        Some(f) => format!(
            "line {}, column {}, field `{f}`: {what}",
            e.line(),
            e.column()
        ),
        None => format!("line {}, column {}: {what}", e.line(), e.column()),
    }
}

#[cfg(test)]
mod tests {
    use super::parse;
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Outer {
        name: String,
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    struct Inner {
        size: u32,
    }

    #[test]
    fn well_formed_input_parses() {
        let outer = parse::<Outer>("{\"name\": \"a\", \"items\": [{\"size\": 7}]}").unwrap();
        assert_eq!(outer.name, "a");
        assert_eq!(outer.items.iter().map(|i| i.size).sum::<u32>(), 7);
    }

    #[test]
    fn a_wrong_type_names_line_column_and_field_path() {
        let text = "{\n  \"name\": \"a\",\n  \"items\": [{\"size\": 1}, {\"size\": \"big\"}]\n}";
        let err = parse::<Outer>(text).unwrap_err();
        assert!(err.starts_with("line 3, column "), "{err}");
        assert!(err.contains("field `items[1].size`"), "{err}");
        assert!(err.contains("invalid type: string \"big\""), "{err}");
        assert!(!err.contains(" at line "), "position said twice: {err}");
    }

    #[test]
    fn a_missing_field_and_trailing_garbage_are_named() {
        let err = parse::<Outer>("{\"items\": []}").unwrap_err();
        assert!(err.contains("missing field `name`"), "{err}");
        let err = parse::<Inner>("{\"size\": 1} x").unwrap_err();
        assert!(err.starts_with("line 1, column 13"), "{err}");
        assert!(err.contains("trailing characters"), "{err}");
    }
}
