//! The job's key-value space and its size limits.
//!
//! One [`Kvs`] holds what the ranks of a job `put` for each other (the
//! modex). It lives in the launcher's [`crate::PmiServer`], or, for a
//! singleton, in the rank's own [`crate::PmiClient`].

use std::collections::HashMap;

/// The size limits a PMI server advertises in its `maxes` reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Maxes {
    /// The longest kvs name, in bytes.
    pub kvsname_max: usize,
    /// The longest key, in bytes.
    pub keylen_max: usize,
    /// The longest value, in bytes.
    pub vallen_max: usize,
}

impl Maxes {
    /// What hydra (MPICH 4.0) advertises and oxmpi's server advertises too:
    /// `kvsname_max=256 keylen_max=64 vallen_max=1024`.
    ///
    /// An MPICH 4.0 client keeps its lines under 1024 bytes and therefore
    /// lowers the value limit it uses itself to 1024 − 256 − 64 − 30 = 674.
    pub const HYDRA: Maxes = Maxes {
        kvsname_max: 256,
        keylen_max: 64,
        vallen_max: 1024,
    };
}

impl Default for Maxes {
    /// [`Maxes::HYDRA`].
    fn default() -> Self {
        Maxes::HYDRA
    }
}

/// How many keys one rank may put into a launcher's key-value space: 1024.
///
/// The value length is bounded by [`Maxes::vallen_max`] and the key length
/// by [`Maxes::keylen_max`]; this bounds their number, so that one rank
/// that puts keys in a loop cannot make the launcher hold more than about
/// 1.1 MB for it. Real ranks put a few keys (an MPICH rank one or two per
/// transport; an oxmpi rank one per modex card chunk, at most
/// `MAX_CARD_CHUNKS` of the MPI layer's modex for each transport). Putting
/// a key again with the same value does not count again. hydra has no such
/// limit.
pub const MAX_KEYS_PER_RANK: usize = 1024;

/// Keys the server answers itself; a `put` of one of them is refused.
pub const RESERVED_KEYS: &[&str] = &[PROCESS_MAPPING_KEY, DEAD_PROCESSES_KEY];

/// The key under which MPICH programs read the node layout of the job.
pub const PROCESS_MAPPING_KEY: &str = "PMI_process_mapping";

/// The key under which MPICH's fault-tolerance code reads the list of dead
/// ranks; hydra answers it with an empty value and so does oxmpi (the
/// launcher tears a job down when a rank dies).
pub const DEAD_PROCESSES_KEY: &str = "PMI_dead_processes";

/// Why a `put` was refused. `Display` is a single protocol token (no
/// spaces), suitable for the `msg=` field of a `put_result`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PutError {
    /// The key is empty.
    #[error("empty_key")]
    EmptyKey,
    /// The key is longer than `keylen_max`.
    #[error("key_too_long_({len}_bytes,_keylen_max={max})")]
    KeyTooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The value is longer than `vallen_max`.
    #[error("value_too_long_({len}_bytes,_vallen_max={max})")]
    ValueTooLong {
        /// Its length in bytes.
        len: usize,
        /// The limit.
        max: usize,
    },
    /// The key is one the server answers itself.
    #[error("key_{key}_is_reserved")]
    Reserved {
        /// The key.
        key: String,
    },
    /// The key was already put with a different value.
    #[error("duplicate_key_{key}_with_a_different_value")]
    Duplicate {
        /// The key.
        key: String,
    },
    /// The rank has put as many keys as it may ([`MAX_KEYS_PER_RANK`]).
    #[error("too_many_keys_(a_rank_may_put_{max})")]
    TooManyKeys {
        /// The limit.
        max: usize,
    },
}

/// A key-value space with the limits of [`Maxes`]: a key may be put once
/// (putting the same value again is accepted), and every value is visible
/// to `get` as soon as it is put.
#[derive(Debug, Clone, Default)]
pub struct Kvs {
    map: HashMap<String, String>,
    maxes: Maxes,
}

