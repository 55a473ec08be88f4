//! Communicator attributes and hints: values a program attaches to a
//! communicator under a [`Keyval`] (`MPI_Comm_create_keyval`,
//! `MPI_Comm_set_attr`, `MPI_Comm_get_attr`, `MPI_Comm_delete_attr`),
//! the predefined attributes (`MPI_TAG_UB` and the rest, as methods), and
//! a communicator's [`Info`] hints.
//!
//! A value is stored as an `Arc<T>`: reading it hands out a clone of the
//! `Arc`, so no lock is held while the program uses it. MPI's two
//! callbacks take Rust's shape:
//!
//! - **copy** (on [`duplicate`](crate::traits::Communicator::duplicate)):
//!   chosen when the keyval is made: [`Keyval::new`] does not copy
//!   (`MPI_COMM_NULL_COPY_FN`), [`Keyval::cloned`] clones the value
//!   (`MPI_COMM_DUP_FN`), [`Keyval::with_copy`] runs a closure that
//!   returns the new communicator's value or `None` for none. Splits and
//!   creation from a group copy nothing, as in MPI.
//! - **delete** (on [`delete_attribute`](SimpleCommunicator::delete_attribute),
//!   on replacing a value, and when the communicator is freed — dropped —
//!   or, for the world and self communicators, at finalize): the
//!   communicator lets go of its `Arc`, and the value's `Drop` runs when
//!   the last `Arc` goes. Put delete-time work in `Drop`.
//!
//! A keyval can be dropped at any time (`MPI_Comm_free_keyval`): the
//! values set with it stay until deleted, and are copied on duplication
//! as it said.

use crate::error::Error;
use crate::topology::SimpleCommunicator;
use crate::ErrorClass;
use oxmpi_mpi_core::Comm;
use std::any::Any;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

type Value = Arc<dyn Any + Send + Sync>;
type CopyFn = Arc<dyn Fn(&Value) -> Option<Value> + Send + Sync>;

/// A stored value and how to copy it on duplication.
struct Entry {
    value: Value,
    copy: Option<CopyFn>,
}

/// Every communicator's attributes, by communicator and keyval.
static ATTRIBUTES: Mutex<Option<HashMap<(Comm, u64), Entry>>> = Mutex::new(None);

/// Every communicator's info hints.
static HINTS: Mutex<Option<HashMap<Comm, Info>>> = Mutex::new(None);

/// Keyval numbers handed out so far.
static NEXT_KEYVAL: AtomicU64 = AtomicU64::new(1);

fn locked<T>(m: &'static Mutex<T>) -> MutexGuard<'static, T> {
    // The maps stay consistent whatever panicked while they were locked
    // (every update is one insert or remove).
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A key for attributes of type `T` (`MPI_Comm_create_keyval`), with the
/// copy behaviour of [`duplicate`](crate::traits::Communicator::duplicate).
pub struct Keyval<T> {
    id: u64,
    copy: Option<CopyFn>,
    _values: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Keyval<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keyval")
            .field("id", &self.id)
            .field("copied", &self.copy.is_some())
            .finish()
    }
}

impl<T: Send + Sync + 'static> Keyval<T> {
    fn make(copy: Option<CopyFn>) -> Keyval<T> {
        Keyval {
            id: NEXT_KEYVAL.fetch_add(1, Ordering::Relaxed),
            copy,
            _values: PhantomData,
        }
    }

    /// A keyval whose values are not copied to a duplicate
    /// (`MPI_COMM_NULL_COPY_FN`).
    pub fn new() -> Keyval<T> {
        Keyval::make(None)
    }

    /// A keyval whose values a duplicate gets a clone of
    /// (`MPI_COMM_DUP_FN`).
    pub fn cloned() -> Keyval<T>
    where
        T: Clone,
    {
        Keyval::with_copy(|v: &T| Some(v.clone()))
    }

    /// A keyval whose values are copied to a duplicate by `copy`: it gets
    /// the old communicator's value and returns the duplicate's, or `None`
    /// to give it none (the copy callback of `MPI_Comm_create_keyval`).
    pub fn with_copy(copy: impl Fn(&T) -> Option<T> + Send + Sync + 'static) -> Keyval<T> {
        let erased: CopyFn = Arc::new(move |v: &Value| {
            let v = v.downcast_ref::<T>()?;
            copy(v).map(|c| Arc::new(c) as Value)
        });
        Keyval::make(Some(erased))
    }
}

