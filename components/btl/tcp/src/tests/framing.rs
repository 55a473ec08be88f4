//! The framing of a connection's byte stream, checked without sockets:
//! fragments are written through an [`Endpoint`] into a scripted sink that
//! takes the bytes in chunks of given sizes, compared with their expected
//! encoding, then read back through an [`Inbound`] reader from a scripted
//! source that hands them out in other chunks. Chunk sizes cluster around
//! every header and buffer boundary; payloads run from 0 B to a few times
//! the receive buffer.

use std::fs::File;
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::os::fd::OwnedFd;
use std::sync::Arc;

use oxmpi_framework_btl::adapter::{Payload, Sent};
use oxmpi_framework_btl::module::MAX_HEADER;
use proptest::prelude::*;

use super::harness::{pattern, Placement, Recorder};
use crate::inbound::{Ended, Inbound, RECV_BUF};
use crate::outbound::{Endpoint, State};
use crate::stream::{ByteSink, ByteSource};
use crate::wire::{self, FRAME_HEADER_LEN};

/// Hands out chunk sizes in turn; a size of 0 means "would block" once.
struct Chunks {
    sizes: Vec<usize>,
    next: usize,
}

impl Chunks {
    fn new(sizes: &[usize]) -> Chunks {
        assert!(sizes.iter().any(|&s| s > 0), "a script must make progress");
        Chunks {
            sizes: sizes.to_vec(),
            next: 0,
        }
    }

    /// The next allowance, or `WouldBlock`.
    fn take(&mut self) -> io::Result<usize> {
        let s = self.sizes[self.next % self.sizes.len()];
        self.next += 1;
        if s == 0 {
            Err(io::ErrorKind::WouldBlock.into())
        } else {
            Ok(s)
        }
    }
}

/// A sink that takes at most one chunk's worth of bytes per call.
struct ScriptedSink {
    chunks: Chunks,
    bytes: Vec<u8>,
}

impl ByteSink for ScriptedSink {
    fn send(&mut self, data: &[u8]) -> io::Result<usize> {
        let n = self.chunks.take()?.min(data.len());
        self.bytes.extend_from_slice(&data[..n]);
        Ok(n)
    }

    unsafe fn send_iov(&mut self, iov: &[libc::iovec]) -> io::Result<usize> {
        let mut allowance = self.chunks.take()?;
        let mut n = 0;
        for v in iov {
            let k = v.iov_len.min(allowance);
            // SAFETY: the caller's promise on iov.
            let part = unsafe { std::slice::from_raw_parts(v.iov_base.cast::<u8>(), k) };
            self.bytes.extend_from_slice(part);
            n += k;
            allowance -= k;
            if allowance == 0 {
                break;
            }
        }
        Ok(n)
    }
}

/// A source that hands out a byte string at most one chunk per call, then
/// "would block" (the stream stays open) or ends.
struct ScriptedSource {
    chunks: Chunks,
    bytes: Vec<u8>,
    pos: usize,
    end_of_stream: bool,
}

impl ByteSource for ScriptedSource {
    unsafe fn recv(&mut self, buf: *mut u8, len: usize) -> io::Result<usize> {
        if self.pos == self.bytes.len() {
            return if self.end_of_stream {
                Ok(0)
            } else {
                Err(io::ErrorKind::WouldBlock.into())
            };
        }
        let n = self
            .chunks
            .take()?
            .min(len)
            .min(self.bytes.len() - self.pos);
        // SAFETY: the caller's promise: buf is writable for len >= n bytes.
        unsafe { std::ptr::copy_nonoverlapping(self.bytes.as_ptr().add(self.pos), buf, n) };
        self.pos += n;
        Ok(n)
    }
}

/// One fragment: its pml header and payload.
#[derive(Clone, Debug)]
struct Fragment {
    header: Vec<u8>,
    payload: Vec<u8>,
}

