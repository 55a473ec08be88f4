//! Reduce and allreduce against a sequential reference: a predefined
//! operation, and a user operation that does not commute (composition of
//! affine maps), which checks the rank order; on 1 to 8 ranks, every
//! root, sizes from 0 past several slots and across the two-step
//! allreduce, `MPI_IN_PLACE`, many calls in a row.

use super::ops::{call, run};
use super::{all_ok, ranks, ranks_in};
use crate::member::{Member, Waiter};
use crate::reduce::SPLIT_MIN;
use oxmpi_framework_coll::module::{CollCall, CollKind, ElementCode, OpCode, UserOp};
use std::ffi::c_void;

/// Element `i` of rank `r`'s `i64` data for call `salt`.
fn val(r: usize, i: usize, salt: usize) -> i64 {
    (r as i64 + 1) * 1_000_003 + i as i64 * 7919 + salt as i64 * 13
}

/// An affine map `t ↦ a t + b` (wrapping), element of the user operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Affine {
    a: u64,
    b: u64,
}

impl Affine {
    /// `self ∘ other`: associative, not commutative.
    fn then(self, other: Affine) -> Affine {
        Affine {
            a: self.a.wrapping_mul(other.a),
            b: self.a.wrapping_mul(other.b).wrapping_add(self.b),
        }
    }
}

fn affine(r: usize, i: usize, salt: usize) -> Affine {
    Affine {
        a: (r * 2 + i * 4 + salt * 8 + 3) as u64,
        b: (r * 1000 + i + salt) as u64,
    }
}

fn to_bytes(v: &[Affine]) -> Vec<u8> {
    v.iter()
        .flat_map(|x| x.a.to_ne_bytes().into_iter().chain(x.b.to_ne_bytes()))
        .collect()
}

/// The user operation: `inout = input ∘ inout`, element by element.
///
/// # Safety
///
/// The MPI layer's contract: both buffers hold `count` elements of 16
/// bytes.
unsafe extern "C" fn compose(
    _ctx: *mut c_void,
    input: *const u8,
    inout: *mut u8,
    count: usize,
) -> bool {
    let word = |p: *const u8, k: usize| {
        // SAFETY: within the `count` 16-byte elements of the contract;
        // unaligned reads.
        unsafe { p.add(k * 8).cast::<u64>().read_unaligned() }
    };
    for e in 0..count {
        let x = Affine {
            a: word(input, 2 * e),
            b: word(input, 2 * e + 1),
        };
        let y = Affine {
            a: word(inout, 2 * e),
            b: word(inout, 2 * e + 1),
        };
        let z = x.then(y);
        // SAFETY: as above, for the writable `inout`.
        unsafe {
            inout.add(e * 16).cast::<u64>().write_unaligned(z.a);
            inout.add(e * 16 + 8).cast::<u64>().write_unaligned(z.b);
        }
    }
    true
}

fn user_op() -> UserOp {
    UserOp {
        func: Some(compose),
        ctx: std::ptr::null_mut(),
        elem_size: 16,
        commutative: false,
    }
}

/// How a test reduction looks.
#[derive(Clone, Copy, Debug)]
enum Kind {
    SumI64,
    Compose,
}

impl Kind {
    fn elem(self) -> usize {
        match self {
            Kind::SumI64 => 8,
            Kind::Compose => 16,
        }
    }

    fn input(self, r: usize, count: usize, salt: usize) -> Vec<u8> {
        match self {
            Kind::SumI64 => (0..count)
                .flat_map(|i| val(r, i, salt).to_ne_bytes())
                .collect(),
            Kind::Compose => to_bytes(&(0..count).map(|i| affine(r, i, salt)).collect::<Vec<_>>()),
        }
    }

    /// `x0 op x1 op … op xn−1`, folded from the left.
    fn reference(self, n: usize, count: usize, salt: usize) -> Vec<u8> {
        match self {
            Kind::SumI64 => (0..count)
                .flat_map(|i| {
                    (0..n)
                        .map(|r| val(r, i, salt))
                        .fold(0i64, i64::wrapping_add)
                        .to_ne_bytes()
                })
                .collect(),
            Kind::Compose => to_bytes(
                &(0..count)
                    .map(|i| (1..n).fold(affine(0, i, salt), |acc, r| acc.then(affine(r, i, salt))))
                    .collect::<Vec<_>>(),
            ),
        }
    }

    fn set(self, c: &mut CollCall<'_>) {
        match self {
            Kind::SumI64 => {
                c.element = ElementCode::Int64;
                c.op = OpCode::Sum;
            }
            Kind::Compose => {
                c.element = ElementCode::User;
                c.op = OpCode::User;
                c.user = user_op();
            }
        }
    }
}