impl<T: Send + Sync + 'static> Default for Keyval<T> {
    fn default() -> Self {
        Keyval::new()
    }
}

/// Drops `values` (outside any lock: a value's `Drop` may use
/// attributes).
fn release(values: Vec<Entry>) {
    drop(values);
}

/// Copies `from`'s attributes to the duplicate `to`, through each
/// keyval's copy behaviour, and its hints.
pub(crate) fn copy_on_duplicate(from: Comm, to: Comm) {
    let sources: Vec<(u64, Value, CopyFn)> = locked(&ATTRIBUTES)
        .as_ref()
        .map(|m| {
            m.iter()
                .filter(|((c, _), _)| *c == from)
                .filter_map(|((_, k), e)| e.copy.clone().map(|f| (*k, e.value.clone(), f)))
                .collect()
        })
        .unwrap_or_default();
    // The copy closures run without the lock (they may use attributes).
    let copies: Vec<(u64, Entry)> = sources
        .into_iter()
        .filter_map(|(k, v, f)| {
            f(&v).map(|value| {
                (
                    k,
                    Entry {
                        value,
                        copy: Some(f),
                    },
                )
            })
        })
        .collect();
    if !copies.is_empty() {
        let mut map = locked(&ATTRIBUTES);
        let map = map.get_or_insert_with(HashMap::new);
        for (k, e) in copies {
            map.insert((to, k), e);
        }
    }
    let hints = locked(&HINTS).as_ref().and_then(|m| m.get(&from).cloned());
    if let Some(hints) = hints {
        locked(&HINTS)
            .get_or_insert_with(HashMap::new)
            .insert(to, hints);
    }
}

/// Deletes every attribute and hint of `comm` (it is freed).
pub(crate) fn delete_all(comm: Comm) {
    let gone: Vec<Entry> = {
        let mut map = locked(&ATTRIBUTES);
        match map.as_mut() {
            Some(m) => {
                let keys: Vec<(Comm, u64)> =
                    m.keys().filter(|(c, _)| *c == comm).copied().collect();
                keys.iter().filter_map(|k| m.remove(k)).collect()
            }
            None => Vec::new(),
        }
    };
    release(gone);
    let hints = locked(&HINTS).as_mut().and_then(|m| m.remove(&comm));
    drop(hints);
}

