//! The wire format: ob1's fragment headers.
//!
//! Every header is little-endian and starts with its type byte. Bytes
//! marked "zero" are written as 0 and ignored on receipt.
//!
//! | type | name  | bytes | layout |
//! |------|-------|-------|--------|
//! | 1    | MATCH | 20    | 0 type, 1 flags (0), 2–3 zero, 4–7 context, 8–11 tag (i32), 12–19 sequence |
//! | 2    | RNDV  | 40    | 0 type, 1 flags (bit 0 = synchronous send, bit 1 = the sender can put), 2–3 zero, 4–7 context, 8–11 source rank, 12–15 tag (i32), 16–23 sequence, 24–31 message length, 32–39 sender request id |
//! | 3    | ACK   | 40    | 0 type, 1–7 zero, 8–15 sender request id, 16–23 receiver request id, 24–31 bytes the receiver wants, 32–39 address of the receive buffer to put into (0: send FRAGs) |
//! | 4    | FRAG  | 24    | 0 type, 1–7 zero, 8–15 receiver request id, 16–23 offset in the message |
//! | 5    | RGET  | 48    | bytes 0–31 as RNDV (flags: bit 0 = synchronous send), 32–39 sender request id, 40–47 address of the send buffer to get from |
//! | 6    | FIN   | 24    | 0 type, 1–7 zero, 8–15 request id at the destination, 16–23 bytes moved by get/put |
//!
//! The payload of a MATCH is the whole message; of a RNDV, the message's
//! first bytes; of a FRAG, the bytes at its offset. ACK, RGET and FIN have
//! none.
//!
//! A MATCH names neither its sender nor its length: the sender is the peer
//! the btl delivered it from, the length its payload's. Its 20 bytes leave
//! room for 32 payload bytes in one 64-byte line of sm's fast box (after
//! the box's 12-byte record head).

use std::fmt;

/// Type byte of a MATCH header (an eager message, whole).
pub(crate) const MATCH: u8 = 1;
/// Type byte of a RNDV header (the start of a rendezvous).
pub(crate) const RNDV: u8 = 2;
/// Type byte of an ACK header (the receiver matched a rendezvous).
pub(crate) const ACK: u8 = 3;
/// Type byte of a FRAG header (a piece of a rendezvous message).
pub(crate) const FRAG: u8 = 4;
/// Type byte of a RGET header (a rendezvous the receiver reads with get).
pub(crate) const RGET: u8 = 5;
/// Type byte of a FIN header (the get/puts of a rendezvous finished).
pub(crate) const FIN: u8 = 6;

/// RNDV flag: the sender is a synchronous send (`MPI_Ssend`).
pub(crate) const FLAG_SYNC: u8 = 0x1;
/// RNDV flag: every module the sender uses offers put, so the receiver may
/// answer with its buffer's address.
pub(crate) const FLAG_PUT: u8 = 0x2;

/// Length of a MATCH header.
pub(crate) const MATCH_LEN: usize = 20;
/// Length of a RNDV header.
pub(crate) const RNDV_LEN: usize = 40;
/// Length of an ACK header.
pub(crate) const ACK_LEN: usize = 40;
/// Length of a FRAG header.
pub(crate) const FRAG_LEN: usize = 24;
/// Length of a RGET header.
pub(crate) const RGET_LEN: usize = 48;
/// Length of a FIN header.
pub(crate) const FIN_LEN: usize = 24;

/// The matching information of MATCH and RNDV headers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MatchInfo {
    /// Context id of the communicator.
    pub context: u32,
    /// Job rank of the sender.
    pub source: u32,
    /// Message tag.
    pub tag: i32,
    /// Sequence number per (context, sender, receiver).
    pub sequence: u64,
    /// Length of the whole message in bytes.
    pub len: u64,
}

