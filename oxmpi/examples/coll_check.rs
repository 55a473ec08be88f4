//! Checks every collective of the Rust API on `MPI_COMM_WORLD` and
//! `MPI_COMM_SELF` against a sequential reference computed on every
//! rank: barrier, broadcast, gather, scatter, all-gather, all-to-all,
//! reduce, all-reduce (also in place), reduce-scatter-block, scan and
//! exclusive scan, with predefined operations over several element types
//! and with non-commutative user operations (which check the rank order),
//! for element counts from 0 to 65 536 and every root.
//!
//! Run: `mpirun -n 4 coll_check [COUNTS]` (any number of ranks; COUNTS a
//! comma-separated list, default `0,1,7,64,1000,65536`). Every rank
//! prints `coll ok (<n> checks)` when all passed; otherwise the first
//! difference, and the job is aborted.

#![forbid(unsafe_code)]

use oxmpi::collective::{Partition, PartitionMut, SystemOperation, UserOperation};
use oxmpi::topology::SimpleCommunicator;
use oxmpi::traits::*;
use std::process::ExitCode;

type BoxError = Box<dyn std::error::Error>;

/// What rank `r` contributes: element `i` of its `i64` data.
fn data(r: i32, i: usize, salt: i64) -> i64 {
    (i64::from(r) + 1) * 1_000_003 + i as i64 * 7919 + salt
}

fn same<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> Result<(), BoxError> {
    if got.len() != want.len() {
        return Err(format!("{what}: {} elements, expected {}", got.len(), want.len()).into());
    }
    match got.iter().zip(want).position(|(g, w)| g != w) {
        None => Ok(()),
        Some(k) => Err(format!(
            "{what}: element {k} is {:?}, expected {:?}",
            got[k], want[k]
        )
        .into()),
    }
}

struct Checker<'a> {
    comm: &'a SimpleCommunicator,
    name: &'static str,
    checks: usize,
}

