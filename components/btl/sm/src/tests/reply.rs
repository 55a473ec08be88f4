//! `btl_sm_reply_prefetch`: the lines of a reply's fast-box record are
//! asked for after a fragment that follows an answer, and only then.

use super::conformance::job_dir;
use crate::SmBtl;
use oxmpi_framework_btl::testkit::drive::Cluster;
use oxmpi_plugin_api::testkit::{clear_param, lock, set_param};
use oxmpi_plugin_api::ParamValue;

const HEADER: [u8; 32] = [7; 32];
const PAYLOAD: [u8; 8] = [1; 8];

/// Sends one fragment from `from` over `endpoint` and pumps until the
/// other rank delivered it.
fn one(c: &mut Cluster<'static, SmBtl>, from: u32, endpoint: u64) {
    let to = 1 - from;
    let before = c.recorder(to).fragments().len();
    c.send_accepted(from, 0, endpoint, &HEADER, &PAYLOAD, 0);
    c.pump("the fragment", |c| {
        c.recorder(to).fragments().len() > before
    });
}

fn prefetches(c: &mut Cluster<'static, SmBtl>, rank: u32) -> u64 {
    c.value_mut(rank).unwrap().reply_prefetches()
}

#[test]
fn a_fragment_after_an_answer_asks_for_the_reply_lines_and_a_stream_does_not() {
    // The job directory's lock first, then the kit's: the conformance
    // tests take them in this order (the kit's inside the suite), and the
    // other order deadlocks when both run at once.
    let (_env, dir) = job_dir(2);
    let _kit = lock();
    set_param("btl_sm_fbox_threshold", ParamValue::Int(1));
    for on in [true, false] {
        set_param("btl_sm_reply_prefetch", ParamValue::Bool(on));
        let mut c = Cluster::<SmBtl>::values("sm", 2).unwrap();
        let to1 = c.connect(0, 0, 1).unwrap();
        let to0 = c.connect(1, 0, 0).unwrap();
        // A stream from 0 to 1: 1 never answers, so it expects no reply.
        for _ in 0..20 {
            one(&mut c, 0, to1);
        }
        assert_eq!(prefetches(&mut c, 1), 0, "a stream (prefetch {on})");
        // A ping-pong: each side's first fragment goes through the queue
        // (and claims the fast box); every later one comes through the box
        // and follows the receiver's answer.
        for _ in 0..10 {
            one(&mut c, 1, to0);
            one(&mut c, 0, to1);
        }
        let expected = if on { (9, 9) } else { (0, 0) };
        assert_eq!(
            (prefetches(&mut c, 0), prefetches(&mut c, 1)),
            expected,
            "a ping-pong (prefetch {on})"
        );
        c.assert_clean("reply prefetch");
    }
    clear_param("btl_sm_reply_prefetch");
    clear_param("btl_sm_fbox_threshold");
    drop(dir);
}