/// A reduce to every root and an allreduce of `count` elements, each
/// also in place, checked, as rank `m`.
fn reductions(
    m: &mut Member,
    w: &Waiter<'_>,
    kind: Kind,
    count: usize,
    salt: usize,
) -> Result<(), String> {
    let (me, n) = (m.rank(), m.size());
    let len = count * kind.elem();
    let want = kind.reference(n, count, salt);
    let at = |what: &str| format!("{what} {kind:?} n {n} count {count} rank {me}");
    for root in 0..n {
        for in_place in [false, true] {
            let input = kind.input(me, count, salt);
            let mut recv = vec![0; if me == root { len } else { 0 }];
            let in_place = in_place && me == root;
            if in_place {
                recv.copy_from_slice(&input);
            }
            let mut c = call(
                CollKind::Reduce,
                (!in_place).then_some(&input[..]),
                Some(&mut recv),
                count,
                root,
            );
            kind.set(&mut c);
            run(m, w, &c)?;
            if me == root && recv != want {
                return Err(format!("{}: wrong result", at("reduce")));
            }
        }
    }
    for in_place in [false, true] {
        let input = kind.input(me, count, salt);
        let mut recv = if in_place {
            input.clone()
        } else {
            vec![0; len]
        };
        let mut c = call(
            CollKind::Allreduce,
            (!in_place).then_some(&input[..]),
            Some(&mut recv),
            count,
            0,
        );
        kind.set(&mut c);
        run(m, w, &c)?;
        if recv != want {
            return Err(format!(
                "{}: wrong result (in place {in_place})",
                at("allreduce")
            ));
        }
    }
    Ok(())
}

#[test]
fn reductions_fold_in_rank_order_for_every_size_root_and_communicator_of_1_to_8() {
    const SLOT: usize = 4096;
    for (n, buffers) in (1..=8).flat_map(|n| [(n, 2), (n, 3)]) {
        let results = ranks_in(n, SLOT, buffers, |m, w| {
            let mut salt = 0;
            for kind in [Kind::SumI64, Kind::Compose] {
                let elems = SLOT / kind.elem();
                let split = SPLIT_MIN / kind.elem();
                for count in [0, 1, 3, split - 1, split, split + 5, elems, 2 * elems + 7] {
                    salt += 1;
                    reductions(m, w, kind, count, salt)?;
                }
            }
            Ok(())
        });
        all_ok(results, &format!("{n} ranks, {buffers} buffers"));
    }
}

#[test]
fn the_largest_reductions_sm_takes_are_right_with_the_default_slots() {
    let defaults = crate::params::SmParams::default();
    for n in [2, 3, 4] {
        let buffers = defaults.buffers as usize;
        let results = ranks_in(n, defaults.slot_size, buffers, |m, w| {
            reductions(m, w, Kind::SumI64, defaults.max_size / 8, 1)?;
            reductions(m, w, Kind::Compose, defaults.max_size / 16, 2)
        });
        all_ok(results, &format!("{n} ranks"));
    }
}

#[test]
fn an_operation_that_does_not_apply_is_refused_before_any_step() {
    let results = ranks(2, 4096, |m, w| {
        let input = [1u8; 8];
        let mut recv = [0u8; 8];
        let mut c = call(CollKind::Allreduce, Some(&input), Some(&mut recv), 8, 0);
        c.element = ElementCode::Byte;
        c.op = OpCode::Sum;
        (run(m, w, &c).unwrap_err(), m.seq())
    });
    for (why, seq) in results {
        assert!(why.contains("MPI_SUM is not defined for MPI_BYTE"), "{why}");
        assert_eq!(seq, 0);
    }
}

#[test]
fn a_reduce_in_place_off_the_root_is_refused_before_any_step() {
    // A predefined operation (one step) and a user one (in pieces); only
    // rank 1 calls (the root would wait for its contribution).
    for kind in [Kind::SumI64, Kind::Compose] {
        let results = ranks(2, 4096, |m, w| {
            if m.rank() == 0 {
                return (None, 0);
            }
            let mut buf = kind.input(1, 2, 1);
            let mut c = call(CollKind::Reduce, None, Some(&mut buf), 2, 0);
            kind.set(&mut c);
            (run(m, w, &c).err(), m.seq())
        });
        assert_eq!(
            results[1],
            (
                Some("MPI_IN_PLACE is not allowed for reduce at a rank other than the root".into()),
                0
            ),
            "{kind:?}"
        );
    }
}

#[test]
fn a_failed_user_operation_fails_the_call_and_the_others_go_on() {
    unsafe extern "C" fn refuse(_: *mut c_void, _: *const u8, _: *mut u8, _: usize) -> bool {
        false
    }
    let results = ranks(3, 4096, |m, w| {
        let input = [m.rank() as u8; 16];
        let mut recv = [0u8; 16];
        let mut c = call(CollKind::Allreduce, Some(&input), Some(&mut recv), 1, 0);
        c.element = ElementCode::User;
        c.op = OpCode::User;
        c.user = UserOp {
            func: Some(refuse),
            ..user_op()
        };
        let failed = run(m, w, &c).unwrap_err();
        // The step ended anyway: a barrier right after completes.
        crate::ops::barrier(m, w)?;
        Ok::<_, String>(failed)
    });
    for r in results {
        let why = r.unwrap();
        assert!(
            why.contains("user-defined reduction operation failed"),
            "{why}"
        );
    }
}