impl SimpleCommunicator {
    /// Sets the attribute `key` to `value` (`MPI_Comm_set_attr`); a value
    /// it had is deleted (its `Arc` let go).
    pub fn set_attribute<T: Send + Sync + 'static>(&self, key: &Keyval<T>, value: T) {
        let entry = Entry {
            value: Arc::new(value),
            copy: key.copy.clone(),
        };
        let old = locked(&ATTRIBUTES)
            .get_or_insert_with(HashMap::new)
            .insert((self.comm, key.id), entry);
        release(old.into_iter().collect());
    }

    /// The attribute `key`, or `None` when it is not set
    /// (`MPI_Comm_get_attr`).
    pub fn attribute<T: Send + Sync + 'static>(&self, key: &Keyval<T>) -> Option<Arc<T>> {
        let value = locked(&ATTRIBUTES)
            .as_ref()?
            .get(&(self.comm, key.id))?
            .value
            .clone();
        value.downcast::<T>().ok()
    }

    /// Deletes the attribute `key` (`MPI_Comm_delete_attr`) and returns
    /// the communicator's `Arc` of it.
    ///
    /// # Errors
    /// `Arg` when the attribute is not set (MPI's `MPI_ERR_KEYVAL`),
    /// naming the communicator.
    pub fn delete_attribute<T: Send + Sync + 'static>(
        &self,
        key: &Keyval<T>,
    ) -> Result<Arc<T>, Error> {
        let old = locked(&ATTRIBUTES)
            .as_mut()
            .and_then(|m| m.remove(&(self.comm, key.id)));
        match old.and_then(|e| e.value.downcast::<T>().ok()) {
            Some(v) => Ok(v),
            None => Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "{} has no attribute of keyval {} to delete; set it with set_attribute first",
                    self.name(),
                    key.id
                ),
            )),
        }
    }

    /// The largest tag (`MPI_TAG_UB`): [`TAG_UB`](crate::TAG_UB) unless
    /// the pml's transport carries fewer tag bits.
    pub fn tag_ub(&self) -> crate::Tag {
        self.runtime.tag_ub()
    }

    /// Whether [`time`](crate::time) agrees across the processes
    /// (`MPI_WTIME_IS_GLOBAL`): `false`, each process reads its own
    /// clock.
    pub fn wtime_is_global(&self) -> bool {
        false
    }

    /// The number of processes the job can hold (`MPI_UNIVERSE_SIZE`):
    /// the world's size (processes cannot be spawned).
    pub fn universe_size(&self) -> crate::Rank {
        self.runtime.size()
    }

    /// The application number of this process (`MPI_APPNUM`): 0 (mpirun
    /// launches one application).
    pub fn appnum(&self) -> i32 {
        0
    }

    /// The rank of the host process (`MPI_HOST`): `None`, there is none
    /// (`MPI_PROC_NULL`).
    pub fn host(&self) -> Option<crate::Rank> {
        None
    }

    /// Whether every process can do I/O (`MPI_IO` is `MPI_ANY_SOURCE`):
    /// `true`.
    pub fn every_process_can_do_io(&self) -> bool {
        true
    }

    /// Replaces the communicator's hints with `info` (`MPI_Comm_set_info`).
    /// No hint changes the runtime's behaviour; they are kept, returned by
    /// [`info`](Self::info) and copied to duplicates, as Open MPI does.
    pub fn set_info(&self, info: &Info) {
        let old = locked(&HINTS)
            .get_or_insert_with(HashMap::new)
            .insert(self.comm, info.clone());
        drop(old);
    }

    /// The communicator's hints (`MPI_Comm_get_info`): what
    /// [`set_info`](Self::set_info) or
    /// [`duplicate_with_info`](Self::duplicate_with_info) gave it, or the
    /// hints it was duplicated with; empty otherwise.
    pub fn info(&self) -> Info {
        locked(&HINTS)
            .as_ref()
            .and_then(|m| m.get(&self.comm).cloned())
            .unwrap_or_default()
    }
}

/// Hints: an ordered set of string keys with string values (`MPI_Info`).
/// Keys keep the order they were first set in. `Clone` is `MPI_Info_dup`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    entries: Vec<(String, String)>,
}

/// The longest key, in bytes (`MPI_MAX_INFO_KEY`).
pub const MAX_INFO_KEY: usize = 255;
/// The longest value, in bytes (`MPI_MAX_INFO_VAL`).
pub const MAX_INFO_VAL: usize = 1024;

impl Info {
    /// An empty info (`MPI_Info_create`).
    pub fn new() -> Info {
        Info::default()
    }

