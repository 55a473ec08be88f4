//! CPU lists: a set of CPU indexes written the way Linux and Open MPI write
//! them, `0,2-3` (comma-separated single indexes and inclusive ranges).
//!
//! The same type carries logical indexes (the `--cpu-set` option) and OS
//! indexes (a binding, `Cpus_allowed_list` in `/proc/PID/status`); every
//! function that takes one says which.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

/// The largest CPU index a [`CpuList`] accepts (65535).
///
/// Linux supports at most 8192 CPUs (`NR_CPUS`), so this is far above any
/// real machine while keeping a hostile list such as `0-4294967295` from
/// allocating gigabytes.
pub const MAX_CPU_INDEX: usize = 65_535;

/// A set of CPU indexes, kept sorted and without duplicates.
///
/// `Default` is the empty set. `Display` writes the compact form with
/// ranges (`0,2-3`), which [`CpuList::parse`] reads back (for a non-empty
/// set).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CpuList {
    cpus: Vec<usize>,
}

/// Why a CPU list could not be parsed; every variant names the bad token.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CpuListError {
    /// The list was empty or only blanks.
    #[error("empty CPU list (expected a list like `0,2-3`)")]
    Empty,
    /// A token is not a CPU index or an inclusive range `N-M` (an empty
    /// token between two commas, a sign, letters, a stride such as `0-7:2`).
    #[error("bad CPU list token `{token}`: expected a CPU index like `3` or a range like `0-7`")]
    BadToken {
        /// The offending token, as written.
        token: String,
    },
    /// A range whose start is above its end (`5-2`).
    #[error("bad CPU list token `{token}`: the range's start is above its end")]
    ReversedRange {
        /// The offending token, as written.
        token: String,
    },
    /// An index above [`MAX_CPU_INDEX`].
    #[error("bad CPU list token `{token}`: CPU index above the maximum {max}")]
    TooLarge {
        /// The offending token, as written.
        token: String,
        /// The largest accepted index ([`MAX_CPU_INDEX`]).
        max: usize,
    },
}

impl CpuList {
    /// The empty set.
    pub fn new() -> Self {
        CpuList::default()
    }

    /// Parse a list like `0,2-3` (blanks around tokens are allowed; a final
    /// newline too, as in `/proc` files). Duplicates and overlapping ranges
    /// are merged; order does not matter.
    ///
    /// # Errors
    ///
    /// [`CpuListError::Empty`] for an empty or blank string; otherwise the
    /// variant for the first bad token: not a decimal index or `N-M`
    /// ([`BadToken`](CpuListError::BadToken)), `N > M`
    /// ([`ReversedRange`](CpuListError::ReversedRange)), an index above
    /// [`MAX_CPU_INDEX`] ([`TooLarge`](CpuListError::TooLarge)).
    pub fn parse(text: &str) -> Result<Self, CpuListError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(CpuListError::Empty);
        }
        let mut cpus = Vec::new();
        for raw in text.split(',') {
            let token = raw.trim();
            let (first, last) = match token.split_once('-') {
                Some((a, b)) => (parse_index(a, token)?, parse_index(b, token)?),
                None => {
                    let n = parse_index(token, token)?;
                    (n, n)
                }
            };
            if first > last {
                return Err(CpuListError::ReversedRange {
                    token: token.to_string(),
                });
            }
            cpus.extend(first..=last);
        }
        cpus.sort_unstable();
        cpus.dedup();
        Ok(CpuList { cpus })
    }

    /// The indexes, ascending.
    pub fn as_slice(&self) -> &[usize] {
        &self.cpus
    }

    /// Iterate over the indexes, ascending.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.cpus.iter().copied()
    }

    /// How many CPUs the set holds.
    pub fn len(&self) -> usize {
        self.cpus.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.cpus.is_empty()
    }

    /// Whether `cpu` is in the set.
    pub fn contains(&self, cpu: usize) -> bool {
        self.cpus.binary_search(&cpu).is_ok()
    }

    /// Add `cpu` (no effect if present).
    pub fn insert(&mut self, cpu: usize) {
        if let Err(at) = self.cpus.binary_search(&cpu) {
            self.cpus.insert(at, cpu);
        }
    }

    /// The CPUs in both sets.
    pub fn intersection(&self, other: &CpuList) -> CpuList {
        CpuList {
            cpus: self.iter().filter(|&c| other.contains(c)).collect(),
        }
    }

    /// Whether every CPU of `other` is in this set (true for an empty `other`).
    pub fn includes(&self, other: &CpuList) -> bool {
        other.iter().all(|c| self.contains(c))
    }

    /// Whether the two sets share a CPU.
    pub fn intersects(&self, other: &CpuList) -> bool {
        self.iter().any(|c| other.contains(c))
    }
}

