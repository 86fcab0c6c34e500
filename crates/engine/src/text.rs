//! Text helpers for messages: the nearest known word to a typo ("did you mean …?"), words
//! wrapped to a width, and numbers written for people (`12,345`, `9.24`).

/// Words longer than this get no suggestion: nobody mistypes a 300,000-character name, and the
/// edit distance is quadratic.
pub const SUGGEST_MAX_CHARS: usize = 100;

/// `1 replication`, `10 replications`: a count with its noun, singular for one.
pub fn count_of(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo.
/// The work is bounded: long words get no suggestion, and candidates whose length differs by
/// more than the allowed distance are skipped without computing it.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = word.chars().count();
    if len > SUGGEST_MAX_CHARS {
        return None;
    }
    let limit = (len / 3).max(2);
    let candidates: Vec<&'a str> = candidates.into_iter().collect();
    candidates
        .iter()
        .copied()
        .filter(|c| c.len() <= 4 * (len + limit) && c.chars().count().abs_diff(len) <= limit)
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, c)| c)
        .or_else(|| prefixed(word, &candidates))
}

/// A short word that begins a candidate's name (`aws` for `aws-standard`): the shortest such
/// candidate, so a family name leads to its first member.
fn prefixed<'a>(word: &str, candidates: &[&'a str]) -> Option<&'a str> {
    if word.chars().count() < 2 {
        return None;
    }
    candidates.iter().copied().filter(|c| c.starts_with(word)).min_by_key(|c| (c.len(), *c))
}

/// Levenshtein distance over chars.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let next = (diag + usize::from(ca != cb)).min(row[j] + 1).min(row[j + 1] + 1);
            diag = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// `text` broken at spaces into lines of at most `width` columns (a longer word stands alone):
/// the first line indented by `indent` spaces, the continuation lines by two more; each line's
/// trailing spaces trimmed.
pub fn wrap_words(text: &str, indent: usize, width: usize) -> Vec<String> {
    let mut lines = Vec::new();
    let mut current = " ".repeat(indent);
    let mut has_word = false;
    for word in text.split(' ') {
        if has_word && current.chars().count() + 1 + word.chars().count() > width {
            lines.push(current.trim_end().to_string());
            current = " ".repeat(indent + 2);
            has_word = false;
        }
        if has_word {
            current.push(' ');
        }
        current.push_str(word);
        has_word = true;
    }
    lines.push(current.trim_end().to_string());
    lines
}

/// `12,345` for large values, three significant digits for small ones.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return "n/a".into();
    }
    let a = x.abs();
    if a >= 1000.0 {
        let digits = format!("{:.0}", a);
        let mut grouped = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i) % 3 == 0 {
                grouped.push(',');
            }
            grouped.push(c);
        }
        format!("{}{grouped}", if x < 0.0 { "-" } else { "" })
    } else if a >= 100.0 || a == 0.0 {
        format!("{x:.0}")
    } else if a >= 10.0 {
        format!("{x:.1}")
    } else if a >= 1.0 {
        format!("{x:.2}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(2, 9) as usize;
        format!("{x:.decimals$}")
    }
}

/// [`fmt_num`] without trailing zeros, for tick labels (`5`, `0.2`, `12,000`).
pub fn fmt_tick(x: f64) -> String {
    let text = fmt_num(x);
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        text
    }
}

#[cfg(test)]
mod tests {
    use super::{closest, fmt_num, fmt_tick};

    #[test]
    fn a_family_name_suggests_its_first_member() {
        let names = ["aws-standard", "aws-legacy", "grpc-default"];
        assert_eq!(closest("aws", names), Some("aws-legacy"));
        assert_eq!(closest("grpc", names), Some("grpc-default"));
        assert_eq!(closest("zzz", names), None);
    }

    #[test]
    fn numbers_read_like_a_report() {
        assert_eq!(fmt_num(48653.2), "48,653");
        assert_eq!(fmt_num(1_234_567.0), "1,234,567");
        assert_eq!(fmt_num(-1_234_567.0), "-1,234,567");
        assert_eq!(fmt_num(9.244), "9.24");
        assert_eq!(fmt_num(0.0123), "0.0123");
        assert_eq!(fmt_num(0.0), "0");
        assert_eq!(fmt_tick(5.0), "5");
        assert_eq!(fmt_tick(0.2), "0.2");
    }
}
