//! Quoting text that came from a user or a peer in a message.
//!
//! A message quotes what was wrong (a file line, a value, a host name) so
//! that the user can find it, but the text may be a 5 MB line or hold
//! terminal control sequences. [`excerpt`] bounds and neutralizes it. It is
//! here, a pure function with no I/O, because both the core and the
//! framework crates quote user text and a framework crate never depends on
//! the core.

use std::fmt::Write as _;

/// How many characters of the text [`excerpt`] keeps.
pub const EXCERPT_CHARS: usize = 80;

/// `text` as a message may quote it: at most [`EXCERPT_CHARS`] characters,
/// followed by `…(N bytes)` (the length of the whole text) when it was
/// cut. Control characters (line breaks, escape sequences, NUL; tab
/// excepted) are written as Rust escapes (`\n`, `\u{1b}`) so that the text
/// cannot redraw the user's terminal. Text that is short and has no control
/// character is returned unchanged.
pub fn excerpt(text: &str) -> String {
    let cut = text
        .char_indices()
        .nth(EXCERPT_CHARS)
        .map_or(text.len(), |(i, _)| i);
    let mut out = String::with_capacity(cut + 24);
    for c in text[..cut].chars() {
        if c.is_control() && c != '\t' {
            let _ = write!(out, "{}", c.escape_debug());
        } else {
            out.push(c);
        }
    }
    if cut < text.len() {
        let _ = write!(out, "…({} bytes)", text.len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn short_text_is_unchanged() {
        assert_eq!(excerpt(""), "");
        assert_eq!(excerpt("just words"), "just words");
        assert_eq!(excerpt("a\tb"), "a\tb");
        let exactly = "x".repeat(EXCERPT_CHARS);
        assert_eq!(excerpt(&exactly), exactly);
    }

    #[test]
    fn long_text_is_cut_and_its_length_given() {
        let line = "y".repeat(5 * 1024 * 1024);
        let e = excerpt(&line);
        assert_eq!(e, format!("{}…(5242880 bytes)", "y".repeat(EXCERPT_CHARS)));
        // Multi-byte characters are never split.
        let wide = "é".repeat(100);
        assert_eq!(excerpt(&wide), format!("{}…(200 bytes)", "é".repeat(80)));
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(excerpt("a\nb\u{1b}[2J\0"), "a\\nb\\u{1b}[2J\\0");
    }

    proptest! {
        #[test]
        fn bounded_and_never_panics(text in "(?s).{0,300}") {
            let e = excerpt(&text);
            // 80 characters, each escaped to at most 10, plus the suffix.
            prop_assert!(e.chars().count() <= EXCERPT_CHARS * 10 + 24);
            prop_assert!(!e.chars().any(|c| c.is_control() && c != '\t'));
            if text.chars().count() <= EXCERPT_CHARS && !text.chars().any(|c| c.is_control() && c != '\t') {
                prop_assert_eq!(e, text);
            }
        }
    }
}
