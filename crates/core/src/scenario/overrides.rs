//! `--set PATH=VALUE` and variant `set` tables: edits of the parsed TOML before validation.
//!
//! Paths: top-level keys (`seed`), `policy.NAME.FIELD`, `tenant.NAME.FIELD`, `hop.NAME.FIELD`,
//! `fault.N.FIELD` (faults have no name: N is the 0-based index), with deeper inline-table fields
//! (`hop.api.service.mean`). Arrays of tables are addressed by their `name`.

use super::error::{closest, one_line, shorten, some_names};
use toml::{Table, Value};

/// One override.
#[derive(Clone, Debug, PartialEq)]
pub struct Override {
    /// Dot-separated path.
    pub path: String,
    /// The new value.
    pub value: Value,
}

/// Parses `PATH=VALUE`; VALUE is read as TOML (`2`, `true`, `"x"`, `[1, 2]`) and otherwise as a
/// bare string (`full`, `250ms`).
pub fn parse_assignment(text: &str) -> Result<Override, String> {
    let (path, raw) = text
        .split_once('=')
        .ok_or_else(|| format!("`{}` is not PATH=VALUE; write e.g. --set policy.client.jitter=full", one_line(text)))?;
    let path = path.trim();
    if path.is_empty() || path.split('.').any(str::is_empty) {
        let (text, path) = (one_line(text), one_line(path));
        return Err(format!("`{text}`: the path `{path}` has an empty segment; write e.g. hop.api.workers=4"));
    }
    let raw = raw.trim();
    if raw.starts_with(['[', '{']) {
        // Meant as an array or table: a value TOML refuses (unbalanced, or nested too deep) is
        // reported by its reason, not turned into a string and quoted back whole.
        if let Err(e) = toml::from_str::<Table>(&format!("v = {raw}")) {
            let reason = e.message().trim().replace('\n', "; ");
            let (path, raw) = (one_line(path), shorten(raw, 40));
            return Err(format!("`{path}`: {reason}, in the value `{raw}`; write a TOML array or inline table, e.g. [1, 2] or {{ a = 1 }}"));
        }
    }
    Ok(Override { path: path.to_string(), value: parse_value(raw) })
}

/// Reads VALUE as a TOML value, falling back to a string.
pub fn parse_value(raw: &str) -> Value {
    toml::from_str::<Table>(&format!("v = {raw}"))
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| Value::String(raw.to_string()))
}

/// Applies `o` to `doc`; the error names the path and what exists instead.
pub fn apply(doc: &mut Table, o: &Override) -> Result<(), String> {
    let segments: Vec<&str> = o.path.split('.').collect();
    let mut table = doc;
    let mut i = 0;
    while i + 1 < segments.len() {
        let seg = segments[i];
        let is_array = matches!(table.get(seg), Some(Value::Array(_)));
        if is_array {
            let key = segments[i + 1];
            let Some(Value::Array(items)) = table.get_mut(seg) else { unreachable!("checked above") };
            table = find_element(items, seg, key)?;
            i += 2;
            continue;
        }
        if !table.contains_key(seg) && i == 0 {
            return Err(unknown_section(seg));
        }
        if i == 1 && segments[0] == "policy" {
            // A policy name may contain dots (`[policy."client.v2"]`): the longest run of segments
            // naming an existing policy (leaving at least the field) is the name.
            let named = (i + 2..segments.len())
                .rev()
                .map(|end| (end, segments[i..end].join(".")))
                .find(|(_, name)| table.contains_key(name));
            if let Some((end, name)) = named {
                let entry = table.get_mut(&name).expect("found above");
                table = entry.as_table_mut().ok_or_else(|| format!("`policy.{name}` is a value, not a table"))?;
                i = end;
                continue;
            }
        }
        if i == 1 && segments[0] == "policy" && !table.contains_key(seg) {
            // A misspelt policy would otherwise be created, unused, and the override lost.
            let names: Vec<&str> = table.keys().map(String::as_str).collect();
            let hint =
                closest(seg, names.iter().copied()).map(|c| format!("; did you mean `{c}`?")).unwrap_or_default();
            return Err(format!("no policy named `{}` (there are: {}){hint}", one_line(seg), some_names(&names, 10)));
        }
        let entry = table.entry(seg.to_string()).or_insert_with(|| Value::Table(Table::new()));
        table =
            entry.as_table_mut().ok_or_else(|| format!("`{seg}` is a value, not a table; set a field beside it"))?;
        i += 1;
    }
    let Some(last) = segments.get(i) else {
        return Err(format!("names a whole entry, not a field; add the field, e.g. `{}.workers`", o.path));
    };
    table.insert(last.to_string(), o.value.clone());
    Ok(())
}

