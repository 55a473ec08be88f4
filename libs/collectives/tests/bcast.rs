//! Broadcasts: every rank ends with the root's buffer.

mod common;

use common::{bytes, check, seed, tag, LENS, SIZES};
use oxmpi_collectives::block_on;
use oxmpi_collectives::testkit::{self, TestTransport};
use oxmpi_collectives::{
    bcast_binomial, bcast_linear, bcast_pipeline, bcast_scatter_allgather, CollError, Transport,
};

type Bcast = fn(&mut TestTransport, &mut [u8], u32, i32) -> Result<(), CollError>;

/// Every size, length and root; checks every rank's buffer.
fn check_bcast(name: &str, bcast: Bcast, lens: &[usize]) {
    for size in SIZES {
        let results = testkit::run(size, |t| {
            let mut out = Vec::new();
            let mut call = 0;
            for &len in lens {
                for root in 0..size {
                    let mut buf = if t.rank() == root {
                        bytes(seed(&[root.into(), len as u64]), len)
                    } else {
                        vec![0xAA; len]
                    };
                    bcast(t, &mut buf, root, tag(call)).unwrap();
                    call += 1;
                    out.push(buf);
                }
            }
            out
        });
        for (rank, bufs) in results.iter().enumerate() {
            let mut i = 0;
            for &len in lens {
                for root in 0..size {
                    let want = bytes(seed(&[root.into(), len as u64]), len);
                    check(
                        &bufs[i],
                        &want,
                        format_args!("{name}: size {size}, len {len}, root {root}, rank {rank}"),
                    );
                    i += 1;
                }
            }
        }
    }
}

#[test]
fn bcast_linear_all_cases() {
    check_bcast(
        "linear",
        |a0, a1, a2, a3| block_on(bcast_linear(a0, a1, a2, a3)),
        LENS,
    );
}

#[test]
fn bcast_binomial_all_cases() {
    check_bcast(
        "binomial",
        |a0, a1, a2, a3| block_on(bcast_binomial(a0, a1, a2, a3)),
        LENS,
    );
}

#[test]
fn bcast_pipeline_all_cases() {
    check_bcast(
        "pipeline 1000",
        |t, b, r, tag| block_on(bcast_pipeline(t, b, r, 1000, tag)),
        LENS,
    );
    check_bcast(
        "pipeline unsegmented",
        |t, b, r, tag| block_on(bcast_pipeline(t, b, r, 0, tag)),
        LENS,
    );
    check_bcast(
        "pipeline 3",
        |t, b, r, tag| block_on(bcast_pipeline(t, b, r, 3, tag)),
        &[0, 1, 7, 64],
    );
    check_bcast(
        "pipeline 7",
        |t, b, r, tag| block_on(bcast_pipeline(t, b, r, 7, tag)),
        &[7, 64],
    );
}

#[test]
fn bcast_scatter_allgather_all_cases() {
    check_bcast(
        "scatter_allgather",
        |a0, a1, a2, a3| block_on(bcast_scatter_allgather(a0, a1, a2, a3)),
        LENS,
    );
    // Lengths around the size, where blocks become empty or uneven.
    check_bcast(
        "scatter_allgather short",
        |a0, a1, a2, a3| block_on(bcast_scatter_allgather(a0, a1, a2, a3)),
        &[2, 3, 5, 8, 9, 17],
    );
}