fn fragments(specs: &[(usize, usize)]) -> Vec<Fragment> {
    specs
        .iter()
        .enumerate()
        .map(|(i, &(hlen, plen))| Fragment {
            header: pattern(hlen, 1000 + i as u32),
            payload: pattern(plen, i as u32),
        })
        .collect()
}

/// The bytes the fragments must become on the wire.
fn encoding(frags: &[Fragment]) -> Vec<u8> {
    let mut out = Vec::new();
    for f in frags {
        let mut head = [0u8; FRAME_HEADER_LEN + MAX_HEADER];
        let n = wire::put_frame_header(&mut head, &f.header, f.payload.len());
        out.extend_from_slice(&head[..n]);
        out.extend_from_slice(&f.payload);
    }
    out
}

fn dummy_fd() -> Arc<OwnedFd> {
    Arc::new(OwnedFd::from(
        File::open("/dev/null").expect("open /dev/null"),
    ))
}

/// Writes `frags` through an endpoint (module 0, to peer 1) into a sink
/// cut by `cuts`, with the kit's recorder as the pml; checks the bytes and
/// that every queued fragment was reported done once, in order.
fn write_all(frags: &[Fragment], cuts: &[usize]) -> Vec<u8> {
    let local = IpAddr::V4(Ipv4Addr::LOCALHOST);
    let mut ep = Endpoint::new(0, 1, 0, 0, SocketAddr::new(local, 1), local, 0);
    ep.state = State::Up;
    let rec = Recorder::new();
    let mut sink = ScriptedSink {
        chunks: Chunks::new(cuts),
        bytes: Vec::new(),
    };
    let mut queued = Vec::new();
    for (i, f) in frags.iter().enumerate() {
        let cookie = i as u64;
        // SAFETY: the payload lives, unchanged, until the end of this
        // function.
        let payload = unsafe { Payload::from_raw(f.payload.as_ptr(), f.payload.len(), cookie) };
        let outcome = if ep.queue.is_empty() {
            match ep.try_send_now_to(&mut sink, &f.header, payload) {
                Ok(sent) => sent,
                Err((e, _)) => panic!("scripted sinks do not fail: {e}"),
            }
        } else {
            ep.queue_new(&f.header, payload)
        };
        match outcome {
            Sent::Queued => {
                rec.queued(cookie, 0, 1);
                queued.push(cookie);
            }
            Sent::Done(p) => assert_eq!(p.as_ptr(), f.payload.as_ptr(), "the same payload"),
            _ => panic!("a send to a scripted sink is Done or Queued"),
        }
        rec.progress_with(|pml| ep.flush_to(&mut sink, pml))
            .expect("flush");
    }
    let stream_len: usize = frags
        .iter()
        .map(|f| FRAME_HEADER_LEN + f.header.len() + f.payload.len())
        .sum();
    let limit = call_limit(stream_len, frags.len(), cuts);
    let mut rounds = 0;
    while !ep.queue.is_empty() {
        rec.progress_with(|pml| ep.flush_to(&mut sink, pml))
            .expect("flush");
        rounds += 1;
        assert!(rounds < limit, "the queue never drained ({rounds} rounds)");
    }
    assert_eq!(
        rec.send_dones(),
        queued,
        "on_send_done: each queued fragment once, in order"
    );
    rec.assert_clean("the writer");
    sink.bytes
}

/// Most calls a writer or reader may take over a stream of `len` bytes in
/// `frames` frames when each call gets at most one allowance of `cuts`:
/// every cycle of the script allows at least one byte, so a correct side
/// needs at most one cycle per byte or frame boundary; more means it spins
/// without progress.
fn call_limit(len: usize, frames: usize, cuts: &[usize]) -> usize {
    (len + 2 * frames + 16) * cuts.len() * 2
}

