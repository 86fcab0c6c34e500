//! Finds where a field path (`hop.api.workers`) sits in the scenario source, for error messages.

use toml_edit::{ImDocument, Item, Table, TableLike};

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
            return array.iter().find(named).map(Node::Table);
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
pub fn locate(source: &str, path: &[String]) -> Option<std::ops::Range<usize>> {
    let doc = ImDocument::parse(source).ok()?;
    let mut node = Node::Item(doc.as_item());
    let mut best = None;
    for segment in path {
        let Some(next) = node.child(segment) else { break };
        if let Some(span) = next.span() {
            best = Some(span);
        }
        node = next;
    }
    best
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
    }
}