impl Kvs {
    /// An empty space with these limits.
    pub fn new(maxes: Maxes) -> Self {
        Kvs {
            map: HashMap::new(),
            maxes,
        }
    }

    /// The limits.
    pub fn maxes(&self) -> Maxes {
        self.maxes
    }

    /// Stores `value` under `key`.
    ///
    /// Errors: [`PutError::EmptyKey`], [`PutError::KeyTooLong`],
    /// [`PutError::ValueTooLong`], [`PutError::Reserved`] for a key in
    /// [`RESERVED_KEYS`], [`PutError::Duplicate`] when the key holds a
    /// different value already.
    pub fn put(&mut self, key: &str, value: &str) -> Result<(), PutError> {
        check_put(self.maxes, key, value)?;
        if let Some(old) = self.map.get(key) {
            return if old == value {
                Ok(())
            } else {
                Err(PutError::Duplicate {
                    key: key.to_owned(),
                })
            };
        }
        self.map.insert(key.to_owned(), value.to_owned());
        Ok(())
    }

    /// The value stored under `key`, if any.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.map.get(key).map(String::as_str)
    }

    /// How many keys are stored.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

/// The checks of [`Kvs::put`] that do not depend on what is stored.
pub(crate) fn check_put(maxes: Maxes, key: &str, value: &str) -> Result<(), PutError> {
    if key.is_empty() {
        return Err(PutError::EmptyKey);
    }
    if key.len() > maxes.keylen_max {
        return Err(PutError::KeyTooLong {
            len: key.len(),
            max: maxes.keylen_max,
        });
    }
    if value.len() > maxes.vallen_max {
        return Err(PutError::ValueTooLong {
            len: value.len(),
            max: maxes.vallen_max,
        });
    }
    if RESERVED_KEYS.contains(&key) {
        return Err(PutError::Reserved {
            key: key.to_owned(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn put_get_and_the_duplicate_rule() {
        let mut kvs = Kvs::default();
        assert!(kvs.is_empty());
        kvs.put("card-0", "abc").unwrap();
        assert_eq!(kvs.get("card-0"), Some("abc"));
        kvs.put("card-0", "abc").unwrap();
        assert_eq!(
            kvs.put("card-0", "xyz"),
            Err(PutError::Duplicate {
                key: "card-0".into()
            })
        );
        assert_eq!(kvs.get("card-0"), Some("abc"));
        assert_eq!(kvs.get("card-1"), None);
        kvs.put("empty", "").unwrap();
        assert_eq!(kvs.get("empty"), Some(""));
        assert_eq!(kvs.len(), 2);
    }

    #[test]
    fn limits_are_those_advertised() {
        let mut kvs = Kvs::new(Maxes::HYDRA);
        kvs.put(&"k".repeat(64), &"v".repeat(1024)).unwrap();
        assert_eq!(
            kvs.put(&"k".repeat(65), "v"),
            Err(PutError::KeyTooLong { len: 65, max: 64 })
        );
        assert_eq!(
            kvs.put("k", &"v".repeat(1025)),
            Err(PutError::ValueTooLong {
                len: 1025,
                max: 1024
            })
        );
        assert_eq!(kvs.put("", "v"), Err(PutError::EmptyKey));
        assert!(matches!(
            kvs.put(PROCESS_MAPPING_KEY, "x"),
            Err(PutError::Reserved { .. })
        ));
    }

    #[test]
    fn errors_are_single_tokens() {
        for e in [
            PutError::EmptyKey,
            PutError::KeyTooLong { len: 65, max: 64 },
            PutError::ValueTooLong { len: 2, max: 1 },
            PutError::Reserved { key: "k".into() },
            PutError::Duplicate { key: "k".into() },
            PutError::TooManyKeys { max: 1024 },
        ] {
            assert!(!e.to_string().contains(' '), "{e}");
        }
    }
}
