//! Check 8: get and put. A module that offers them moves known patterns of
//! every size of [`RDMA_SIZES`] (up to its `max_rdma_size`, and that size
//! itself) between a local buffer and a "remote" one of another rank (all
//! ranks of a cluster live in the test process, so a remote address is an
//! address of it), each get/put finished exactly once; a module that does
//! not offer one has it refused by the generated table without reaching
//! the btl, as are zero lengths, lengths above `max_rdma_size`, null
//! buffers and modules that do not exist.

use super::{connect_all, table_cluster, Subject};
use crate::adapter::Btl;
use crate::module::{flags, RdmaOutcome};
use crate::testkit::drive::{Cluster, DEADLINE};
use crate::testkit::stamp::{first_mismatch, pattern};
use std::time::Instant;

/// The get/put lengths checked (clamped to each module's
/// `max_rdma_size`, which is checked too).
pub const RDMA_SIZES: [usize; 5] = [1, 63, 4096, 65536, 1 << 20];

/// Which operation.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Op {
    Get,
    Put,
}

/// One get/put retried while it answers `WouldBlock`; whether it was
/// queued.
///
/// # Safety
///
/// As [`Cluster::get`]/[`Cluster::put`] for `local` and `remote`.
#[allow(clippy::too_many_arguments)]
unsafe fn issue<B: Btl>(
    c: &mut Cluster<'_, B>,
    op: Op,
    at: &str,
    rank: u32,
    module: u32,
    endpoint: u64,
    local: *mut u8,
    remote: u64,
    len: usize,
    cookie: u64,
) -> bool {
    let start = Instant::now();
    loop {
        let outcome = match op {
            // SAFETY: the caller's promise.
            Op::Get => unsafe { c.get(rank, module, endpoint, local, remote, len, cookie) },
            // SAFETY: the caller's promise.
            Op::Put => unsafe { c.put(rank, module, endpoint, local, remote, len, cookie) },
        };
        match outcome {
            RdmaOutcome::Done => return false,
            RdmaOutcome::Queued => return true,
            RdmaOutcome::WouldBlock if start.elapsed() < DEADLINE => {
                c.progress_all();
            }
            other => panic!("{at}: answered {other:?}"),
        }
    }
}

/// Gets and puts of every size on every module that offers them, through
/// the table or values.
pub(super) fn transfers<B: Btl>(subject: &Subject, with_table: bool) {
    let name = subject.component;
    let how = if with_table {
        "exported table"
    } else {
        "values"
    };
    // Buffers outlive the cluster (declared first, dropped last).
    let mut buffers: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    let mut c = super::cluster::<B>(subject, with_table);
    let mut checks: Vec<(usize, Op, u32, String)> = Vec::new();
    let mut queued = vec![0usize; subject.ranks as usize];
    let mut cookie = 1u64 << 40;
    for (a, b) in subject.pairs() {
        let modules = c.modules(a).to_vec();
        for (m, info) in modules.iter().enumerate() {
            let offered: Vec<Op> = [(flags::GET, Op::Get), (flags::PUT, Op::Put)]
                .into_iter()
                .filter(|(f, _)| info.flags & f != 0)
                .map(|(_, op)| op)
                .collect();
            if offered.is_empty() {
                continue;
            }
            assert!(
                info.max_rdma_size >= 1,
                "{name}: rank {a} module {m} offers get/put with a max_rdma_size of 0"
            );
            let m = m as u32;
            let ep = c.connect(a, m, b).unwrap_or_else(|e| {
                panic!("{name}: rank {a} cannot reach rank {b} on module {m}: {e}")
            });
            let mut sizes: Vec<usize> = RDMA_SIZES
                .iter()
                .copied()
                .filter(|&n| n < info.max_rdma_size)
                .collect();
            sizes.push(info.max_rdma_size.min(4 << 20));
            for op in offered {
                for &len in &sizes {
                    cookie += 1;
                    let seed = (cookie & 0xffff) as u32;
                    // Get: remote holds the pattern, local is zero; put:
                    // the other way round.
                    let (local, remote) = match op {
                        Op::Get => (vec![0u8; len], pattern(len, seed)),
                        Op::Put => (pattern(len, seed), vec![0u8; len]),
                    };
                    buffers.push((local, remote));
                    let i = buffers.len() - 1;
                    let (l, r) = &mut buffers[i];
                    let at = format!(
                        "{name} ({how}): rank {a} {op:?} of {len} bytes from rank {b} on module {m}"
                    );
                    // SAFETY: both buffers live in `buffers`, which outlives
                    // the cluster and is not touched until the cluster
                    // drained (every get/put finished); the vectors are never
                    // resized, so their heap storage does not move.
                    let q = unsafe {
                        issue(
                            &mut c,
                            op,
                            &at,
                            a,
                            m,
                            ep,
                            l.as_mut_ptr(),
                            r.as_mut_ptr() as u64,
                            len,
                            cookie,
                        )
                    };
                    if q {
                        queued[a as usize] += 1;
                    }
                    checks.push((i, op, seed, at));
                }
            }
        }
    }
    c.drain();
    c.assert_clean(&format!("{name} ({how}): get/put"));
    for (i, op, seed, at) in checks {
        let (local, remote) = &buffers[i];
        let (got, source) = match op {
            Op::Get => (local, remote),
            Op::Put => (remote, local),
        };
        if let Some(byte) = first_mismatch(source, seed) {
            panic!("{at}: the btl changed the source at byte {byte}");
        }
        if let Some(byte) = first_mismatch(got, seed) {
            panic!("{at}: the destination differs from the source at byte {byte}");
        }
    }
    for r in 0..subject.ranks {
        assert_eq!(
            c.recorder(r).counts().rdma_done,
            queued[r as usize],
            "{name} ({how}): rank {r}: on_rdma_done calls differ from the gets/puts answered Queued"
        );
    }
}