/// Reads `bytes` through an inbound reader (module 0, from peer 1) from a
/// source cut by `cuts`, the kit's recorder as the pml giving destinations
/// (`direct`) or not; checks the contract and returns what was delivered
/// and how the stream ended.
fn read_all(bytes: Vec<u8>, cuts: &[usize], direct: bool) -> (Vec<Fragment>, Ended) {
    let rec = Recorder::new();
    rec.set_default_placement(if direct {
        Placement::Destination
    } else {
        Placement::BtlHeld
    });
    let mut conn = Inbound::new(dummy_fd(), 0, 1, None, true);
    let mut src = ScriptedSource {
        chunks: Chunks::new(cuts),
        bytes,
        pos: 0,
        end_of_stream: true,
    };
    let limit = call_limit(src.bytes.len(), src.bytes.len() / FRAME_HEADER_LEN, cuts);
    let mut calls = 0;
    let ended = loop {
        match rec.progress_with(|pml| conn.service_from(&mut src, pml)) {
            Ok(_) => {}
            Err((_, ended)) => break ended,
        }
        calls += 1;
        assert!(
            calls < limit,
            "the reader never reached the end ({calls} calls)"
        );
    };
    rec.assert_clean("the reader");
    let got = rec
        .fragments()
        .into_iter()
        .map(|f| {
            assert_eq!((f.module, f.peer), (0, 1));
            assert_eq!(f.landed, direct);
            Fragment {
                header: f.header,
                payload: f.payload,
            }
        })
        .collect();
    (got, ended)
}

/// Writes and reads `specs` ((header length, payload length) per
/// fragment) with the given cuts on both sides, checking every byte.
fn round_trip(specs: &[(usize, usize)], write_cuts: &[usize], read_cuts: &[usize], direct: bool) {
    let frags = fragments(specs);
    let bytes = write_all(&frags, write_cuts);
    let expected = encoding(&frags);
    assert_eq!(bytes.len(), expected.len(), "encoded length");
    assert!(
        bytes == expected,
        "the written stream differs from the encoding"
    );
    let (got, ended) = read_all(bytes, read_cuts, direct);
    assert_eq!(got.len(), frags.len(), "fragments delivered");
    for (i, (g, f)) in got.iter().zip(&frags).enumerate() {
        assert_eq!(g.header, f.header, "header of fragment {i}");
        assert!(
            g.payload == f.payload,
            "payload of fragment {i} ({} bytes) differs",
            f.payload.len()
        );
    }
    assert!(
        matches!(&ended, Ended::Failed(why) if why.contains("without saying goodbye")),
        "{ended:?}"
    );
}

/// Sizes around every boundary the reader and writer have.
fn boundary_sizes() -> Vec<usize> {
    let mut v = vec![0, 1, 2, 3, 7, 50, 255, 256, 257];
    for b in [
        FRAME_HEADER_LEN,
        FRAME_HEADER_LEN + MAX_HEADER,
        2577,
        2621,
        4 * 1024,
        16 * 1024,
        RECV_BUF,
        2 * RECV_BUF,
    ] {
        v.extend([b - 1, b, b + 1]);
    }
    v
}

#[test]
fn a_header_ending_at_the_end_of_the_buffered_bytes_with_a_short_rest() {
    // The reader first gets exactly a frame and pml header, then the
    // payload (under 4 KiB) and the next frame together.
    let hlen = 24;
    let specs = [(hlen, 2577), (hlen, 2577), (hlen, 2577)];
    for direct in [false, true] {
        round_trip(
            &specs,
            &[1 << 20],
            &[FRAME_HEADER_LEN + hlen, 2577 + FRAME_HEADER_LEN + hlen],
            direct,
        );
    }
}

#[test]
fn a_stream_of_equal_messages_in_every_constant_chunking() {
    for plen in [6, 50, 2577, 2621] {
        let specs = vec![(24, plen); 40];
        let total = encoding(&fragments(&specs)).len();
        let mut cuts: Vec<usize> = (1..=80).collect();
        cuts.extend(boundary_sizes().into_iter().filter(|&c| c > 0 && c < total));
        for cut in cuts {
            for direct in [false, true] {
                round_trip(&specs, &[cut], &[cut], direct);
            }
        }
    }
}

