//! Reduction throughput: GB/s of `reduce_local` on 1 MiB buffers.
//!
//! `cargo bench -p oxmpi-reduce --bench reduce` (add `-- --quick` for fewer
//! repetitions). For each (operation, type) it runs the typed path (both
//! buffers aligned for the element type) and the unaligned path (both
//! buffers one byte past alignment), and prints GB/s counted as the bytes
//! of one buffer per call (1 MiB); the memory traffic is three times that
//! (read input, read and write inout). Two 1 MiB buffers fit in most L2/L3
//! caches, so this measures the loops rather than DRAM. The best and the
//! median of several runs are shown.

use std::hint::black_box;
use std::time::Instant;

use oxmpi_reduce::{reduce_into, reduce_local, ElementType, Op};

const LEN: usize = 1 << 20;
const RUNS: usize = 9;
/// The out-of-cache case, in MiB per buffer.
const BIG_MIB: usize = 64;

/// A buffer whose slice at `offset` starts `offset` bytes past a 64-byte
/// boundary.
struct Buf {
    bytes: Vec<u8>,
    base: usize,
    len: usize,
}

impl Buf {
    fn new(len: usize, fill: impl Fn(usize) -> u8) -> Buf {
        let mut bytes: Vec<u8> = (0..len + 128).map(fill).collect();
        let base = bytes.as_mut_ptr().align_offset(64);
        assert!(base < 64);
        Buf { bytes, base, len }
    }

    fn at(&self, offset: usize) -> &[u8] {
        &self.bytes[self.base + offset..self.base + offset + self.len]
    }

    fn at_mut(&mut self, offset: usize) -> &mut [u8] {
        &mut self.bytes[self.base + offset..self.base + offset + self.len]
    }
}

/// Element-sized values that stay finite and normal under repeated sums,
/// maxima and MINLOC (no NaN, no subnormals).
fn operand(ty: ElementType, seed: usize) -> impl Fn(usize) -> u8 {
    let size = ty.size();
    move |i: usize| {
        let elem = i / size;
        let byte = i % size;
        let v = ((elem * 2654435761 + seed) % 1000) as f64 / 7.0 + 1.0;
        let bytes: Vec<u8> = match ty {
            ElementType::Float32 => (v as f32).to_ne_bytes().to_vec(),
            ElementType::Float64 => v.to_ne_bytes().to_vec(),
            ElementType::DoubleInt => {
                let mut e = v.to_ne_bytes().to_vec();
                e.extend((elem as i32).to_ne_bytes());
                e.extend([0; 4]);
                e
            }
            _ => ((elem * 2654435761 + seed) as u64).to_ne_bytes()[..size].to_vec(),
        };
        bytes[byte]
    }
}

/// Seconds per call: best and median of `RUNS` runs of `iters` calls.
fn time(iters: usize, mut call: impl FnMut()) -> (f64, f64) {
    call();
    let mut secs: Vec<f64> = (0..RUNS)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                call();
            }
            t.elapsed().as_secs_f64() / iters as f64
        })
        .collect();
    secs.sort_by(f64::total_cmp);
    (secs[0], secs[RUNS / 2])
}

/// One printed row: the typed path (offset 0) and the unaligned path
/// (offset 1), `len` bytes per buffer.
fn row(label: &str, len: usize, iters: usize, mut call: impl FnMut(usize)) {
    let cells: Vec<String> = [0, 1]
        .into_iter()
        .map(|offset| {
            let (best, median) = time(iters, || call(offset));
            let gbps = |secs: f64| len as f64 / secs / 1e9;
            format!("{:>7.2} / {:>7.2}", gbps(best), gbps(median))
        })
        .collect();
    println!("{label:<42} {:>20} {:>20}", cells[0], cells[1]);
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let iters = if quick { 50 } else { 400 };
    let cases = [
        (Op::Sum, ElementType::Float64),
        (Op::Sum, ElementType::Int32),
        (Op::Max, ElementType::Float32),
        (Op::Band, ElementType::UInt64),
        (Op::MinLoc, ElementType::DoubleInt),
    ];
    println!("GB/s = bytes of one buffer / time per call (best / median of {RUNS} runs)");
    println!(
        "{:<42} {:>20} {:>20}",
        "reduce_local, 1 MiB", "typed (aligned)", "unaligned (+1 byte)"
    );
    for (op, ty) in cases {
        let input = Buf::new(LEN, operand(ty, 1));
        let mut inout = Buf::new(LEN, operand(ty, 2));
        row(&format!("{op}, {ty}"), LEN, iters, |offset| {
            reduce_local(op, ty, black_box(input.at(offset)), inout.at_mut(offset)).unwrap();
        });
    }

    let (op, ty) = (Op::Sum, ElementType::Float64);
    let a = Buf::new(LEN, operand(ty, 1));
    let b = Buf::new(LEN, operand(ty, 2));
    let mut out = Buf::new(LEN, operand(ty, 3));
    row(&format!("reduce_into {op}, {ty}"), LEN, iters, |offset| {
        reduce_into(
            op,
            ty,
            black_box(a.at(offset)),
            b.at(offset),
            out.at_mut(offset),
        )
        .unwrap();
    });

    // Out of cache: DRAM bandwidth bounds this one.
    let big = LEN * BIG_MIB;
    let input = Buf::new(big, operand(ty, 1));
    let mut inout = Buf::new(big, operand(ty, 2));
    row(
        &format!("reduce_local {op}, {ty}, {BIG_MIB} MiB"),
        big,
        iters / 40 + 2,
        |offset| {
            reduce_local(op, ty, black_box(input.at(offset)), inout.at_mut(offset)).unwrap();
        },
    );
}