fn find_element<'a>(items: &'a mut [Value], array: &str, key: &str) -> Result<&'a mut Table, String> {
    let names: Vec<String> =
        items.iter().filter_map(|v| v.get("name").and_then(Value::as_str).map(str::to_string)).collect();
    let position = match key.parse::<usize>() {
        Ok(index) if index < items.len() && array == "fault" => Some(index),
        _ => items.iter().position(|v| v.get("name").and_then(Value::as_str) == Some(key)),
    };
    match position {
        Some(p) => items[p].as_table_mut().ok_or_else(|| format!("`{array}` entries are not tables")),
        None if array == "fault" => Err(format!(
            "no fault `{key}`: faults are addressed by their 0-based index (there are {} of them)",
            items.len()
        )),
        None => {
            let hint = closest(key, names.iter().map(String::as_str))
                .map(|c| format!(" did you mean `{c}`?"))
                .unwrap_or_default();
            Err(format!("no {array} named `{}` (there are: {});{hint}", one_line(key), some_names(&names, 10)))
        }
    }
}

fn unknown_section(seg: &str) -> String {
    const TOP: [&str; 9] =
        ["name", "seed", "horizon", "bucket", "replications", "max_events", "drain_limit", "recovery_hold", "policy"];
    if ["tenant", "hop", "fault", "variant"].contains(&seg) {
        return format!("the scenario has no `{seg}` entries to change; add one to the file first");
    }
    let hint = closest(seg, TOP.iter().copied().chain(["tenant", "hop", "fault"]))
        .map(|c| format!("; did you mean `{c}`?"))
        .unwrap_or_default();
    format!("the scenario has no `{seg}`{hint}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_reach_named_entries_and_nested_fields() {
        let mut doc: Table = toml::from_str(
            "seed = 1\n[policy.client]\njitter = \"full\"\n[[hop]]\nname = \"api\"\nservice = { dist = \"constant\", mean = \"1ms\" }\n",
        )
        .expect("valid");
        for text in ["seed=7", "policy.client.jitter=equal", "hop.api.workers=4", "hop.api.service.mean=2ms"] {
            apply(&mut doc, &parse_assignment(text).expect("parses")).expect("applies");
        }
        assert_eq!(doc["seed"].as_integer(), Some(7));
        assert_eq!(doc["policy"]["client"]["jitter"].as_str(), Some("equal"));
        let hop = &doc["hop"].as_array().expect("array")[0];
        assert_eq!(hop["workers"].as_integer(), Some(4));
        assert_eq!(hop["service"]["mean"].as_str(), Some("2ms"));
        let err = apply(&mut doc, &parse_assignment("hop.apj.workers=1").expect("parses")).unwrap_err();
        assert!(err.contains("did you mean `api`"), "{err}");
    }

    /// Rule: a policy whose name contains dots (`[policy."client.v2"]`) is reachable by `--set`
    /// and the longest existing name wins over a shorter one (`client`) that is a prefix of it.
    #[test]
    fn policy_names_with_dots_are_reachable() {
        let mut doc: Table =
            toml::from_str("[policy.client]\nmax_attempts = 5\n[policy.\"client.v2\"]\nmax_attempts = 3\n")
                .expect("valid");
        apply(&mut doc, &parse_assignment("policy.client.v2.max_attempts=7").expect("parses")).expect("applies");
        apply(&mut doc, &parse_assignment("policy.client.base=1s").expect("parses")).expect("applies");
        assert_eq!(doc["policy"]["client.v2"]["max_attempts"].as_integer(), Some(7));
        assert_eq!(doc["policy"]["client"]["max_attempts"].as_integer(), Some(5));
        assert_eq!(doc["policy"]["client"]["base"].as_str(), Some("1s"));
        assert!(doc["policy"]["client"].get("v2").is_none(), "no stray `v2` table created");
    }
}