/// A decoded header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Header {
    /// An eager message (its payload is the whole message).
    Match(MatchInfo),
    /// The start of a rendezvous: the payload is the message's first bytes.
    Rndv {
        /// Matching information.
        info: MatchInfo,
        /// Flags ([`FLAG_SYNC`], [`FLAG_PUT`]).
        flags: u8,
        /// The sender's request id, echoed in the ACK.
        sender: u64,
    },
    /// The start of a rendezvous the receiver reads with get.
    Rget {
        /// Matching information.
        info: MatchInfo,
        /// Flags ([`FLAG_SYNC`]).
        flags: u8,
        /// The sender's request id, echoed in the FIN (or an ACK).
        sender: u64,
        /// Address of the sender's buffer (the whole message).
        addr: u64,
    },
    /// The receiver matched a rendezvous.
    Ack {
        /// The sender's request id (from the RNDV).
        sender: u64,
        /// The receiver's request id, carried by every FRAG.
        receiver: u64,
        /// How many bytes of the message the receiver takes (the message
        /// length, or less when its buffer is smaller); the sender sends
        /// nothing beyond.
        wanted: u64,
        /// Address of the receive buffer for the sender to put into (the
        /// message's offset 0), or 0 for FRAGs.
        addr: u64,
    },
    /// The get/puts of a rendezvous finished.
    Fin {
        /// The request id at the receiver of this header.
        request: u64,
        /// Bytes moved.
        bytes: u64,
    },
    /// A piece of a rendezvous message.
    Frag {
        /// The receiver's request id (from the ACK).
        receiver: u64,
        /// Offset of the payload in the message.
        offset: u64,
    },
}

/// Why a header could not be decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WireError {
    /// No bytes at all.
    Empty,
    /// The type byte is not one of ours.
    UnknownType(u8),
    /// Fewer bytes than the header type needs.
    Short {
        /// Header type name.
        name: &'static str,
        /// Bytes received.
        got: usize,
        /// Bytes needed.
        need: usize,
    },
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WireError::Empty => write!(f, "an empty fragment header"),
            WireError::UnknownType(t) => write!(f, "a fragment header of unknown type {t:#04x}"),
            WireError::Short { name, got, need } => {
                write!(f, "a truncated {name} header ({got} of {need} bytes)")
            }
        }
    }
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0u8; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

#[inline]
fn need(b: &[u8], name: &'static str, need: usize) -> Result<(), WireError> {
    if b.len() < need {
        Err(WireError::Short {
            name,
            got: b.len(),
            need,
        })
    } else {
        Ok(())
    }
}

/// The matching information of a RNDV or RGET header.
#[inline]
fn decode_info(b: &[u8]) -> MatchInfo {
    MatchInfo {
        context: u32_at(b, 4),
        source: u32_at(b, 8),
        tag: u32_at(b, 12) as i32,
        sequence: u64_at(b, 16),
        len: u64_at(b, 24),
    }
}

/// The matching information of a MATCH header from `peer` with
/// `payload_len` payload bytes.
#[inline(always)]
fn decode_match(b: &[u8], peer: u32, payload_len: usize) -> MatchInfo {
    MatchInfo {
        context: u32_at(b, 4),
        source: peer,
        tag: u32_at(b, 8) as i32,
        sequence: u64_at(b, 12),
        len: payload_len as u64,
    }
}

/// The MatchInfo of a MATCH header from `peer` with `payload_len` payload
/// bytes, if `b` is one (the eager path's decoding, field by field: no
/// [`Header`] value is built and moved).
#[inline(always)]
pub(crate) fn match_info(b: &[u8], peer: u32, payload_len: usize) -> Option<MatchInfo> {
    (b.len() >= MATCH_LEN && b[0] == MATCH).then(|| decode_match(b, peer, payload_len))
}

/// The MATCH header for `info` (every byte written, none zeroed first;
/// its source and length travel as the btl's peer and payload).
#[inline(always)]
pub(crate) fn encode_match(info: &MatchInfo) -> [u8; MATCH_LEN] {
    let mut out = [0u8; MATCH_LEN];
    out[0] = MATCH;
    out[1] = 0;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&info.context.to_le_bytes());
    out[8..12].copy_from_slice(&info.tag.to_le_bytes());
    out[12..20].copy_from_slice(&info.sequence.to_le_bytes());
    out
}

/// Writes the first 32 bytes of a RNDV or RGET header.
#[inline]
fn encode_info(out: &mut [u8], kind: u8, flags: u8, info: &MatchInfo) {
    out[0] = kind;
    out[1] = flags;
    out[2] = 0;
    out[3] = 0;
    out[4..8].copy_from_slice(&info.context.to_le_bytes());
    out[8..12].copy_from_slice(&info.source.to_le_bytes());
    out[12..16].copy_from_slice(&info.tag.to_le_bytes());
    out[16..24].copy_from_slice(&info.sequence.to_le_bytes());
    out[24..32].copy_from_slice(&info.len.to_le_bytes());
}

