//! Cutting one peer's byte stream into PMI-1 messages.
//!
//! Bytes arrive in arbitrary chunks; a [`Framer`] buffers the incomplete
//! tail and hands out complete messages: a line ending in `\n`, or, when a
//! message starts with `mcmd=`, the whole multi-line block up to and
//! including the line `endcmd`. A message that grows beyond its limit
//! without ending is dropped as it arrives (the framer keeps only its first
//! bytes, to name it in an error) and reported once its end arrives.

use std::ops::Range;

use crate::wire::MAX_MESSAGE_LEN;

const MCMD: &[u8] = b"mcmd=";
const ENDCMD: &[u8] = b"\nendcmd\n";
/// How many bytes of an overlong message [`Framer::overlong_head`] keeps.
const HEAD_LEN: usize = 80;

/// One complete message, as a range of [`Framer::bytes`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    /// A line, its `\n` included.
    Line(Range<usize>),
    /// An `mcmd=` block, from `mcmd=` through `endcmd\n`.
    Multi(Range<usize>),
    /// A message longer than the limit has ended; its first bytes are in
    /// [`Framer::overlong_head`] and its length is `len`.
    TooLong {
        /// The length of the whole message in bytes.
        len: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Line,
    Multi,
}

impl Kind {
    fn terminator(self) -> &'static [u8] {
        match self {
            Kind::Line => b"\n",
            Kind::Multi => ENDCMD,
        }
    }
}

/// Buffers one peer's bytes and yields complete messages.
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    /// Start of the first byte not yet handed out.
    start: usize,
    /// Where the search for the current message's end resumes.
    scan: usize,
    max: usize,
    /// Set while dropping the rest of an overlong message.
    discarding: Option<(Kind, usize)>,
    head: Vec<u8>,
}

impl Default for Framer {
    fn default() -> Self {
        Framer::new(MAX_MESSAGE_LEN)
    }
}

impl Framer {
    /// A framer that accepts messages of at most `max` bytes (at least 16;
    /// smaller values are raised to 16). [`Framer::default`] uses
    /// [`MAX_MESSAGE_LEN`].
    pub fn new(max: usize) -> Self {
        Framer {
            buf: Vec::new(),
            start: 0,
            scan: 0,
            max: max.max(16),
            discarding: None,
            head: Vec::new(),
        }
    }

    /// Appends bytes read from the peer. Ranges returned by earlier calls
    /// to [`Framer::next_frame`] become invalid.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.start > 0 {
            self.buf.drain(..self.start);
            self.scan -= self.start;
            self.start = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The buffer that the ranges of [`Frame`] index.
    pub fn bytes(&self, range: Range<usize>) -> &[u8] {
        self.buf.get(range).unwrap_or(&[])
    }

    /// The first bytes (up to 80) of the last overlong message.
    pub fn overlong_head(&self) -> &[u8] {
        &self.head
    }

    /// Bytes received that do not yet form a complete message (0 when the
    /// peer stopped at a message boundary).
    pub fn pending_len(&self) -> usize {
        match self.discarding {
            Some((_, len)) => len + (self.buf.len() - self.start),
            None => self.buf.len() - self.start,
        }
    }

    /// The beginning of the incomplete message, for an error report.
    pub fn pending_head(&self) -> &[u8] {
        if self.discarding.is_some() {
            return &self.head;
        }
        let pending = &self.buf[self.start..];
        &pending[..pending.len().min(HEAD_LEN)]
    }

    /// The next complete message, if the buffered bytes hold one.
    pub fn next_frame(&mut self) -> Option<Frame> {
        if let Some((kind, dropped)) = self.discarding {
            return self.continue_discarding(kind, dropped);
        }
        let pending = &self.buf[self.start..];
        if pending.is_empty() {
            return None;
        }
        let kind = if pending.starts_with(MCMD) {
            Kind::Multi
        } else if MCMD.starts_with(pending) && !pending.contains(&b'\n') {
            // Could still become `mcmd=`: wait for more bytes.
            return None;
        } else {
            Kind::Line
        };
        let term = kind.terminator();
        // Resume where the last search stopped, backing up so that a
        // terminator split across two pushes is still found.
        let from = self
            .scan
            .max(self.start)
            .saturating_sub(term.len() - 1)
            .max(self.start);
        match find(&self.buf[from..], term) {
            Some(i) => {
                let end = from + i + term.len();
                let range = self.start..end;
                self.start = end;
                self.scan = end;
                if range.len() > self.max {
                    self.head.clear();
                    let head_end = range.start + HEAD_LEN.min(range.len());
                    self.head
                        .extend_from_slice(&self.buf[range.start..head_end]);
                    return Some(Frame::TooLong { len: range.len() });
                }
                Some(match kind {
                    Kind::Line => Frame::Line(range),
                    Kind::Multi => Frame::Multi(range),
                })
            }
            None => {
                self.scan = self.buf.len();
                let len = self.buf.len() - self.start;
                if len > self.max {
                    self.head.clear();
                    self.head
                        .extend_from_slice(&self.buf[self.start..self.start + HEAD_LEN.min(len)]);
                    self.discarding = Some((kind, 0));
                    return self.continue_discarding(kind, 0);
                }
                None
            }
        }
    }