impl Checker<'_> {
    fn rank(&self) -> i32 {
        self.comm.rank()
    }

    fn size(&self) -> i32 {
        self.comm.size()
    }

    fn ok(&mut self) {
        self.checks += 1;
    }

    fn all(&mut self, counts: &[usize]) -> Result<(), BoxError> {
        self.comm.barrier()?;
        self.ok();
        for &n in counts {
            self.broadcast(n)?;
            self.gather_scatter(n)?;
            self.all_gather_all_to_all(n)?;
            self.reductions(n)?;
            self.user_operations(n)?;
            self.scans(n)?;
            self.varcount_and_in_place(n)?;
        }
        self.comm.barrier()?;
        Ok(())
    }

    fn broadcast(&mut self, n: usize) -> Result<(), BoxError> {
        for root in 0..self.size() {
            let want: Vec<i64> = (0..n).map(|i| data(root, i, 1)).collect();
            let mut buf = if self.rank() == root {
                want.clone()
            } else {
                vec![0i64; n]
            };
            self.comm
                .process_at_rank(root)
                .broadcast_into(&mut buf[..])?;
            same(
                &format!("{}: broadcast of {n} from {root}", self.name),
                &buf,
                &want,
            )?;
            self.ok();
        }
        Ok(())
    }

    fn gather_scatter(&mut self, n: usize) -> Result<(), BoxError> {
        let size = self.size();
        for root in 0..size {
            let mine: Vec<i64> = (0..n).map(|i| data(self.rank(), i, 2)).collect();
            let everyone: Vec<i64> = (0..size)
                .flat_map(|r| (0..n).map(move |i| data(r, i, 2)))
                .collect();
            let p = self.comm.process_at_rank(root);
            if self.rank() == root {
                let mut all = vec![0i64; n * size as usize];
                p.gather_into_root(&mine[..], &mut all[..])?;
                same(
                    &format!("{}: gather of {n} at {root}", self.name),
                    &all,
                    &everyone,
                )?;
                let mut back = vec![0i64; n];
                p.scatter_into_root(&everyone[..], &mut back[..])?;
                same(
                    &format!("{}: scatter of {n} from {root}", self.name),
                    &back,
                    &mine,
                )?;
            } else {
                p.gather_into(&mine[..])?;
                let mut back = vec![0i64; n];
                p.scatter_into(&mut back[..])?;
                same(
                    &format!("{}: scatter of {n} from {root}", self.name),
                    &back,
                    &mine,
                )?;
            }
            self.ok();
        }
        Ok(())
    }

    fn all_gather_all_to_all(&mut self, n: usize) -> Result<(), BoxError> {
        let (rank, size) = (self.rank(), self.size());
        let mine: Vec<i64> = (0..n).map(|i| data(rank, i, 3)).collect();
        let everyone: Vec<i64> = (0..size)
            .flat_map(|r| (0..n).map(move |i| data(r, i, 3)))
            .collect();
        let mut all = vec![0i64; n * size as usize];
        self.comm.all_gather_into(&mine[..], &mut all[..])?;
        same(
            &format!("{}: all_gather of {n}", self.name),
            &all,
            &everyone,
        )?;
        // Block j of rank r's send: what r sends to j.
        let block = |r: i32, j: i32, i: usize| data(r, i, 4) * 31 + i64::from(j);
        let send: Vec<i64> = (0..size)
            .flat_map(|j| (0..n).map(move |i| block(rank, j, i)))
            .collect();
        let want: Vec<i64> = (0..size)
            .flat_map(|r| (0..n).map(move |i| block(r, rank, i)))
            .collect();
        let mut got = vec![0i64; n * size as usize];
        self.comm.all_to_all_into(&send[..], &mut got[..])?;
        same(&format!("{}: all_to_all of {n}", self.name), &got, &want)?;
        self.ok();
        Ok(())
    }

    fn reductions(&mut self, n: usize) -> Result<(), BoxError> {
        let (rank, size) = (self.rank(), self.size());
        // i64 sum, f64 max, i32 min, u32 band, u8 lxor (0/1 result).
        let sum_in: Vec<i64> = (0..n).map(|i| data(rank, i, 5)).collect();
        let sum_want: Vec<i64> = (0..n)
            .map(|i| {
                (0..size)
                    .map(|r| data(r, i, 5))
                    .fold(0i64, i64::wrapping_add)
            })
            .collect();
        let max_in: Vec<f64> = (0..n)
            .map(|i| ((rank as usize * 37 + i * 11) % 101) as f64 - 50.5)
            .collect();
        let max_want: Vec<f64> = (0..n)
            .map(|i| {
                (0..size)
                    .map(|r| ((r as usize * 37 + i * 11) % 101) as f64 - 50.5)
                    .fold(f64::MIN, f64::max)
            })
            .collect();
        let min_in: Vec<i32> = (0..n)
            .map(|i| ((rank as i64 * 7 + i as i64 * 13) % 97 - 48) as i32)
            .collect();
        let min_want: Vec<i32> = (0..n)
            .map(|i| {
                (0..size)
                    .map(|r| ((r as i64 * 7 + i as i64 * 13) % 97 - 48) as i32)
                    .min()
                    .unwrap_or(0)
            })
            .collect();
        let band_in: Vec<u32> = (0..n)
            .map(|i| !(1u32 << ((rank as usize + i) % 32)))
            .collect();
        let band_want: Vec<u32> = (0..n)
            .map(|i| (0..size).fold(u32::MAX, |a, r| a & !(1u32 << ((r as usize + i) % 32))))
            .collect();
        let lxor_in: Vec<u8> = (0..n)
            .map(|i| (rank as usize + i).is_multiple_of(3) as u8)
            .collect();
        let lxor_want: Vec<u8> = (0..n)
            .map(|i| {
                ((0..size)
                    .filter(|&r| (r as usize + i).is_multiple_of(3))
                    .count()
                    % 2) as u8
            })
            .collect();

        let mut got = vec![0i64; n];
        self.comm
            .all_reduce_into(&sum_in[..], &mut got[..], SystemOperation::sum())?;
        same(
            &format!("{}: all_reduce sum of {n}", self.name),
            &got,
            &sum_want,
        )?;
        let mut buf = sum_in.clone();
        self.comm
            .all_reduce_in_place(&mut buf[..], SystemOperation::sum())?;
        same(
            &format!("{}: all_reduce in place of {n}", self.name),
            &buf,
            &sum_want,
        )?;
        let mut got = vec![0f64; n];
        self.comm
            .all_reduce_into(&max_in[..], &mut got[..], SystemOperation::max())?;
        same(
            &format!("{}: all_reduce max of {n}", self.name),
            &got,
            &max_want,
        )?;
        let mut got = vec![0i32; n];
        self.comm
            .all_reduce_into(&min_in[..], &mut got[..], SystemOperation::min())?;
        same(
            &format!("{}: all_reduce min of {n}", self.name),
            &got,
            &min_want,
        )?;
        let mut got = vec![0u32; n];
        self.comm
            .all_reduce_into(&band_in[..], &mut got[..], SystemOperation::bitwise_and())?;
        same(
            &format!("{}: all_reduce band of {n}", self.name),
            &got,
            &band_want,
        )?;
        let mut got = vec![0u8; n];
        self.comm
            .all_reduce_into(&lxor_in[..], &mut got[..], SystemOperation::logical_xor())?;
        same(
            &format!("{}: all_reduce lxor of {n}", self.name),
            &got,
            &lxor_want,
        )?;
        self.ok();

        for root in 0..size {
            let p = self.comm.process_at_rank(root);
            if rank == root {
                let mut got = vec![0i64; n];
                p.reduce_into_root(&sum_in[..], &mut got[..], SystemOperation::sum())?;
                same(
                    &format!("{}: reduce sum of {n} at {root}", self.name),
                    &got,
                    &sum_want,
                )?;
            } else {
                p.reduce_into(&sum_in[..], SystemOperation::sum())?;
            }
            self.ok();
        }

        // Reduce-scatter-block: each rank sends `size` blocks of n.
        let send: Vec<i64> = (0..n * size as usize).map(|i| data(rank, i, 6)).collect();
        let want: Vec<i64> = (0..n)
            .map(|i| {
                let k = rank as usize * n + i;
                (0..size)
                    .map(|r| data(r, k, 6))
                    .fold(0i64, i64::wrapping_add)
            })
            .collect();
        let mut got = vec![0i64; n];
        self.comm
            .reduce_scatter_block_into(&send[..], &mut got[..], SystemOperation::sum())?;
        same(
            &format!("{}: reduce_scatter_block of {n}", self.name),
            &got,
            &want,
        )?;
        self.ok();
        Ok(())
    }

    /// Non-commutative (associative) operations: "the left operand" and
    /// "the right operand" reduce in rank order to rank 0's and the last
    /// rank's values; any other order gives another rank's.
    fn user_operations(&mut self, n: usize) -> Result<(), BoxError> {
        let (rank, size) = (self.rank(), self.size());
        let mine: Vec<u64> = (0..n).map(|i| data(rank, i, 8) as u64).collect();
        let first: Vec<u64> = (0..n).map(|i| data(0, i, 8) as u64).collect();
        let last: Vec<u64> = (0..n).map(|i| data(size - 1, i, 8) as u64).collect();
        let mut got = vec![0u64; n];
        let left = UserOperation::non_commutative(|input: &[u64], inout: &mut [u64]| {
            inout.copy_from_slice(input);
        });
        self.comm.all_reduce_into(&mine[..], &mut got[..], left)?;
        same(
            &format!("{}: all_reduce with a left projection of {n}", self.name),
            &got,
            &first,
        )?;
        let right = UserOperation::non_commutative(|_: &[u64], _: &mut [u64]| {});
        self.comm.all_reduce_into(&mine[..], &mut got[..], right)?;
        same(
            &format!("{}: all_reduce with a right projection of {n}", self.name),
            &got,
            &last,
        )?;
        // A commutative closure: wrapping sum.
        let sum = UserOperation::commutative(|input: &[u64], inout: &mut [u64]| {
            for (o, i) in inout.iter_mut().zip(input) {
                *o = o.wrapping_add(*i);
            }
        });
        let want: Vec<u64> = (0..n)
            .map(|i| (0..size).fold(0u64, |a, r| a.wrapping_add(data(r, i, 8) as u64)))
            .collect();
        self.comm.all_reduce_into(&mine[..], &mut got[..], sum)?;
        same(
            &format!("{}: all_reduce with a user sum of {n}", self.name),
            &got,
            &want,
        )?;
        // Scan with the left projection: every prefix reduces to rank 0's.
        let left = UserOperation::non_commutative(|input: &[u64], inout: &mut [u64]| {
            inout.copy_from_slice(input);
        });
        self.comm.scan_into(&mine[..], &mut got[..], left)?;
        same(
            &format!("{}: scan with a left projection of {n}", self.name),
            &got,
            &first,
        )?;
        self.ok();
        Ok(())
    }

    fn scans(&mut self, n: usize) -> Result<(), BoxError> {
        let rank = self.rank();
        let mine: Vec<i64> = (0..n).map(|i| data(rank, i, 9)).collect();
        let prefix = |upto: i32| -> Vec<i64> {
            (0..n)
                .map(|i| {
                    (0..upto)
                        .map(|r| data(r, i, 9))
                        .fold(0i64, i64::wrapping_add)
                })
                .collect()
        };
        let mut got = vec![0i64; n];
        self.comm
            .scan_into(&mine[..], &mut got[..], SystemOperation::sum())?;
        same(
            &format!("{}: scan of {n}", self.name),
            &got,
            &prefix(rank + 1),
        )?;
        let mut got = vec![-7i64; n];
        self.comm
            .exclusive_scan_into(&mine[..], &mut got[..], SystemOperation::sum())?;
        let want = if rank == 0 {
            vec![-7i64; n]
        } else {
            prefix(rank)
        };
        same(
            &format!("{}: exclusive scan of {n}", self.name),
            &got,
            &want,
        )?;
        self.ok();
        Ok(())
    }
}