impl Header {
    /// Decodes a header that came from `peer` with `payload_len` payload
    /// bytes (a MATCH's source and length; trailing bytes beyond the
    /// type's length are ignored).
    #[inline]
    pub(crate) fn decode(b: &[u8], peer: u32, payload_len: usize) -> Result<Header, WireError> {
        let Some(&kind) = b.first() else {
            return Err(WireError::Empty);
        };
        match kind {
            MATCH => {
                need(b, "MATCH", MATCH_LEN)?;
                Ok(Header::Match(decode_match(b, peer, payload_len)))
            }
            RNDV => {
                need(b, "RNDV", RNDV_LEN)?;
                Ok(Header::Rndv {
                    info: decode_info(b),
                    flags: b[1],
                    sender: u64_at(b, 32),
                })
            }
            ACK => {
                need(b, "ACK", ACK_LEN)?;
                Ok(Header::Ack {
                    sender: u64_at(b, 8),
                    receiver: u64_at(b, 16),
                    wanted: u64_at(b, 24),
                    addr: u64_at(b, 32),
                })
            }
            RGET => {
                need(b, "RGET", RGET_LEN)?;
                Ok(Header::Rget {
                    info: decode_info(b),
                    flags: b[1],
                    sender: u64_at(b, 32),
                    addr: u64_at(b, 40),
                })
            }
            FIN => {
                need(b, "FIN", FIN_LEN)?;
                Ok(Header::Fin {
                    request: u64_at(b, 8),
                    bytes: u64_at(b, 16),
                })
            }
            FRAG => {
                need(b, "FRAG", FRAG_LEN)?;
                Ok(Header::Frag {
                    receiver: u64_at(b, 8),
                    offset: u64_at(b, 16),
                })
            }
            other => Err(WireError::UnknownType(other)),
        }
    }