#[test]
fn every_boundary_size_in_every_boundary_chunking() {
    let sizes = boundary_sizes();
    let specs: Vec<(usize, usize)> = sizes
        .iter()
        .enumerate()
        .map(|(i, &p)| (i % (MAX_HEADER + 1), p))
        .collect();
    for cut in sizes.iter().copied().filter(|&c| c > 0) {
        round_trip(&specs, &[cut, 0], &[cut, 0], false);
        round_trip(&specs, &[cut], &[cut + 1, 0, cut], true);
    }
}

#[test]
fn tiny_fragments_of_a_large_message() {
    // What btl_tcp_max_send_size 1 or 2 makes of a large message.
    for size in [1, 2] {
        let specs = vec![(16, size); 20_000];
        for cut in [1, 5, 13, 4096, RECV_BUF] {
            round_trip(&specs, &[RECV_BUF], &[cut], false);
        }
    }
}

#[test]
fn a_stream_cut_inside_a_frame_ends_with_a_failure_not_a_fragment() {
    let frags = fragments(&[(8, 100), (8, 5000)]);
    let bytes = encoding(&frags);
    for cut_at in [5, FRAME_HEADER_LEN + 8 + 50, bytes.len() - 1] {
        let (got, ended) = read_all(bytes[..cut_at].to_vec(), &[7], false);
        assert!(got.len() < 2, "cut at {cut_at}");
        assert!(
            matches!(&ended, Ended::Failed(why) if why.contains("in the middle")),
            "cut at {cut_at}: {ended:?}"
        );
    }
}

#[test]
fn an_impossible_length_fails_the_connection_without_allocating_it() {
    let mut head = [0u8; FRAME_HEADER_LEN + MAX_HEADER];
    let n = wire::put_frame_header(&mut head, &[1, 2], 0);
    // 2^40 bytes: within the wire's limit, beyond any buffer.
    head[4..12].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let (got, ended) = read_all(head[..n].to_vec(), &[n], false);
    assert!(got.is_empty());
    assert!(
        matches!(&ended, Ended::Failed(why) if why.contains("more than this process can buffer")),
        "{ended:?}"
    );
}

fn chunk_size() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0usize),
        1usize..=16,
        prop::sample::select(boundary_sizes()),
        1usize..=3 * RECV_BUF,
    ]
}

fn fragment_spec() -> impl Strategy<Value = (usize, usize)> {
    (
        0usize..=MAX_HEADER,
        prop_oneof![
            0usize..=64,
            prop::sample::select(boundary_sizes()),
            0usize..=3 * RECV_BUF,
        ],
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn any_fragments_survive_any_chunking(
        specs in prop::collection::vec(fragment_spec(), 1..24),
        write_cuts in prop::collection::vec(chunk_size(), 1..6),
        read_cuts in prop::collection::vec(chunk_size(), 1..6),
        direct in any::<bool>(),
    ) {
        prop_assume!(write_cuts.iter().any(|&c| c > 0) && read_cuts.iter().any(|&c| c > 0));
        round_trip(&specs, &write_cuts, &read_cuts, direct);
    }
}

/// A source whose reads panic (stands for a bug in the reader).
struct PanickingSource;

impl ByteSource for PanickingSource {
    unsafe fn recv(&mut self, _buf: *mut u8, _len: usize) -> io::Result<usize> {
        panic!("a bug in the reader");
    }
}

#[test]
fn a_panic_in_the_reader_ends_the_connection_with_its_message() {
    let rec = Recorder::new();
    let mut conn = Inbound::new(dummy_fd(), 0, 1, None, true);
    let outcome = rec.progress_with(|pml| conn.service_guarded(&mut PanickingSource, pml));
    let Err((0, Ended::Failed(why))) = outcome else {
        panic!("expected the connection to end, got {outcome:?}");
    };
    assert!(why.contains("internal error"), "{why}");
    assert!(why.contains("'a bug in the reader'"), "{why}");
    assert!(rec.events().is_empty());
    rec.assert_clean("the reader");
}