impl Checker<'_> {
    /// The `v` forms (rank `r` contributes `r + n` elements) and the
    /// in-place forms, against the same references.
    fn varcount_and_in_place(&mut self, n: usize) -> Result<(), BoxError> {
        let (rank, size) = (self.rank(), self.size());
        let len = |r: i32| r as usize + n;
        let counts: Vec<usize> = (0..size).map(len).collect();
        let displs: Vec<usize> = counts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c + 1;
                Some(d)
            })
            .collect();
        let extent = displs[size as usize - 1] + counts[size as usize - 1];
        let mine: Vec<i64> = (0..len(rank)).map(|i| data(rank, i, 11)).collect();
        let mut want = vec![-1i64; extent];
        for r in 0..size {
            for i in 0..len(r) {
                want[displs[r as usize] + i] = data(r, i, 11);
            }
        }
        // allgatherv
        let mut got = vec![-1i64; extent];
        self.comm.all_gather_varcount_into(
            &mine[..],
            &mut PartitionMut::new(&mut got[..], &counts, &displs)?,
        )?;
        same(
            &format!("{}: all_gather_varcount of {n}", self.name),
            &got,
            &want,
        )?;
        // gatherv / scatterv at every root
        for root in 0..size {
            let p = self.comm.process_at_rank(root);
            if rank == root {
                let mut got = vec![-1i64; extent];
                p.gather_varcount_into_root(
                    &mine[..],
                    &mut PartitionMut::new(&mut got[..], &counts, &displs)?,
                )?;
                same(
                    &format!("{}: gather_varcount of {n} at {root}", self.name),
                    &got,
                    &want,
                )?;
                let mut back = vec![0i64; len(rank)];
                p.scatter_varcount_into_root(
                    &Partition::new(&want[..], &counts, &displs)?,
                    &mut back[..],
                )?;
                same(
                    &format!("{}: scatter_varcount of {n} from {root}", self.name),
                    &back,
                    &mine,
                )?;
            } else {
                p.gather_varcount_into(&mine[..])?;
                let mut back = vec![0i64; len(rank)];
                p.scatter_varcount_into(&mut back[..])?;
                same(
                    &format!("{}: scatter_varcount of {n} from {root}", self.name),
                    &back,
                    &mine,
                )?;
            }
        }
        // alltoallv: member r sends j + 1 elements to member j.
        let scounts: Vec<usize> = (0..size as usize).map(|j| j + 1).collect();
        let sdispls: Vec<usize> = scounts
            .iter()
            .scan(0, |at, &c| {
                let d = *at;
                *at += c;
                Some(d)
            })
            .collect();
        let send: Vec<i64> = (0..size)
            .flat_map(|j| (0..j as usize + 1).map(move |i| data(rank, i, 12) * 7 + i64::from(j)))
            .collect();
        let rcounts = vec![rank as usize + 1; size as usize];
        let rdispls: Vec<usize> = (0..size as usize)
            .map(|r| r * (rank as usize + 1))
            .collect();
        let mut got = vec![0i64; size as usize * (rank as usize + 1)];
        self.comm.all_to_all_varcount_into(
            &Partition::new(&send[..], &scounts, &sdispls)?,
            &mut PartitionMut::new(&mut got[..], &rcounts, &rdispls)?,
        )?;
        let want: Vec<i64> = (0..size)
            .flat_map(|r| (0..rank as usize + 1).map(move |i| data(r, i, 12) * 7 + i64::from(rank)))
            .collect();
        same(
            &format!("{}: all_to_all_varcount of {n}", self.name),
            &got,
            &want,
        )?;
        // reduce_scatter with counts r + 1
        let rs_counts: Vec<usize> = (0..size as usize).map(|r| r + 1).collect();
        let total: usize = rs_counts.iter().sum();
        let send: Vec<i64> = (0..total).map(|i| data(rank, i, 13)).collect();
        let start: usize = rs_counts[..rank as usize].iter().sum();
        let want: Vec<i64> = (start..start + rank as usize + 1)
            .map(|i| {
                (0..size)
                    .map(|r| data(r, i, 13))
                    .fold(0i64, i64::wrapping_add)
            })
            .collect();
        let mut got = vec![0i64; rank as usize + 1];
        self.comm.reduce_scatter_into(
            &send[..],
            &mut got[..],
            &rs_counts,
            SystemOperation::sum(),
        )?;
        same(
            &format!("{}: reduce_scatter of {n}", self.name),
            &got,
            &want,
        )?;
        self.ok();

        // In place: allgather, alltoall, scan, exscan, gather, scatter, reduce.
        let block = |r: i32| (0..n).map(move |i| data(r, i, 14)).collect::<Vec<_>>();
        let everyone: Vec<i64> = (0..size).flat_map(block).collect();
        let mut buf = vec![-1i64; n * size as usize];
        buf[rank as usize * n..(rank as usize + 1) * n].copy_from_slice(&block(rank));
        self.comm.all_gather_in_place(&mut buf[..])?;
        same(
            &format!("{}: all_gather in place of {n}", self.name),
            &buf,
            &everyone,
        )?;
        let mut buf: Vec<i64> = (0..size)
            .flat_map(|j| (0..n).map(move |i| data(rank, i, 15) + i64::from(j)))
            .collect();
        self.comm.all_to_all_in_place(&mut buf[..])?;
        let want: Vec<i64> = (0..size)
            .flat_map(|r| (0..n).map(move |i| data(r, i, 15) + i64::from(rank)))
            .collect();
        same(
            &format!("{}: all_to_all in place of {n}", self.name),
            &buf,
            &want,
        )?;
        let prefix = |upto: i32| -> Vec<i64> {
            (0..n)
                .map(|i| {
                    (0..upto)
                        .map(|r| data(r, i, 16))
                        .fold(0i64, i64::wrapping_add)
                })
                .collect()
        };
        let mut buf: Vec<i64> = (0..n).map(|i| data(rank, i, 16)).collect();
        self.comm
            .scan_in_place(&mut buf[..], SystemOperation::sum())?;
        same(
            &format!("{}: scan in place of {n}", self.name),
            &buf,
            &prefix(rank + 1),
        )?;
        let mut buf: Vec<i64> = (0..n).map(|i| data(rank, i, 16)).collect();
        let before = buf.clone();
        self.comm
            .exclusive_scan_in_place(&mut buf[..], SystemOperation::sum())?;
        let want = if rank == 0 { before } else { prefix(rank) };
        same(
            &format!("{}: exclusive scan in place of {n}", self.name),
            &buf,
            &want,
        )?;
        for root in 0..size {
            let p = self.comm.process_at_rank(root);
            if rank == root {
                let mut all = vec![-1i64; n * size as usize];
                all[rank as usize * n..(rank as usize + 1) * n].copy_from_slice(&block(rank));
                p.gather_into_root_in_place(&mut all[..])?;
                same(
                    &format!("{}: gather in place of {n} at {root}", self.name),
                    &all,
                    &everyone,
                )?;
                p.scatter_into_root_in_place(&everyone[..])?;
                let mut sum: Vec<i64> = (0..n).map(|i| data(rank, i, 17)).collect();
                p.reduce_into_root_in_place(&mut sum[..], SystemOperation::sum())?;
                let want: Vec<i64> = (0..n)
                    .map(|i| {
                        (0..size)
                            .map(|r| data(r, i, 17))
                            .fold(0i64, i64::wrapping_add)
                    })
                    .collect();
                same(
                    &format!("{}: reduce in place of {n} at {root}", self.name),
                    &sum,
                    &want,
                )?;
            } else {
                p.gather_into(&block(rank)[..])?;
                let mut back = vec![0i64; n];
                p.scatter_into(&mut back[..])?;
                same(
                    &format!("{}: scatter in place of {n} from {root}", self.name),
                    &back,
                    &block(rank),
                )?;
                let mine: Vec<i64> = (0..n).map(|i| data(rank, i, 17)).collect();
                p.reduce_into(&mine[..], SystemOperation::sum())?;
            }
        }
        self.ok();
        Ok(())
    }
}

fn counts() -> Result<Vec<usize>, BoxError> {
    match std::env::args().nth(1) {
        None => Ok(vec![0, 1, 7, 64, 1000, 65536]),
        Some(list) => list
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<usize>()
                    .map_err(|e| format!("count {s:?}: {e}").into())
            })
            .collect(),
    }
}

fn run() -> Result<(i32, usize), BoxError> {
    let counts = counts()?;
    let universe = oxmpi::initialize()?;
    let world = universe.world();
    let self_comm = universe.self_comm();
    let mut checks = 0;
    for (comm, name) in [(&world, "MPI_COMM_WORLD"), (&self_comm, "MPI_COMM_SELF")] {
        let mut c = Checker {
            comm,
            name,
            checks: 0,
        };
        if let Err(e) = c.all(&counts) {
            eprintln!("rank {}: {e}", world.rank());
            world.abort(1);
        }
        checks += c.checks;
    }
    Ok((world.rank(), checks))
}

fn main() -> ExitCode {
    match run() {
        Ok((rank, checks)) => {
            println!("rank {rank}: coll ok ({checks} checks)");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("coll_check: {e}");
            ExitCode::FAILURE
        }
    }
}