    /// Encodes the header into `out`; returns its length.
    #[inline]
    pub(crate) fn encode(&self, out: &mut [u8; 64]) -> usize {
        match self {
            Header::Match(info) => {
                out[..MATCH_LEN].copy_from_slice(&encode_match(info));
                MATCH_LEN
            }
            Header::Rndv {
                info,
                flags,
                sender,
            } => {
                encode_info(out, RNDV, *flags, info);
                out[32..40].copy_from_slice(&sender.to_le_bytes());
                RNDV_LEN
            }
            Header::Rget {
                info,
                flags,
                sender,
                addr,
            } => {
                encode_info(out, RGET, *flags, info);
                out[32..40].copy_from_slice(&sender.to_le_bytes());
                out[40..48].copy_from_slice(&addr.to_le_bytes());
                RGET_LEN
            }
            Header::Ack {
                sender,
                receiver,
                wanted,
                addr,
            } => {
                out[..8].fill(0);
                out[0] = ACK;
                out[8..16].copy_from_slice(&sender.to_le_bytes());
                out[16..24].copy_from_slice(&receiver.to_le_bytes());
                out[24..32].copy_from_slice(&wanted.to_le_bytes());
                out[32..40].copy_from_slice(&addr.to_le_bytes());
                ACK_LEN
            }
            Header::Fin { request, bytes } => {
                out[..8].fill(0);
                out[0] = FIN;
                out[8..16].copy_from_slice(&request.to_le_bytes());
                out[16..24].copy_from_slice(&bytes.to_le_bytes());
                FIN_LEN
            }
            Header::Frag { receiver, offset } => {
                out[..8].fill(0);
                out[0] = FRAG;
                out[8..16].copy_from_slice(&receiver.to_le_bytes());
                out[16..24].copy_from_slice(&offset.to_le_bytes());
                FRAG_LEN
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_framework_btl::module::MAX_HEADER;

    /// Encodes `h` and decodes it as a fragment from `peer` with
    /// `payload_len` payload bytes.
    fn round_trip_from(h: Header, peer: u32, payload_len: usize) -> usize {
        let mut out = [0xAAu8; 64];
        let n = h.encode(&mut out);
        assert!(n <= MAX_HEADER);
        assert_eq!(Header::decode(&out[..n], peer, payload_len), Ok(h));
        // One byte short is refused.
        assert!(matches!(
            Header::decode(&out[..n - 1], peer, payload_len),
            Err(WireError::Short { .. })
        ));
        n
    }

    fn round_trip(h: Header) -> usize {
        round_trip_from(h, 3, 0)
    }

    /// A MatchInfo with every field far from zero.
    fn sample_info() -> MatchInfo {
        MatchInfo {
            context: 0xdead_beef,
            source: 7,
            tag: -12,
            sequence: u64::MAX - 1,
            len: 1 << 40,
        }
    }

    #[test]
    fn headers_round_trip_and_fit() {
        let info = sample_info();
        assert_eq!(
            round_trip_from(Header::Match(info), info.source, info.len as usize),
            MATCH_LEN
        );
        assert_eq!(
            round_trip(Header::Rndv {
                info,
                flags: FLAG_SYNC,
                sender: 0x1234_0000_0001
            }),
            RNDV_LEN
        );
        assert_eq!(
            round_trip(Header::Ack {
                sender: 1,
                receiver: u64::MAX,
                wanted: 99,
                addr: 0x7fff_0000_1000
            }),
            ACK_LEN
        );
        assert_eq!(
            round_trip(Header::Rget {
                info,
                flags: FLAG_SYNC,
                sender: 3,
                addr: 0x5555_0000_0040
            }),
            RGET_LEN
        );
        assert_eq!(
            round_trip(Header::Fin {
                request: 0x2_0000_0007,
                bytes: 1 << 22
            }),
            FIN_LEN
        );
        assert_eq!(
            round_trip(Header::Frag {
                receiver: 5,
                offset: 1 << 33
            }),
            FRAG_LEN
        );
    }

    #[test]
    fn layout_is_little_endian_with_type_first() {
        let info = MatchInfo {
            context: 0x0102_0304,
            source: 9,
            tag: -2,
            sequence: 5,
            len: 100,
        };
        assert_eq!(
            encode_match(&info),
            [1, 0, 0, 0, 4, 3, 2, 1, 0xfe, 0xff, 0xff, 0xff, 5, 0, 0, 0, 0, 0, 0, 0]
        );
        let mut out = [0u8; 64];
        let n = Header::Frag {
            receiver: 0x0102,
            offset: 3,
        }
        .encode(&mut out);
        assert_eq!(
            &out[..n],
            &[4, 0, 0, 0, 0, 0, 0, 0, 2, 1, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0]
        );
    }

    #[test]
    fn bad_headers_are_described() {
        assert_eq!(Header::decode(&[], 0, 0), Err(WireError::Empty));
        assert_eq!(
            Header::decode(&[9, 0, 0], 0, 0).unwrap_err().to_string(),
            "a fragment header of unknown type 0x09"
        );
        assert_eq!(
            Header::decode(&[ACK, 0, 0], 0, 0).unwrap_err().to_string(),
            "a truncated ACK header (3 of 40 bytes)"
        );
    }

    #[test]
    fn the_eager_path_encodes_and_decodes_a_match_like_the_header() {
        let info = MatchInfo {
            len: 32,
            ..sample_info()
        };
        let direct = encode_match(&info);
        let n = direct.len();
        let mut general = [0u8; 64];
        assert_eq!(n, Header::Match(info).encode(&mut general));
        assert_eq!(direct[..n], general[..n]);
        assert_eq!(match_info(&direct[..n], 7, 32), Some(info));
        assert_eq!(
            Header::decode(&direct[..n], 7, 32).unwrap(),
            Header::Match(info)
        );
        // The source and length are the delivery's.
        assert_eq!(
            match_info(&direct[..n], 2, 5),
            Some(MatchInfo {
                source: 2,
                len: 5,
                ..info
            })
        );
        // Anything else is left to the general decoder.
        assert_eq!(match_info(&direct[..n - 1], 7, 32), None, "short");
        let mut rndv = [0u8; 64];
        let m = Header::Rndv {
            info,
            flags: 0,
            sender: 9,
        }
        .encode(&mut rndv);
        assert_eq!(match_info(&rndv[..m], 7, 0), None, "a RNDV");
        assert_eq!(match_info(&[], 7, 0), None, "empty");
    }
}