fn parse_index(text: &str, token: &str) -> Result<usize, CpuListError> {
    let text = text.trim();
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CpuListError::BadToken {
            token: token.to_string(),
        });
    }
    match text.parse::<usize>() {
        Ok(n) if n <= MAX_CPU_INDEX => Ok(n),
        _ => Err(CpuListError::TooLarge {
            token: token.to_string(),
            max: MAX_CPU_INDEX,
        }),
    }
}

impl FromStr for CpuList {
    type Err = CpuListError;

    /// Same as [`CpuList::parse`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuList::parse(s)
    }
}

impl FromIterator<usize> for CpuList {
    /// Collect indexes in any order; duplicates are merged. Indexes are not
    /// checked against [`MAX_CPU_INDEX`] (they come from code, not users).
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut cpus: Vec<usize> = iter.into_iter().collect();
        cpus.sort_unstable();
        cpus.dedup();
        CpuList { cpus }
    }
}

impl fmt::Display for CpuList {
    /// The compact form: ascending, consecutive runs as `first-last`
    /// (`0,2-3`); the empty set writes nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_ranges(f, &self.cpus)
    }
}

/// Write ascending, deduplicated indexes as `0,2-3`.
pub(crate) fn write_ranges(out: &mut impl fmt::Write, sorted: &[usize]) -> fmt::Result {
    let mut i = 0;
    let mut first = true;
    while i < sorted.len() {
        let start = sorted[i];
        let mut end = start;
        while i + 1 < sorted.len() && sorted[i + 1] == end + 1 {
            i += 1;
            end = sorted[i];
        }
        if !first {
            out.write_char(',')?;
        }
        first = false;
        if start == end {
            write!(out, "{start}")?;
        } else {
            write!(out, "{start}-{end}")?;
        }
        i += 1;
    }
    Ok(())
}

impl serde::Serialize for CpuList {
    /// As its text form (`0,2-3`).
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuList {
    /// From its text form; an empty string is the empty list.
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        if text.trim().is_empty() {
            return Ok(CpuList::new());
        }
        CpuList::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_singles_and_ranges() {
        let l = CpuList::parse("0,2-3").unwrap();
        assert_eq!(l.as_slice(), &[0, 2, 3]);
        assert_eq!(l.to_string(), "0,2-3");
        let l = CpuList::parse(" 14, 15 ,0,1\n").unwrap();
        assert_eq!(l.as_slice(), &[0, 1, 14, 15]);
        assert_eq!(l.to_string(), "0-1,14-15");
        assert_eq!(CpuList::parse("3-3").unwrap().as_slice(), &[3]);
        assert_eq!(CpuList::parse("1,0-2,1").unwrap().to_string(), "0-2");
    }

    #[test]
    fn errors_name_the_token() {
        assert_eq!(CpuList::parse(""), Err(CpuListError::Empty));
        assert_eq!(CpuList::parse("  \n"), Err(CpuListError::Empty));
        let bad = |t: &str| CpuListError::BadToken {
            token: t.to_string(),
        };
        assert_eq!(CpuList::parse("0,,1"), Err(bad("")));
        assert_eq!(CpuList::parse("0,x"), Err(bad("x")));
        assert_eq!(CpuList::parse("-1"), Err(bad("-1")));
        assert_eq!(CpuList::parse("+1"), Err(bad("+1")));
        assert_eq!(CpuList::parse("0-7:2"), Err(bad("0-7:2")));
        assert_eq!(CpuList::parse("1-2-3"), Err(bad("1-2-3")));
        assert_eq!(
            CpuList::parse("0,5-2"),
            Err(CpuListError::ReversedRange {
                token: "5-2".into()
            })
        );
        let err = CpuList::parse("0-99999999999999999999999").unwrap_err();
        assert!(
            matches!(err, CpuListError::TooLarge { ref token, .. } if token == "0-99999999999999999999999")
        );
        assert!(err.to_string().contains("`0-99999999999999999999999`"));
        assert!(CpuList::parse("65536").is_err());
        assert!(CpuList::parse("65535").is_ok());
    }

    #[test]
    fn set_operations() {
        let a = CpuList::parse("0-3").unwrap();
        let b = CpuList::parse("2-5").unwrap();
        assert_eq!(a.intersection(&b).to_string(), "2-3");
        assert!(a.intersects(&b));
        assert!(!a.includes(&b));
        assert!(a.includes(&CpuList::parse("1,3").unwrap()));
        let mut c = CpuList::new();
        assert!(c.is_empty());
        assert_eq!(c.to_string(), "");
        c.insert(4);
        c.insert(1);
        c.insert(4);
        assert_eq!(c.as_slice(), &[1, 4]);
        assert_eq!(
            [5, 3, 4].into_iter().collect::<CpuList>().to_string(),
            "3-5"
        );
    }
}