    /// Sets `key` to `value` (`MPI_Info_set`); a key already there keeps
    /// its place.
    ///
    /// # Errors
    /// `Arg` for an empty key, a key longer than [`MAX_INFO_KEY`] bytes
    /// or a value longer than [`MAX_INFO_VAL`] bytes (nothing is set).
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), Error> {
        if key.is_empty() || key.len() > MAX_INFO_KEY {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "info key '{key}' is {} bytes long; a key has 1 to {MAX_INFO_KEY} bytes",
                    key.len()
                ),
            ));
        }
        if value.len() > MAX_INFO_VAL {
            return Err(Error::new(
                ErrorClass::Arg,
                format!(
                    "the value of info key '{key}' is {} bytes long; a value has at most {MAX_INFO_VAL} bytes",
                    value.len()
                ),
            ));
        }
        match self.entries.iter_mut().find(|(k, _)| k == key) {
            Some(entry) => entry.1 = value.to_string(),
            None => self.entries.push((key.to_string(), value.to_string())),
        }
        Ok(())
    }

    /// The value of `key`, or `None` (`MPI_Info_get`).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Removes `key` (`MPI_Info_delete`).
    ///
    /// # Errors
    /// `Arg` when the key is not there (`MPI_ERR_INFO_NOKEY`).
    pub fn delete(&mut self, key: &str) -> Result<(), Error> {
        match self.entries.iter().position(|(k, _)| k == key) {
            Some(i) => {
                self.entries.remove(i);
                Ok(())
            }
            None => Err(Error::new(
                ErrorClass::Arg,
                format!("info key '{key}' is not set, so it cannot be deleted"),
            )),
        }
    }

    /// The number of keys (`MPI_Info_get_nkeys`).
    pub fn nkeys(&self) -> usize {
        self.entries.len()
    }

    /// The `n`th key, from 0, in the order keys were first set, or `None`
    /// past the last (`MPI_Info_get_nthkey`).
    pub fn nth_key(&self, n: usize) -> Option<&str> {
        self.entries.get(n).map(|(k, _)| k.as_str())
    }

    /// The keys and values, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.entries.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_keeps_order_replaces_and_deletes() {
        let mut info = Info::new();
        info.set("b", "1").unwrap();
        info.set("a", "2").unwrap();
        info.set("b", "3").unwrap();
        assert_eq!(info.nkeys(), 2);
        assert_eq!(info.nth_key(0), Some("b"));
        assert_eq!(info.nth_key(1), Some("a"));
        assert_eq!(info.nth_key(2), None);
        assert_eq!(info.get("b"), Some("3"));
        assert_eq!(info.get("c"), None);
        let copy = info.clone();
        info.delete("b").unwrap();
        assert_eq!(info.iter().collect::<Vec<_>>(), [("a", "2")]);
        assert_eq!(copy.nkeys(), 2, "a dup is independent");
        let e = info.delete("b").unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        assert_eq!(
            e.to_string(),
            "info key 'b' is not set, so it cannot be deleted"
        );
    }

    #[test]
    fn info_refuses_bad_keys_and_values() {
        let mut info = Info::new();
        let e = info.set("", "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "info key '' is 0 bytes long; a key has 1 to 255 bytes"
        );
        assert!(info.set(&"k".repeat(256), "x").is_err());
        assert!(info.set(&"k".repeat(255), "x").is_ok());
        let e = info.set("big", &"v".repeat(1025)).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Arg);
        assert!(e.to_string().contains("1025 bytes long"), "{e}");
        assert_eq!(info.get("big"), None, "nothing set on a refusal");
    }

    #[test]
    fn keyvals_are_distinct_and_copy_as_chosen() {
        let a = Keyval::<u32>::new();
        let b = Keyval::<u32>::cloned();
        let c = Keyval::<String>::with_copy(|s| (s.len() < 3).then(|| format!("{s}!")));
        assert_ne!(a.id, b.id);
        assert!(a.copy.is_none() && b.copy.is_some());
        let f = c.copy.as_ref().unwrap();
        let short: Value = Arc::new("ab".to_string());
        let copied = f(&short).unwrap();
        assert_eq!(copied.downcast_ref::<String>().unwrap(), "ab!");
        let long: Value = Arc::new("abcd".to_string());
        assert!(f(&long).is_none());
    }
}
