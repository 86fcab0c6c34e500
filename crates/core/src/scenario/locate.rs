//! Finds where a field path (`hop.api.workers`) sits in the scenario source, for error messages.

use toml_edit::{Document, Item, Table, TableLike};

enum Node<'a> {
    Item(&'a Item),
    Table(&'a Table),
}

impl<'a> Node<'a> {
    fn span(&self) -> Option<std::ops::Range<usize>> {
        match self {
            Node::Item(item) => item.span(),
            Node::Table(table) => table.span(),
        }
    }

    fn table_like(&self) -> Option<&'a dyn TableLike> {
        match self {
            Node::Item(item) => item.as_table_like(),
            Node::Table(table) => Some(*table as &dyn TableLike),
        }
    }

    fn child(&self, segment: &str) -> Option<Node<'a>> {
        if let Node::Item(Item::ArrayOfTables(array)) = self {
            let named = |t: &&Table| t.get("name").and_then(Item::as_str) == Some(segment);
            // Faults have no name: overrides and messages address them by 0-based index.
            let indexed = || segment.parse::<usize>().ok().and_then(|i| array.get(i));
            return array.iter().find(named).or_else(indexed).map(Node::Table);
        }
        if let Node::Item(Item::Value(toml_edit::Value::Array(array))) = self {
            let _ = array;
            return None;
        }
        self.table_like()?.get(segment).map(Node::Item)
    }
}

/// Byte range of the value at `path` in `source`; arrays of tables are addressed by `name`.
/// Falls back to the deepest enclosing item found.
///
/// A name may contain dots (`[policy."client.v2"]`) while `path` was split at every dot, so
/// consecutive segments are also tried joined with dots; the reading that follows the most of
/// `path` wins: `policy.client.v2.max_attempts` points at the `max_attempts` line even beside a
/// `[policy.client]` table.
pub fn locate(source: &str, path: &[String]) -> Option<std::ops::Range<usize>> {
    let doc = Document::parse(source).ok()?;
    deepest(&Node::Item(doc.as_item()), path).1
}

/// A name is at most 64 characters, so it spans at most this many dot-separated segments (which
/// also bounds the work on a hostile path of thousands of segments).
const MAX_SEGMENTS_PER_NAME: usize = 33;

/// (segments matched, span of the deepest item with a span) along the best reading of `path`.
fn deepest(node: &Node<'_>, path: &[String]) -> (usize, Option<std::ops::Range<usize>>) {
    let mut best = (0, None);
    for end in 1..=path.len().min(MAX_SEGMENTS_PER_NAME) {
        let Some(next) = node.child(&path[..end].join(".")) else { continue };
        let (rest, span) = deepest(&next, &path[end..]);
        let reached = end + rest;
        if reached > best.0 {
            best = (reached, span.or_else(|| next.span()));
        }
    }
    best
}

/// The field path (`hop.api.workers`, `fault.0.p`) whose key or value covers byte `offset` of
/// `source`: names the field of a parse error that only has a position.
pub fn path_at(source: &str, offset: usize) -> Option<String> {
    let doc = Document::parse(source).ok()?;
    let mut path = Vec::new();
    descend(doc.as_table(), offset, &mut path).then(|| path.join("."))
}

fn covers(span: Option<std::ops::Range<usize>>, offset: usize) -> bool {
    span.is_some_and(|s| s.contains(&offset) || (s.is_empty() && s.start == offset))
}

/// Pushes onto `path` the deepest entry of `table` that covers `offset`; false if none does.
#[allow(
    clippy::wildcard_enum_match_arm,
    reason = "a TOML item, not a kind: only arrays of tables are named by their entries"
)]
fn descend(table: &dyn TableLike, offset: usize, path: &mut Vec<String>) -> bool {
    for (key, item) in table.iter() {
        path.push(key.to_string());
        let hit = covers(table.key(key).and_then(|k| k.span()), offset) || covers(item.span(), offset);
        let found = match item {
            Item::ArrayOfTables(array) => array.iter().enumerate().any(|(i, t)| {
                let name = t.get("name").and_then(Item::as_str).map_or_else(|| i.to_string(), str::to_string);
                path.push(name);
                // A `[[hop]]` table's span is its header; its fields are searched below it.
                let inside = descend(t, offset, path) || covers(t.span(), offset);
                if !inside {
                    path.pop();
                }
                inside
            }),
            _ => item.as_table_like().is_some_and(|t| descend(t, offset, path)) || hit,
        };
        if found {
            return true;
        }
        path.pop();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_fields_in_arrays_of_tables_and_inline_tables() {
        let src = "name = \"x\"\n[[hop]]\nname = \"a\"\n[[hop]]\nname = \"b\"\nworkers = 0\nservice = { dist = \"c\", mean = \"1ms\" }\n";
        let path = |p: &str| p.split('.').map(String::from).collect::<Vec<_>>();
        let span = locate(src, &path("hop.b.workers")).expect("found");
        assert_eq!(&src[span], "0");
        let span = locate(src, &path("hop.b.service.mean")).expect("found");
        assert_eq!(&src[span], "\"1ms\"");
        let at = |needle: &str| path_at(src, src.find(needle).expect("in source"));
        assert_eq!(at("0\n").as_deref(), Some("hop.b.workers"));
        assert_eq!(at("\"1ms\"").as_deref(), Some("hop.b.service.mean"));
        assert_eq!(at("workers").as_deref(), Some("hop.b.workers"));
        let faults = "[[fault]]\nhop = \"a\"\n[[fault]]\nhop = \"b\"\np = 2\n";
        assert_eq!(path_at(faults, faults.find("2").expect("in source")).as_deref(), Some("fault.1.p"));
        assert_eq!(&faults[locate(faults, &path("fault.1.p")).expect("found")], "2");
    }

    /// Rule: a dotted name (`[policy."client.v2"]`) does not lose the error's line and column:
    /// the field inside it is found, not the table header.
    #[test]
    fn names_with_dots_keep_the_fields_position() {
        let src = "[policy.\"client.v2\"]\njitter = \"full\"\nmax_attempts = 0\n[policy.client]\nmax_attempts = 5\n";
        let path = |p: &str| p.split('.').map(String::from).collect::<Vec<_>>();
        assert_eq!(&src[locate(src, &path("policy.client.v2.max_attempts")).expect("found")], "0");
        assert_eq!(&src[locate(src, &path("policy.client.max_attempts")).expect("found")], "5");
    }
}
