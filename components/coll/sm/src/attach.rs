//! Making a communicator's segment at its first sm collective: the
//! lowest-ranked member creates the file, the others map it, and the
//! creator removes the file once all have, so only the mappings keep the
//! memory and nothing is left behind however the processes end.

use crate::segment::{Segment, Slots};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// How long and how to wait while the segment is being made.
pub struct Patience<'a> {
    /// Give up after this long.
    pub timeout: Duration,
    /// One round of the MPI layer's progress engine (run between checks).
    pub progress: &'a dyn Fn(),
}

impl Patience<'_> {
    /// Waits until `ready` answers `Some`, checking often at first, then
    /// every millisecond.
    fn until<T>(
        &self,
        mut ready: impl FnMut() -> Result<Option<T>, String>,
    ) -> Result<Option<T>, String> {
        let start = Instant::now();
        let mut tries = 0u32;
        loop {
            if let Some(v) = ready()? {
                return Ok(Some(v));
            }
            if start.elapsed() > self.timeout {
                return Ok(None);
            }
            tries = tries.saturating_add(1);
            (self.progress)();
            if tries < 1000 {
                std::thread::yield_now();
            } else {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

/// Creates the segment at `path` for `members` processes with `slots`
/// each, waits until the others mapped it, and removes the file.
///
/// # Errors
///
/// The file cannot be made, or the others did not map it in time (the
/// file is removed then too); the message names the file.
pub fn create(
    path: &Path,
    members: usize,
    slots: Slots,
    patience: &Patience<'_>,
) -> Result<Segment, String> {
    let seg = Segment::create(path, members, slots)?;
    let others = members as u32 - 1;
    let all =
        patience.until(|| Ok((seg.attached().load(Ordering::Acquire) >= others).then_some(())));
    let unlinked = seg.unlink();
    match all? {
        Some(()) => unlinked.map(|()| seg),
        None => Err(format!(
            "only {} of the other {others} processes mapped the shared segment {} within {:?}; \
             are they all calling this collective? (coll_sm_attach_timeout_ms sets the wait)",
            seg.attached().load(Ordering::Acquire),
            path.display(),
            patience.timeout
        )),
    }
}

/// Maps the segment at `path` that job rank `creator` makes for
/// `members` processes, waiting for it to appear, and says so to the
/// creator.
///
/// # Errors
///
/// The file did not appear in time, or is not a segment for `members`;
/// the message names the file and its creator.
pub fn attach(
    path: &Path,
    members: usize,
    creator: u32,
    patience: &Patience<'_>,
) -> Result<Segment, String> {
    match patience.until(|| Segment::attach(path, members))? {
        Some(seg) => {
            seg.attached().fetch_add(1, Ordering::AcqRel);
            Ok(seg)
        }
        None => Err(format!(
            "the shared segment {} that job rank {creator} makes did not appear within {:?}; is \
             that rank calling this collective? (coll_sm_attach_timeout_ms sets the wait)",
            path.display(),
            patience.timeout
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::segment::slots;

    fn patience(ms: u64) -> Patience<'static> {
        Patience {
            timeout: Duration::from_millis(ms),
            progress: &|| {},
        }
    }

    #[test]
    fn members_map_the_creators_file_which_is_then_gone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coll-sm-1-5-0");
        std::thread::scope(|s| {
            let attachers: Vec<_> = (0..3)
                .map(|_| s.spawn(|| attach(&path, 4, 0, &patience(20_000)).unwrap()))
                .collect();
            std::thread::sleep(Duration::from_millis(20));
            let made = create(&path, 4, slots(4096, 2, 3), &patience(20_000)).unwrap();
            assert!(!path.exists(), "the creator removed the file");
            for a in attachers {
                let seen = a.join().unwrap();
                seen.done(2).store(9, Ordering::Release);
                assert_eq!(made.done(2).load(Ordering::Acquire), 9);
            }
        });
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn waits_end_with_errors_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coll-sm-1-5-0");
        let why = attach(&path, 2, 0, &patience(30)).unwrap_err();
        assert!(
            why.contains("coll-sm-1-5-0") && why.contains("job rank 0"),
            "{why}"
        );
        let why = create(&path, 3, slots(4096, 2, 3), &patience(30)).unwrap_err();
        assert!(
            why.contains("only 0 of the other 2 processes") && why.contains("coll-sm-1-5-0"),
            "{why}"
        );
        assert!(!path.exists(), "a failed creation leaves nothing behind");
    }
}
