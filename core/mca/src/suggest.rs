//! "Did you mean …?" for parameter names nobody declares.

/// Up to three known names closest to `name`: those at the smallest
/// Damerau–Levenshtein distance found, if it is at most 2 (or a fifth of the
/// name's length for long names), sorted by name.
///
/// The distance is at least the difference of the lengths, so names whose
/// lengths differ by more than the limit are skipped without computing it:
/// the computation takes time and memory in the product of the lengths, and
/// `name` may be a 5 MB environment variable name.
pub fn nearest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Vec<String> {
    let limit = (name.len() / 5).max(2);
    let chars = name.chars().count();
    let mut scored: Vec<(usize, &str)> = known
        .filter(|k| k.chars().count().abs_diff(chars) <= limit)
        .map(|k| (strsim::damerau_levenshtein(name, k), k))
        .filter(|(d, _)| *d <= limit)
        .collect();
    scored.sort();
    scored.dedup();
    let best = scored.first().map(|(d, _)| *d);
    scored.retain(|(d, _)| Some(*d) == best);
    scored
        .into_iter()
        .take(3)
        .map(|(_, k)| k.to_string())
        .collect()
}

/// "did you mean a, b or c?" or an empty string.
pub fn did_you_mean(suggestions: &[String]) -> String {
    match suggestions {
        [] => String::new(),
        [one] => format!("Did you mean {one}? "),
        [init @ .., last] => format!("Did you mean {} or {last}? ", init.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_close_names() {
        let known = [
            "btl_base_verbose",
            "btl_tcp_if_include",
            "btl_tcp_if_exclude",
            "pml",
        ];
        assert_eq!(
            nearest("btl_base_verbos", known.iter().copied()),
            vec!["btl_base_verbose"]
        );
        assert_eq!(
            nearest("btl_tcp_if_inclde", known.iter().copied()),
            vec!["btl_tcp_if_include"]
        );
        assert_eq!(
            nearest("btl_tcp_if_xclude", known.iter().copied()),
            vec!["btl_tcp_if_exclude"]
        );
        assert_eq!(
            nearest("mtl", ["pml", "btl", "mtl_x", "ctl"].iter().copied()),
            vec!["btl", "ctl"]
        );
        assert!(nearest("completely_different", known.iter().copied()).is_empty());
        assert_eq!(
            did_you_mean(&["a".into(), "b".into(), "c".into()]),
            "Did you mean a, b or c? "
        );
    }

    #[test]
    fn lengths_too_far_apart_are_never_close() {
        // Not compared at all (tests/long_inputs.rs shows that a 4 MB name
        // costs nothing); the result is the same as if they were.
        let huge = "b".repeat(1_000_000);
        assert!(nearest(&huge, ["btl_base_verbose", "btl"].into_iter()).is_empty());
        // Within a fifth of the length: still compared.
        let near = "b".repeat(30);
        let known = "b".repeat(25);
        assert_eq!(
            nearest(&near, [known.as_str(), "btl"].into_iter()),
            vec![known.clone()]
        );
        // Just beyond the limit (30 / 5 = 6): not a suggestion.
        let far = "b".repeat(23);
        assert!(nearest(&near, [far.as_str()].into_iter()).is_empty());
    }
}