/// Gets and puts the generated table must refuse without reaching the
/// btl.
pub(super) fn refusals<B: Btl>(subject: &Subject) {
    let name = subject.component;
    let mut buf = vec![0u8; 64];
    let mut c = table_cluster::<B>(subject);
    let endpoints = connect_all(subject, &mut c);
    let target = subject.pairs().into_iter().find(|p| p.0 == 0);
    let ep = target.map_or(0, |(_, b)| endpoints[0][b as usize]);
    let remote = buf.as_ptr() as u64;
    let handle = *c.handle(0).expect("rank 0 is the table");
    let modules = c.modules(0).to_vec();
    let before = c.recorder(0).counts();
    let mut cases: Vec<(String, u32, bool, usize, Op)> = Vec::new();
    for (m, info) in modules.iter().enumerate() {
        let m = m as u32;
        for (flag, op) in [(flags::GET, Op::Get), (flags::PUT, Op::Put)] {
            if info.flags & flag == 0 {
                cases.push((
                    format!("a {op:?} on module {m}, which does not offer it"),
                    m,
                    false,
                    8,
                    op,
                ));
            } else {
                cases.push((format!("a {op:?} of 0 bytes"), m, false, 0, op));
                cases.push((format!("a {op:?} with a null buffer"), m, true, 8, op));
                if info.max_rdma_size < usize::MAX {
                    cases.push((
                        format!("a {op:?} above max_rdma_size"),
                        m,
                        false,
                        info.max_rdma_size + 1,
                        op,
                    ));
                }
            }
        }
    }
    let absent = modules.len() as u32;
    cases.push((
        format!("a get on module {absent}, which does not exist"),
        absent,
        false,
        8,
        Op::Get,
    ));
    for (what, m, null, len, op) in cases {
        let local = if null {
            std::ptr::null_mut()
        } else {
            buf.as_mut_ptr()
        };
        // SAFETY: the generated table refuses each of these calls before
        // the btl could use a buffer (what is checked); `buf` outlives
        // the cluster regardless, and lengths past it are refused.
        let outcome = unsafe {
            match op {
                Op::Get => handle.get(m, ep, local, remote, len, 1),
                Op::Put => handle.put(m, ep, local, remote, len, 1),
            }
        };
        assert_eq!(
            outcome,
            RdmaOutcome::Failed,
            "{name}: {what} must be refused by the generated table"
        );
    }
    c.progress_all();
    assert_eq!(
        c.recorder(0).counts().rdma_done,
        before.rdma_done,
        "{name}: a refused get/put was finished with on_rdma_done"
    );
    c.assert_clean(&format!("{name}: refused get/put"));
}