    /// Drops bytes of an overlong message until its terminator.
    fn continue_discarding(&mut self, kind: Kind, dropped: usize) -> Option<Frame> {
        let term = kind.terminator();
        let pending = &self.buf[self.start..];
        match find(pending, term) {
            Some(i) => {
                let end = self.start + i + term.len();
                let len = dropped + (end - self.start);
                self.start = end;
                self.scan = end;
                self.discarding = None;
                Some(Frame::TooLong { len })
            }
            None => {
                // Keep only what could be the start of a split terminator.
                let keep = (term.len() - 1).min(pending.len());
                let drop_to = self.buf.len() - keep;
                let dropped = dropped + (drop_to - self.start);
                self.start = drop_to;
                self.scan = drop_to;
                self.discarding = Some((kind, dropped));
                None
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() == 1 {
        return haystack.iter().position(|&b| b == needle[0]);
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn frames(f: &mut Framer) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(frame) = f.next_frame() {
            out.push(match frame {
                Frame::Line(r) | Frame::Multi(r) => f.bytes(r).to_vec(),
                Frame::TooLong { len } => format!("<too long: {len}>").into_bytes(),
            });
        }
        out
    }

    #[test]
    fn lines_in_any_chunking() {
        let stream = b"cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=barrier_in\n";
        for chunk in 1..stream.len() {
            let mut f = Framer::default();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                f.push(piece);
                got.extend(frames(&mut f));
            }
            assert_eq!(
                got,
                vec![
                    b"cmd=init pmi_version=1 pmi_subversion=1\n".to_vec(),
                    b"cmd=get_maxes\n".to_vec(),
                    b"cmd=barrier_in\n".to_vec()
                ],
                "chunk size {chunk}"
            );
            assert_eq!(f.pending_len(), 0);
        }
    }

    #[test]
    fn mcmd_blocks_end_at_endcmd() {
        let block = b"mcmd=spawn\nnprocs=1\nexecname=a\ntotspawns=1\nspawnssofar=1\nendcmd\n";
        let stream = [&block[..], b"cmd=get_maxes\n"].concat();
        for chunk in 1..stream.len() {
            let mut f = Framer::default();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                f.push(piece);
                got.extend(frames(&mut f));
            }
            assert_eq!(got, vec![block.to_vec(), b"cmd=get_maxes\n".to_vec()]);
        }
    }

    #[test]
    fn a_short_line_that_could_have_been_mcmd() {
        let mut f = Framer::default();
        f.push(b"mcm");
        assert_eq!(f.next_frame(), None);
        f.push(b"\n");
        assert_eq!(frames(&mut f), vec![b"mcm\n".to_vec()]);
    }

    #[test]
    fn overlong_messages_are_dropped_and_reported_once() {
        let mut f = Framer::new(32);
        f.push(b"cmd=put key=k value=");
        for _ in 0..100 {
            f.push(&[b'x'; 10]);
            assert_eq!(f.next_frame(), None);
        }
        assert!(
            f.buf.len() < 64,
            "the framer must not keep an overlong message"
        );
        f.push(b"yy\ncmd=get_maxes\n");
        assert_eq!(
            frames(&mut f),
            vec![b"<too long: 1023>".to_vec(), b"cmd=get_maxes\n".to_vec()]
        );
        assert!(f.overlong_head().starts_with(b"cmd=put key=k"));
    }

    #[test]
    fn overlong_mcmd_block_is_dropped_until_endcmd() {
        let mut f = Framer::new(32);
        f.push(b"mcmd=spawn\n");
        for _ in 0..10 {
            f.push(b"arg1=xxxxxxxxxxxxxxxxxxxx\n");
            assert_eq!(f.next_frame(), None);
        }
        f.push(b"end");
        assert_eq!(f.next_frame(), None);
        f.push(b"cmd\ncmd=barrier_in\n");
        let got = frames(&mut f);
        assert_eq!(got.len(), 2);
        assert!(got[0].starts_with(b"<too long"));
        assert_eq!(got[1], b"cmd=barrier_in\n");
    }

    #[test]
    fn pending_reports_an_unfinished_message() {
        let mut f = Framer::default();
        f.push(b"cmd=get_maxes\ncmd=put key");
        assert_eq!(frames(&mut f).len(), 1);
        assert_eq!(f.pending_len(), 11);
        assert_eq!(f.pending_head(), b"cmd=put key");
    }

    proptest! {
        #[test]
        fn never_panics_and_never_grows_unbounded(
            chunks in prop::collection::vec(
                prop::collection::vec(
                    prop::sample::select(vec![b'a', b'\n', b'm', b'c', b'd', b'=', b'e', b'n']),
                    0..80),
                0..40)
        ) {
            let mut f = Framer::new(64);
            for chunk in &chunks {
                f.push(chunk);
                while let Some(frame) = f.next_frame() {
                    if let Frame::Line(r) | Frame::Multi(r) = frame {
                        prop_assert!(r.len() <= 64);
                        let _ = f.bytes(r);
                    }
                }
                prop_assert!(f.buf.len() - f.start <= 64 + 80);
            }
        }

        #[test]
        fn lines_come_out_as_they_went_in(
            lines in prop::collection::vec("[a-z= ]{0,20}", 0..10),
            chunk in 1usize..17
        ) {
            let stream: Vec<u8> = lines.iter().flat_map(|l| format!("cmd={l}\n").into_bytes()).collect();
            let mut f = Framer::default();
            let mut got = Vec::new();
            for piece in stream.chunks(chunk) {
                f.push(piece);
                got.extend(frames(&mut f));
            }
            let want: Vec<Vec<u8>> = lines.iter().map(|l| format!("cmd={l}\n").into_bytes()).collect();
            prop_assert_eq!(got, want);
        }
    }
}
