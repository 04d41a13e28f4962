//! HTML character references for the five markup-significant characters, shared by every page
//! this project renders (the worker's panel, the simulator's reports).
//!
//! Contract: the output of [`escape_html`] holds no `<`, `>`, `"` or `'` and no `&` other than
//! the references it writes, so it is safe as element text and as a single- or double-quoted
//! attribute value, in HTML and in XML. Nothing else is changed; callers that must also drop
//! controls or clip length do so around [`push_escaped`].

/// Appends `c` to `out`, as its character reference when it is one of `& < > " '`.
pub fn push_escaped(out: &mut String, c: char) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        '\'' => out.push_str("&#39;"),
        c => out.push(c),
    }
}

/// `text` with every markup-significant character as a character reference.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_quotes_become_references() {
        assert_eq!(
            escape_html(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        assert_eq!(escape_html("plain ünïcode"), "plain ünïcode");
    }
}
