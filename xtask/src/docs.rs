//! Turns schema descriptions into doc-comment lines that rustdoc renders without warnings.

/// Cleans a schema description: drops the data-dictionary URNs, trims lines, escapes Markdown
/// that would turn into links, HTML or code, and wraps bare URLs.
pub(crate) fn clean(description: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for raw in description.split('\n') {
        let line = raw.trim();
        if line.starts_with("urn:x-oca:ocpp:uid:") {
            continue;
        }
        if line.is_empty() {
            if lines.last().is_some_and(|l| !l.is_empty()) {
                lines.push(String::new());
            }
            continue;
        }
        lines.push(escape(line));
    }
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    lines
}

fn escape(line: &str) -> String {
    let mut words = Vec::new();
    for word in line.split(' ') {
        if word.starts_with("http://") || word.starts_with("https://") {
            let end = word.trim_end_matches(['.', ',', ')', ';']);
            words.push(format!("<{end}>{}", &word[end.len()..]));
            continue;
        }
        let mut out = String::with_capacity(word.len());
        for c in word.chars() {
            match c {
                '[' | ']' | '<' | '>' | '*' | '_' | '`' | '#' | '|' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                '\t' | '\r' => out.push(' '),
                _ => out.push(c),
            }
        }
        words.push(out);
    }
    words.join(" ")
}

/// Renders doc lines as `///` comments (indent included).
pub(crate) fn render(lines: &[String], indent: &str) -> String {
    let mut out = String::new();
    for line in lines {
        if line.is_empty() {
            out.push_str(indent);
            out.push_str("///\n");
        } else {
            out.push_str(indent);
            out.push_str("/// ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}
