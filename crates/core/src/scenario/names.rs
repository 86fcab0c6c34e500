//! Names: the scenario's (it names the output directory), and the tenants', hops' and variants'
//! (they address entries in `--set` paths and messages).

use super::checks::V;
use super::error::{shorten, Invalid};

/// Longest scenario, tenant, hop, policy or variant name, in characters.
pub const NAME_MAX_CHARS: usize = 64;

/// The scenario name is a label that also names the default output directory
/// (`output/NAME`): 1–64 ASCII letters, digits, `-`, `_` or `.`, starting with a letter or digit,
/// so it can never be empty, `.`, `..`, absolute, contain a path separator or a control character.
pub fn scenario_name(name: &str) -> V<()> {
    let chars = name.chars().count();
    let allowed = |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.');
    let problem = if name.is_empty() {
        Some("is empty".to_string())
    } else if chars > NAME_MAX_CHARS {
        Some(format!("is {chars} characters long (at most {NAME_MAX_CHARS})"))
    } else if let Some(c) = name.chars().find(|c| !allowed(*c)) {
        Some(format!("`{}` contains {}", shorten(name, 40), describe_char(c)))
    } else if !name.starts_with(|c: char| c.is_ascii_alphanumeric()) {
        Some(format!("`{name}` does not start with a letter or digit"))
    } else {
        None
    };
    match problem {
        None => Ok(()),
        Some(p) => Err(Invalid::at(
            "name",
            format!("{p}; the name is a label that also names the output directory output/NAME: use 1-{NAME_MAX_CHARS} letters, digits, `-`, `_` or `.`, starting with a letter or digit, e.g. name = \"outage-herd\" (choose where files go with --out)"),
        )),
    }
}

fn describe_char(c: char) -> String {
    match c {
        '/' | '\\' => format!("a path separator `{c}`"),
        c if c.is_control() => format!("a control character `{}`", c.escape_default()),
        ' ' => "a space".to_string(),
        c => format!("the character `{c}`"),
    }
}

/// Tenant, hop and variant names address entries in `--set` paths and messages
/// (`hop.NAME.workers`): non-empty, at most 64 characters, no `.` and no control character.
pub(super) fn check_name(name: &str, kind: &str, index: usize) -> V<()> {
    let chars = name.chars().count();
    if name.trim().is_empty() || name.contains('.') || name.chars().any(char::is_control) || chars > NAME_MAX_CHARS {
        return Err(Invalid::at(
            &format!("{kind}.{index}.name"),
            format!("{kind} name `{}` must be non-empty, at most {NAME_MAX_CHARS} characters and contain no `.` or control character (it is used in paths like `{kind}.NAME.field`)", shorten(name, 40)),
        ));
    }
    Ok(())
}

/// The index of the first entry whose name repeats an earlier one (O(n log n), not O(n²)).
pub fn first_duplicate<'a>(names: impl IntoIterator<Item = &'a str>) -> Option<usize> {
    let mut seen = std::collections::HashSet::new();
    names.into_iter().position(|n| !seen.insert(n))
}
