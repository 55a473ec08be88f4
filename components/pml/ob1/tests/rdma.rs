//! ob1 over the kit's loopback btl offering get and/or put: RGET when
//! every module offers get, RPUT when they offer put only, the send
//! pipeline when they offer neither or `pml_ob1_use_rdma` is false; each
//! moves the whole message (checked byte by byte), in gets/puts of at most
//! `max_rdma_size` bytes.

use mca_pml_ob1::MODULE;
use oxmpi_framework_btl::testkit::pattern;
use oxmpi_framework_pml::module::{RequestError, SendMode};
use oxmpi_framework_pml::testkit::loopback::{self, Stats};
use oxmpi_framework_pml::testkit::{services, Behaviour, RdmaAnswer, RdmaOffer, Session};
use oxmpi_plugin_api::ParamValue;

const LEN: usize = (3 << 20) + 17;

/// One `LEN`-byte message to itself (receive posted first) over a btl
/// offering `rdma`; the loopback's counters afterwards.
fn transfer(rdma: RdmaOffer, answer: RdmaAnswer, use_rdma: bool, mode: SendMode) -> Stats {
    let _lock = services::lock();
    services::set_param("pml_ob1_use_rdma", ParamValue::Bool(use_rdma));
    services::set_param("pml_ob1_send_pipeline_depth", ParamValue::Int(3));
    loopback::set_behaviour(Behaviour {
        rdma,
        rdma_answer: answer,
        max_rdma_size: 100_000,
        ..Behaviour::DEFAULT
    });
    let at = format!("{rdma:?} {answer:?} use_rdma={use_rdma} {mode:?}");
    let mut s = Session::start(&MODULE, "ob1").unwrap();
    let msg = pattern(LEN, 5);
    let sbuf = s.buffer(msg.clone());
    let rbuf = s.buffer(vec![0; LEN]);
    let r = s.irecv(rbuf, LEN, 0, 1, 0).unwrap();
    let q = s.isend(sbuf, 0, 1, 0, mode).unwrap();
    let sent = s.wait(q, &at);
    assert_eq!(sent.error, RequestError::None, "{at}");
    let got = s.wait(r, &at);
    assert_eq!((got.count, got.error), (LEN, RequestError::None), "{at}");
    assert!(s.bytes(rbuf) == msg.as_slice(), "{at}: data differs");
    s.pml().free(q);
    s.pml().free(r);
    s.assert_clean(&at);
    let stats = loopback::stats();
    s.finalize();
    services::clear_param("pml_ob1_use_rdma");
    services::clear_param("pml_ob1_send_pipeline_depth");
    loopback::reset();
    stats
}

#[test]
fn rget_when_every_module_offers_get() {
    for rdma in [RdmaOffer::Get, RdmaOffer::Both] {
        for answer in [RdmaAnswer::Done, RdmaAnswer::Queued] {
            for mode in [SendMode::Standard, SendMode::Synchronous] {
                let st = transfer(rdma, answer, true, mode);
                assert_eq!(st.puts, 0, "{st:?}");
                // Whole message by gets of at most 100000 bytes.
                assert_eq!(st.rdma_bytes, LEN, "{st:?}");
                assert!(st.gets >= LEN.div_ceil(100_000), "{st:?}");
                // RGET, FIN: no FRAG, no RNDV payload.
                assert_eq!(st.sends, 2, "{rdma:?} {answer:?}: {st:?}");
            }
        }
    }
}

#[test]
fn rput_when_the_modules_offer_put_only() {
    for answer in [RdmaAnswer::Done, RdmaAnswer::Queued] {
        let st = transfer(RdmaOffer::Put, answer, true, SendMode::Standard);
        assert_eq!(st.gets, 0, "{st:?}");
        // RNDV with the first 4096 bytes, ACK, puts of the rest, FIN.
        assert_eq!(st.rdma_bytes, LEN - 4096, "{st:?}");
        assert_eq!(st.sends, 3, "{st:?}");
    }
}

#[test]
fn the_send_pipeline_without_get_put_or_with_use_rdma_false() {
    for (rdma, use_rdma) in [
        (RdmaOffer::Neither, true),
        (RdmaOffer::Both, false),
        (RdmaOffer::Put, false),
    ] {
        let st = transfer(rdma, RdmaAnswer::Queued, use_rdma, SendMode::Standard);
        assert_eq!(st.gets + st.puts, 0, "{rdma:?} use_rdma={use_rdma}: {st:?}");
        assert!(st.sends > LEN / 65536, "{st:?}");
    }
}

#[test]
fn a_failed_get_or_put_fails_both_requests() {
    for rdma in [RdmaOffer::Get, RdmaOffer::Put] {
        let _lock = services::lock();
        loopback::set_behaviour(Behaviour {
            rdma,
            rdma_answer: RdmaAnswer::Fail,
            ..Behaviour::DEFAULT
        });
        let mut s = Session::start(&MODULE, "ob1").unwrap();
        let sbuf = s.buffer(pattern(LEN, 6));
        let rbuf = s.buffer(vec![0; LEN]);
        let r = s.irecv(rbuf, LEN, 0, 1, 0).unwrap();
        let q = s.isend(sbuf, 0, 1, 0, SendMode::Standard).unwrap();
        for (req, what) in [(r, "receive"), (q, "send")] {
            let st = s.wait(req, what);
            assert_eq!(st.error, RequestError::PeerFailed, "{rdma:?} {what}");
            s.pml().free(req);
        }
        let stats = loopback::stats();
        assert!(
            stats.rdma_queued > 0 && stats.rdma_done > 0 && stats.peer_failures > 0,
            "{rdma:?}: {stats:?}"
        );
        s.assert_clean("failed get/put");
        s.finalize();
        loopback::reset();
    }
}
