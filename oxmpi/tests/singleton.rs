//! The API end to end in one process (a singleton: no mpirun), over the
//! real MPI layer, pml ob1 and btl self: every message goes to this
//! process itself.
//!
//! MPI can be initialized once per process, so this file holds a single
//! test that runs the steps in order. A watchdog ends the process if it
//! takes longer than two minutes.

use oxmpi::point_to_point::{send_receive, send_receive_into, send_receive_into_with_tags};
use oxmpi::request::{self, wait_all, wait_any};
use oxmpi::traits::*;
use oxmpi::{ErrorClass, Threading};
use std::path::PathBuf;
use std::time::Duration;

/// The directory of the workspace's component libraries, built for this
/// test run.
fn component_dir() -> PathBuf {
    let artifacts = oxmpi_test_support::build_workspace();
    for file in ["libmca_pml_ob1.so", "libmca_btl_self.so"] {
        artifacts.library(file);
    }
    artifacts.dir().to_path_buf()
}

fn pattern(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed) ^ (i >> 9) as u8)
        .collect()
}

#[test]
fn singleton_point_to_point() {
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(120));
        eprintln!("singleton test: still running after 120 s; giving up");
        std::process::exit(2);
    });
    std::env::set_var(
        "OXMPI_MCA_mca_base_component_path",
        component_dir().as_os_str(),
    );
    std::env::set_var("OXMPI_MCA_btl", "self");

    let (universe, provided) =
        oxmpi::initialize_with_threading(Threading::Serialized).expect("initialize");
    assert_eq!(provided, Threading::Serialized);
    assert_eq!(universe.threading(), Threading::Serialized);
    let again = oxmpi::initialize().unwrap_err();
    assert_eq!(again.class(), ErrorClass::Init);
    assert!(again.to_string().contains("already initialized"), "{again}");

    let world = universe.world();
    assert_eq!((world.rank(), world.size()), (0, 1));
    let me = world.process_at_rank(0);
    assert!(me.is_self());
    assert_eq!(me.destination_rank(), 0);
    assert_eq!(world.any_process().source_rank(), -1);

    // Scalars of every type, with tags.
    macro_rules! round_trip {
        ($($t:ty = $v:expr),*) => {$(
            me.send_with_tag(&($v as $t), 7).unwrap();
            let (got, status) = me.receive_with_tag::<$t>(7).unwrap();
            assert_eq!(got, $v as $t);
            assert_eq!((status.source_rank(), status.tag()), (0, 7));
            assert_eq!(status.count::<$t>(), Some(1));
        )*};
    }
    round_trip!(
        u8 = 200,
        i8 = -3,
        u16 = 65000,
        i16 = -30000,
        u32 = 4_000_000_000u32,
        i32 = -2_000_000_000,
        u64 = u64::MAX - 5,
        i64 = i64::MIN + 1,
        usize = 12345,
        isize = -12345,
        f32 = 1.5,
        f64 = -2.25e300
    );

    // Slices, arrays and vectors; the receive takes up to its size.
    me.send(&[1i32, 2, 3][..]).unwrap();
    let mut big = [0i32; 8];
    let status = world.any_process().receive_into(&mut big).unwrap();
    assert_eq!(&big[..3], &[1, 2, 3]);
    assert_eq!((status.byte_count(), status.count::<i32>()), (12, Some(3)));
    assert_eq!(status.tag(), 0, "sends without a tag use tag 0");
    // (Blocking sends to itself stay below the eager limit, 1 KiB: a larger one
    // waits for a matching receive, as MPI allows.)
    me.send(&vec![0.5f64; 100]).unwrap();
    let (v, status) = world.any_process().receive_vec::<f64>().unwrap();
    assert_eq!(v, vec![0.5; 100]);
    assert_eq!(status.count::<f64>(), Some(100));

    // Errors: truncation, partial elements, single values, ranks, tags.
    me.send(&[9u8; 16][..]).unwrap();
    let mut small = [0u8; 8];
    let e = me.receive_into(&mut small[..]).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Truncate, "{e}");
    assert_eq!(small, [9; 8], "the buffer holds the first bytes");
    me.send(&[1u8; 6][..]).unwrap();
    let mut ints = [0i32; 4];
    let e = me.receive_into(&mut ints[..]).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Buffer);
    assert!(e.to_string().contains("6 bytes"), "{e}");
    me.send(&7u32).unwrap();
    let e = me.receive::<u64>().unwrap_err();
    assert_eq!(e.class(), ErrorClass::Buffer);
    assert!(
        e.to_string().starts_with("expected one u64 (8 bytes)"),
        "{e}"
    );
    let e = world.process_at_rank(3).send(&1u8).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rank);
    assert!(e.to_string().contains("rank 3"), "{e}");
    let e = me.send_with_tag(&1u8, -4).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Tag);
    // -1 is MPI_ANY_SOURCE underneath; as a rank it is an error.
    let e = world.process_at_rank(-1).receive::<u8>().unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rank);
    assert_eq!(
        e.to_string(),
        "source rank -1 is not in MPI_COMM_WORLD (ranks 0 to 0); to receive from any rank, use any_process()"
    );
    let e = world.process_at_rank(-1).immediate_probe().unwrap_err();
    assert_eq!(e.class(), ErrorClass::Rank);

    // Probes.
    assert_eq!(world.any_process().immediate_probe().unwrap(), None);
    me.send_with_tag(&[5u16; 10][..], 3).unwrap();
    assert_eq!(me.immediate_probe_with_tag(4).unwrap(), None);
    let st = me.immediate_probe_with_tag(3).unwrap().expect("a message");
    assert_eq!((st.byte_count(), st.tag()), (20, 3));
    let st = world.any_process().probe().unwrap();
    assert_eq!(st.count::<u16>(), Some(10));
    let (v, _) = me.receive_vec_with_tag::<u16>(3).unwrap();
    assert_eq!(v, [5; 10]);

    // Immediate operations: a 1 MiB message (rendezvous) to itself.
    let out = pattern(1 << 20, 1);
    let mut inbox = vec![0u8; 1 << 20];
    request::scope(|scope| {
        let r = me.immediate_receive_into(scope, &mut inbox[..]).unwrap();
        let s = me.immediate_send(scope, &out[..]).unwrap();
        assert_eq!(scope.pending(), 2);
        let mut r = r;
        let status = loop {
            if let Some(status) = r.test().unwrap() {
                break status;
            }
        };
        assert_eq!(status.byte_count(), 1 << 20);
        assert!(r.is_complete());
        assert_eq!(r.test().unwrap(), Some(status), "test repeats the outcome");
        assert_eq!(r.wait().unwrap(), status, "wait too");
        s.wait().unwrap();
        assert_eq!(scope.pending(), 0);
    });
    assert!(inbox == out, "the 1 MiB message arrived intact");

    // wait_any picks the one that completed and removes it; wait_all.
    let mut a = [0u32; 1];
    let mut b = [0u32; 1];
    request::scope(|scope| {
        let mut reqs = vec![
            me.immediate_receive_into_with_tag(scope, &mut a[..], 10)
                .unwrap(),
            me.immediate_receive_into_with_tag(scope, &mut b[..], 11)
                .unwrap(),
        ];
        me.send_with_tag(&[111u32][..], 11).unwrap();
        let (i, status) = wait_any(&mut reqs).unwrap();
        assert_eq!((i, status.tag()), (1, 11));
        assert_eq!(reqs.len(), 1);
        let s = me
            .immediate_send_with_tag(scope, &[100u32][..], 10)
            .unwrap();
        reqs.push(s);
        let statuses = wait_all(reqs).unwrap();
        assert_eq!(statuses[0].tag(), 10);
    });
    assert_eq!((a[0], b[0]), (100, 111));

    // Cancel a receive nobody will match.
    let mut never = [0u8; 4];
    request::scope(|scope| {
        let r = me
            .immediate_receive_into_with_tag(scope, &mut never[..], 99)
            .unwrap();
        assert!(r.cancel().unwrap());
        assert!(r.wait().unwrap().is_cancelled());
    });

    // A forgotten and a dropped request are waited for by the scope. The
    // messages are larger than the self btl's eager limit (1 KiB), so the
    // sends use the rendezvous and are still pending too when the scope
    // ends.
    let first: Vec<i64> = (0..200).collect();
    let second: Vec<i64> = (1000..1200).collect();
    let mut forgotten = [0i64; 200];
    let mut dropped = [0i64; 200];
    request::scope(|scope| {
        let r = me
            .immediate_receive_into_with_tag(scope, &mut forgotten[..], 20)
            .unwrap();
        std::mem::forget(r);
        let r = me
            .immediate_receive_into_with_tag(scope, &mut dropped[..], 21)
            .unwrap();
        drop(r);
        std::mem::forget(me.immediate_send_with_tag(scope, &first[..], 20).unwrap());
        drop(me.immediate_send_with_tag(scope, &second[..], 21).unwrap());
        assert_eq!(scope.pending(), 4);
    });
    assert_eq!((&forgotten[..], &dropped[..]), (&first[..], &second[..]));

    // A send that completes as it starts (an eager message to oneself,
    // delivered during the send) is not pending: its scope has nothing to
    // wait for.
    let mut small = [0i64; 2];
    request::scope(|scope| {
        drop(
            me.immediate_send_with_tag(scope, &[4i64, 5][..], 22)
                .unwrap(),
        );
        assert_eq!(scope.pending(), 0);
        me.receive_into_with_tag(&mut small[..], 22).unwrap();
    });
    assert_eq!(small, [4, 5]);

    // Synchronous sends complete once matched.
    let mut got = [0u8; 3];
    request::scope(|scope| {
        let s = me
            .immediate_synchronous_send(scope, &[1u8, 2, 3][..])
            .unwrap();
        me.receive_into(&mut got[..]).unwrap();
        s.wait().unwrap();
    });
    assert_eq!(got, [1, 2, 3]);

    // Send-receive, up to 4 MiB, and typed.
    let msg = pattern(4 << 20, 9);
    let mut back = vec![0u8; 4 << 20];
    let st = send_receive_into(&msg[..], &me, &mut back[..], &me).unwrap();
    assert_eq!(st.byte_count(), 4 << 20);
    assert!(back == msg);
    let (x, _) = send_receive::<f32, _, _, _>(&2.5f32, &me, &world.any_process()).unwrap();
    assert_eq!(x, 2.5);
    let e = send_receive_into_with_tags(&1u8, &me, -7, &mut [0u8; 1][..], &me, 0).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Tag, "{e}");

    // MPI_COMM_SELF.
    let selfc = universe.self_comm();
    assert_eq!((selfc.rank(), selfc.size()), (0, 1));
    selfc.process_at_rank(0).send(&42i16).unwrap();
    let (v, st) = selfc.any_process().receive::<i16>().unwrap();
    assert_eq!((v, st.source_rank()), (42, 0));
    let e = selfc.process_at_rank(1).send(&1u8).unwrap_err();
    assert!(e.to_string().contains("MPI_COMM_SELF"), "{e}");

    let t0 = oxmpi::time();
    assert!(oxmpi::time() >= t0 && oxmpi::time_resolution() > 0.0);

    universe.finalize().expect("finalize");
    let e = me.send(&1u8).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Finalized, "{e}");
}
