//! Scenario errors: one message naming the file, line and column, the field, the bad value and
//! the fix.

use std::fmt;

/// A problem in a scenario file or its overrides. Always user error: exit code 2.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScenarioError {
    /// The file (or `--set` for an override).
    pub file: String,
    /// 1-based line and column, when known.
    pub location: Option<(usize, usize)>,
    /// The field's path as `--set` spells it (`hop.api.workers`), when known.
    pub field: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", one_line(&self.file))?;
        if let Some((line, col)) = self.location {
            write!(f, ":{line}:{col}")?;
        }
        write!(f, ": ")?;
        if let Some(field) = &self.field {
            write!(f, "`{}`: ", one_line(field))?;
        }
        write!(f, "{}", one_line(&self.message))
    }
}

/// `text` with control characters escaped (`\n`), so that a value quoted from the input (a key or
/// string with a newline) cannot split the one-line message.
pub fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

impl std::error::Error for ScenarioError {}

/// A semantic problem found by validation, before it is placed in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// Path of the field (`["hop", "api", "workers"]`).
    pub path: Vec<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl Invalid {
    /// An error at `path` (dot-separated) with `message`.
    pub fn at(path: &str, message: impl Into<String>) -> Invalid {
        Invalid { path: path.split('.').map(str::to_string).collect(), message: message.into() }
    }
}

/// 1-based (line, column) of byte offset `offset` in `source`.
pub fn line_col(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rfind('\n').map_or(before.chars().count(), |nl| before[nl + 1..].chars().count()) + 1;
    (line, col)
}

pub use crate::engine::text::{closest, edit_distance};

/// At most `max` of `names`, comma-separated, with "and N more" for the rest.
pub fn some_names<S: AsRef<str>>(names: &[S], max: usize) -> String {
    let shown: Vec<String> = names.iter().take(max).map(|n| shorten(n.as_ref(), 40)).collect();
    match names.len().checked_sub(max) {
        Some(rest) if rest > 0 => format!("{} and {rest} more", shown.join(", ")),
        _ => shown.join(", "),
    }
}

/// `text` cut to `max` characters (with `…`), control characters escaped: quoting user values
/// in one readable line.
pub fn shorten(text: &str, max: usize) -> String {
    let line = one_line(text);
    if line.chars().count() <= max {
        line
    } else {
        let cut: String = line.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// Adds "did you mean …?" to serde's "unknown field `x`, expected one of `a`, `b`" and
/// "unknown variant" messages, says "an integer" where serde says "i64", and keeps the message on
/// one line (the TOML parser's own messages span several).
pub fn with_suggestion(message: &str) -> String {
    let message = message.trim().replace('\n', "; ").replace("expected i64", "expected an integer");
    let message = message.replace("expected f64", "expected a number");
    let message = short_floats(&message);
    let message = message.as_str();
    let Some(rest) = message.strip_prefix("unknown field `").or_else(|| message.strip_prefix("unknown variant `"))
    else {
        return message.to_string();
    };
    let Some((word, tail)) = rest.split_once('`') else { return message.to_string() };
    let expected: Vec<&str> = tail.split('`').skip(1).step_by(2).collect();
    // The suggestion before the (long) list of what is allowed.
    match (closest(word, expected), message.split_once(", expected ")) {
        (Some(best), Some((head, list))) => format!("{head}; did you mean `{best}`? Expected {list}"),
        (Some(best), None) => format!("{message}; did you mean `{best}`?"),
        (None, _) => message.to_string(),
    }
}

/// serde's "floating point `1000…0.0`" (a value like 1e300 written out in 302 digits) in
/// exponent form, `1e300`: the value as the user wrote it, on a readable line.
fn short_floats(message: &str) -> String {
    const MARK: &str = "floating point `";
    let Some(at) = message.find(MARK) else { return message.to_string() };
    let start = at + MARK.len();
    let Some(len) = message[start..].find('`') else { return message.to_string() };
    let number = &message[start..start + len];
    match number.parse::<f64>() {
        Ok(x) if number.len() > 20 => format!("{}{x:e}{}", &message[..start], &message[start + len..]),
        _ => message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_floats_are_quoted_in_exponent_form() {
        let digits = format!("1{}.0", "0".repeat(300));
        let message = format!("invalid type: floating point `{digits}`, expected i64");
        assert_eq!(with_suggestion(&message), "invalid type: floating point `1e300`, expected an integer");
        let small = "invalid type: floating point `2.5`, expected i64";
        assert_eq!(with_suggestion(small), "invalid type: floating point `2.5`, expected an integer");
    }

    #[test]
    fn suggestions_and_positions() {
        assert_eq!(edit_distance("jiter", "jitter"), 1);
        assert_eq!(closest("fulll", ["none", "full", "equal"]), Some("full"));
        assert_eq!(closest("zzzzzz", ["none", "full"]), None);
        let m = with_suggestion("unknown field `jiter`, expected one of `jitter`, `base`");
        assert_eq!(m, "unknown field `jiter`; did you mean `jitter`? Expected one of `jitter`, `base`");
        assert_eq!(
            with_suggestion("invalid type: string \"x\", expected i64"),
            "invalid type: string \"x\", expected an integer"
        );
        assert_eq!(with_suggestion("invalid array\nexpected `]`"), "invalid array; expected `]`");
        assert_eq!(line_col("a\nbc\nd", 3), (2, 2));
        assert_eq!(one_line("unknown `\none`\t"), "unknown `\\none`\\t");
    }
}
