//! Text helpers for messages: the nearest known word to a typo ("did you mean …?").

/// Words longer than this get no suggestion: nobody mistypes a 300,000-character name, and the
/// edit distance is quadratic.
pub const SUGGEST_MAX_CHARS: usize = 100;

/// The candidate closest to `word` by edit distance, if it is close enough to be a likely typo.
/// The work is bounded: long words get no suggestion, and candidates whose length differs by
/// more than the allowed distance are skipped without computing it.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let len = word.chars().count();
    if len > SUGGEST_MAX_CHARS {
        return None;
    }
    let limit = (len / 3).max(2);
    candidates
        .into_iter()
        .filter(|c| c.len() <= 4 * (len + limit) && c.chars().count().abs_diff(len) <= limit)
        .map(|c| (edit_distance(word, c), c))
        .filter(|&(d, _)| d <= limit)
        .min()
        .map(|(_, c)| c)
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
