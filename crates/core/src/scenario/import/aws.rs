//! AWS shared config file (`~/.aws/config`): a profile's `retry_mode` and `max_attempts`.
//!
//! `standard` and `adaptive` are the SDKs' standard retry strategy (full jitter, retry quota):
//! the import names the `aws-standard-2026` preset (change it with `preset = "aws-standard"`
//! in the scenario for the pre-2026 values). `adaptive` adds a client-side rate limiter (CUBIC)
//! that is not simulated. `legacy` follows botocore's legacy mode: delay rand(0, 1) · 2^(n−1)
//! seconds, 5 attempts, no retry quota. `max_attempts` counts the first try.

use super::Imported;

/// Imports profile `select` (default: `default`).
pub fn import(text: &str, select: Option<&str>) -> Result<Imported, String> {
    let wanted = select.unwrap_or("default");
    let mut profiles: Vec<String> = Vec::new();
    let mut entries: Vec<(usize, String, String)> = Vec::new();
    let mut current: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(header) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let header = header.trim();
            let name = header.strip_prefix("profile ").map(str::trim).unwrap_or(header);
            let is_profile = header == "default" || header.starts_with("profile ");
            if is_profile {
                if profiles.iter().any(|p| p == name) {
                    return Err(format!(
                        "line {}: profile `{name}` is defined twice; the SDKs' parsers refuse a repeated section: merge them",
                        i + 1
                    ));
                }
                profiles.push(name.to_string());
            }
            current = is_profile.then(|| name.to_string());
            continue;
        }
        if current.as_deref() != Some(wanted) {
            continue;
        }
        let (k, v) = line.split_once('=').ok_or_else(|| format!("line {}: `{line}` is not `key = value`", i + 1))?;
        let key = k.trim().to_string();
        if let Some((first, ..)) = entries.iter().find(|(_, seen, _)| *seen == key) {
            return Err(format!(
                "[{wanted}] {key} (line {}): given twice (first on line {first}); the SDKs' parsers refuse a repeated key: keep one",
                i + 1
            ));
        }
        entries.push((i + 1, key, v.trim().to_string()));
    }
    if !profiles.iter().any(|p| p == wanted) {
        return Err(format!(
            "no profile `{wanted}` (there are: {}); choose one with select = \"NAME\"",
            profiles.join(", ")
        ));
    }
    let mut out = Imported::default();
    let mut mode = None;
    let mut attempts = None;
    for (line, key, value) in &entries {
        let at = format!("[{wanted}] {key} (line {line})");
        match key.as_str() {
            "retry_mode" => mode = Some((value.to_ascii_lowercase(), at)),
            "max_attempts" => {
                let n: i64 = value.parse().map_err(|_| format!("{at}: `{value}` is not an integer"))?;
                attempts = Some((super::attempts_at(n, &at, true)?, at));
            }
            // Never quote a credential's value: name the key only.
            other => out.unsupported(&format!("[{wanted}] {other}"), "not a retry setting"),
        }
    }
    let (mode, mode_at) =
        mode.unwrap_or_else(|| ("legacy".into(), format!("[{wanted}] retry_mode (SDK default legacy)")));
    match mode.as_str() {
        "standard" | "adaptive" => {
            out.policy.preset = Some("aws-standard-2026".into());
            for f in
                ["jitter", "base", "multiplier", "cap", "max_attempts", "throttle_base", "honor_retry_after", "budget"]
            {
                out.record_key(f, &format!("{mode_at} = {mode} → preset aws-standard-2026"));
            }
            if mode == "adaptive" {
                out.unsupported(
                    &format!("{mode_at} = adaptive"),
                    "the adaptive mode's client-side rate limiter (CUBIC token bucket) is not simulated; the standard strategy is used",
                );
            }
        }
        "legacy" => {
            out.policy.jitter = Some("full".into());
            out.policy.base = Some(crate::scenario::raw::Dur(crate::engine::NS_PER_S));
            out.policy.multiplier = Some(2.0);
            out.policy.cap = Some(crate::scenario::raw::Dur(20 * crate::engine::NS_PER_S));
            out.policy.max_attempts = Some(5);
            out.policy.retry_on = Some(vec!["transient".into(), "throttling".into(), "timeout".into()]);
            for f in ["jitter", "base", "multiplier", "cap", "max_attempts", "retry_on"] {
                out.record_key(f, &format!("{mode_at} = legacy (botocore: rand·2^(n−1) s, 5 attempts)"));
            }
        }
        other => return Err(format!("{mode_at}: `{other}` is not a retry mode; use legacy, standard or adaptive")),
    }
    if let Some((n, at)) = attempts {
        out.policy.max_attempts = Some(n);
        out.record_key("max_attempts", &at);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: &str = include_str!("../../../../../scenarios/data/aws-config");

    #[test]
    fn profiles_map_to_the_sdk_retry_modes() {
        let std = import(CONFIG, Some("orders")).expect("imports");
        assert_eq!(std.policy.preset.as_deref(), Some("aws-standard-2026"));
        assert_eq!(std.policy.max_attempts, Some(5));
        assert!(std.sources["max_attempts"].contains("line"));
        // Credentials and region are named, never their values.
        assert!(std.warnings.iter().any(|w| w.contains("region")), "{:?}", std.warnings);
        assert!(!std.warnings.join(" ").contains("eu-west-1"));
        let legacy = import(CONFIG, None).expect("default profile");
        assert_eq!((legacy.policy.jitter.as_deref(), legacy.policy.max_attempts), (Some("full"), Some(5)));
        let adaptive = import(CONFIG, Some("batch")).expect("adaptive");
        assert!(adaptive.warnings.iter().any(|w| w.contains("CUBIC")));
        assert!(import(CONFIG, Some("nope")).unwrap_err().contains("orders"));
    }
}
