//! What goes over a connection: the handshake (hello and acknowledgement)
//! and the frame header in front of every fragment. All integers are
//! little-endian.
//!
//! After the acknowledgement, frames may flow in both directions on the
//! same connection (the acceptor sends on a connection made to it when it
//! has not made its own; version 1 connections carried data one way only,
//! hence version 2).
//!
//! # Hello (connector → acceptor, [`HELLO_LEN`] = 48 bytes)
//!
//! | offset | size | field                                                  |
//! |--------|------|--------------------------------------------------------|
//! | 0      | 8    | magic `OXMPItcp`                                       |
//! | 8      | 2    | protocol version, [`PROTOCOL_VERSION`]                 |
//! | 10     | 2    | link number (`0..btl_tcp_links`)                       |
//! | 12     | 2    | the acceptor's interface, as an index into its card    |
//! | 14     | 2    | reserved, 0                                            |
//! | 16     | 4    | the connector's rank                                   |
//! | 20     | 4    | the job size as the connector knows it                 |
//! | 24     | 8    | job id                                                 |
//! | 32     | 16   | job secret                                             |
//!
//! # Acknowledgement (acceptor → connector, [`ACK_LEN`] = 16 bytes)
//!
//! | offset | size | field                       |
//! |--------|------|-----------------------------|
//! | 0      | 8    | magic `OXMPIack`            |
//! | 8      | 2    | protocol version            |
//! | 10     | 2    | reserved, 0                 |
//! | 12     | 4    | the acceptor's rank         |
//!
//! # Frame ([`FRAME_HEADER_LEN`] = 12 bytes, then the pml header and the payload)
//!
//! | offset | size | field                                    |
//! |--------|------|------------------------------------------|
//! | 0      | 2    | marker [`FRAME_MARKER`]                  |
//! | 2      | 2    | pml header length (≤ `MAX_HEADER`)       |
//! | 4      | 8    | payload length                           |

use std::fmt;

use oxmpi_framework_btl::module::{JobIdentity, MAX_HEADER};

/// Version of the connection protocol (hello, ack, frames).
pub const PROTOCOL_VERSION: u16 = 2;
/// Magic of the hello.
pub const HELLO_MAGIC: [u8; 8] = *b"OXMPItcp";
/// Magic of the acknowledgement.
pub const ACK_MAGIC: [u8; 8] = *b"OXMPIack";
/// Length of the hello.
pub const HELLO_LEN: usize = 48;
/// Length of the acknowledgement.
pub const ACK_LEN: usize = 16;
/// Length of the frame header.
pub const FRAME_HEADER_LEN: usize = 12;
/// First two bytes of every frame (catches a desynchronised stream).
pub const FRAME_MARKER: u16 = 0xf7a3;
/// Largest payload one frame may announce (a larger length is a damaged
/// stream, not a fragment).
pub const MAX_FRAME_PAYLOAD: u64 = 1 << 40;

/// The job secret as 16 bytes.
pub fn secret_bytes(identity: &JobIdentity) -> [u8; 16] {
    let mut s = [0u8; 16];
    s[..8].copy_from_slice(&identity.secret[0].to_le_bytes());
    s[8..].copy_from_slice(&identity.secret[1].to_le_bytes());
    s
}

/// Builds a hello.
pub fn hello(identity: &JobIdentity, link: u16, target_iface: u16) -> [u8; HELLO_LEN] {
    let mut h = [0u8; HELLO_LEN];
    h[0..8].copy_from_slice(&HELLO_MAGIC);
    h[8..10].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    h[10..12].copy_from_slice(&link.to_le_bytes());
    h[12..14].copy_from_slice(&target_iface.to_le_bytes());
    h[16..20].copy_from_slice(&identity.rank.to_le_bytes());
    h[20..24].copy_from_slice(&identity.size.to_le_bytes());
    h[24..32].copy_from_slice(&identity.job_id.to_le_bytes());
    h[32..48].copy_from_slice(&secret_bytes(identity));
    h
}

/// Builds an acknowledgement.
pub fn ack(rank: u32) -> [u8; ACK_LEN] {
    let mut a = [0u8; ACK_LEN];
    a[0..8].copy_from_slice(&ACK_MAGIC);
    a[8..10].copy_from_slice(&PROTOCOL_VERSION.to_le_bytes());
    a[12..16].copy_from_slice(&rank.to_le_bytes());
    a
}

/// What a valid hello says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hello {
    /// The connector's rank.
    pub rank: u32,
    /// The link.
    pub link: u16,
    /// The acceptor's interface (index into its card).
    pub target_iface: u16,
}

/// Why a hello (or an acknowledgement) is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The magic is wrong: not an oxmpi tcp peer.
    Magic,
    /// Another protocol version.
    Version(u16),
    /// Another job.
    JobId {
        /// The job id it sent.
        got: u64,
    },
    /// The secret does not match.
    Secret,
    /// Another job size.
    JobSize {
        /// The size it sent.
        got: u32,
        /// Ours.
        ours: u32,
    },
    /// A rank outside the job, or our own.
    Rank {
        /// The rank it sent.
        got: u32,
        /// The job size.
        size: u32,
    },
    /// Reserved bytes not zero.
    Reserved,
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Magic => f.write_str(
                "it did not start with the oxmpi tcp handshake (not an oxmpi process of this job)",
            ),
            Refusal::Version(v) => write!(
                f,
                "it speaks protocol version {v}, this process version {PROTOCOL_VERSION} \
                 (are all ranks running the same oxmpi installation?)"
            ),
            Refusal::JobId { got } => write!(f, "it belongs to another job (job id {got:#x})"),
            Refusal::Secret => f.write_str("it did not present this job's secret"),
            Refusal::JobSize { got, ours } => {
                write!(
                    f,
                    "it believes the job has {got} ranks, this job has {ours}"
                )
            }
            Refusal::Rank { got, size } => {
                write!(
                    f,
                    "it claims rank {got}, which is not another rank of this job (size {size})"
                )
            }
            Refusal::Reserved => f.write_str("its handshake has nonzero reserved bytes"),
        }
    }
}

/// Compares two secrets in time independent of where they differ.
pub fn secrets_equal(a: &[u8; 16], b: &[u8; 16]) -> bool {
    let mut diff = 0u8;
    for i in 0..16 {
        diff |= std::hint::black_box(a[i] ^ b[i]);
    }
    std::hint::black_box(diff) == 0
}

/// Checks a hello against this process's identity.
///
/// # Errors
///
/// The first [`Refusal`] that applies, checked in the order magic,
/// version, reserved bytes, secret, job id, job size, rank (the secret
/// is checked before anything that would tell a stranger about the job).
pub fn check_hello(h: &[u8; HELLO_LEN], me: &JobIdentity) -> Result<Hello, Refusal> {
    if h[0..8] != HELLO_MAGIC {
        return Err(Refusal::Magic);
    }
    let version = u16::from_le_bytes([h[8], h[9]]);
    if version != PROTOCOL_VERSION {
        return Err(Refusal::Version(version));
    }
    if h[14..16] != [0, 0] {
        return Err(Refusal::Reserved);
    }
    let mut secret = [0u8; 16];
    secret.copy_from_slice(&h[32..48]);
    if !secrets_equal(&secret, &secret_bytes(me)) {
        return Err(Refusal::Secret);
    }
    let job_id = u64::from_le_bytes(h[24..32].try_into().unwrap_or([0; 8]));
    if job_id != me.job_id {
        return Err(Refusal::JobId { got: job_id });
    }
    let size = u32::from_le_bytes([h[20], h[21], h[22], h[23]]);
    if size != me.size {
        return Err(Refusal::JobSize {
            got: size,
            ours: me.size,
        });
    }
    let rank = u32::from_le_bytes([h[16], h[17], h[18], h[19]]);
    if rank >= me.size || rank == me.rank {
        return Err(Refusal::Rank {
            got: rank,
            size: me.size,
        });
    }
    Ok(Hello {
        rank,
        link: u16::from_le_bytes([h[10], h[11]]),
        target_iface: u16::from_le_bytes([h[12], h[13]]),
    })
}

/// Checks an acknowledgement from the peer expected to be `rank`.
///
/// # Errors
///
/// A sentence saying what is wrong.
pub fn check_ack(a: &[u8; ACK_LEN], rank: u32) -> Result<(), String> {
    if a[0..8] != ACK_MAGIC {
        return Err("the answer to the handshake is not an oxmpi tcp acknowledgement".into());
    }
    let version = u16::from_le_bytes([a[8], a[9]]);
    if version != PROTOCOL_VERSION {
        return Err(format!(
            "the acknowledgement has protocol version {version}, this process \
             {PROTOCOL_VERSION}"
        ));
    }
    let got = u32::from_le_bytes([a[12], a[13], a[14], a[15]]);
    if got != rank {
        return Err(format!(
            "the process listening there is rank {got}, not rank {rank}"
        ));
    }
    Ok(())
}

/// Writes a frame header plus the pml header into `out` (at least
/// `FRAME_HEADER_LEN + header.len()` bytes); returns the bytes written.
#[inline]
pub fn put_frame_header(out: &mut [u8], header: &[u8], payload_len: usize) -> usize {
    out[0..2].copy_from_slice(&FRAME_MARKER.to_le_bytes());
    out[2..4].copy_from_slice(&(header.len() as u16).to_le_bytes());
    out[4..12].copy_from_slice(&(payload_len as u64).to_le_bytes());
    out[FRAME_HEADER_LEN..FRAME_HEADER_LEN + header.len()].copy_from_slice(header);
    FRAME_HEADER_LEN + header.len()
}

/// Reads a frame header: `(pml header length, payload length)`.
///
/// # Errors
///
/// A sentence when the marker or a length is impossible (a damaged or
/// desynchronised stream).
#[inline]
pub fn get_frame_header(b: &[u8]) -> Result<(usize, usize), String> {
    let marker = u16::from_le_bytes([b[0], b[1]]);
    let hlen = usize::from(u16::from_le_bytes([b[2], b[3]]));
    let plen = u64::from_le_bytes([b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11]]);
    if marker != FRAME_MARKER {
        return Err(format!(
            "the byte stream is damaged (frame marker {marker:#06x} instead of {FRAME_MARKER:#06x})"
        ));
    }
    if hlen > MAX_HEADER {
        return Err(format!(
            "a frame announces a {hlen}-byte header (at most {MAX_HEADER})"
        ));
    }
    if plen > MAX_FRAME_PAYLOAD || usize::try_from(plen).is_err() {
        return Err(format!(
            "a frame announces an impossible payload of {plen} bytes"
        ));
    }
    Ok((hlen, plen as usize))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn me() -> JobIdentity {
        JobIdentity {
            job_id: 0xabcd,
            secret: [0x1111_2222_3333_4444, 0x5555_6666_7777_8888],
            rank: 0,
            size: 4,
        }
    }

    fn peer(rank: u32) -> JobIdentity {
        JobIdentity { rank, ..me() }
    }

    #[test]
    fn good_hello_is_accepted() {
        let h = hello(&peer(2), 1, 3);
        assert_eq!(
            check_hello(&h, &me()),
            Ok(Hello {
                rank: 2,
                link: 1,
                target_iface: 3
            })
        );
    }

    #[test]
    fn bad_hellos_are_refused() {
        let good = hello(&peer(2), 0, 0);
        let mut h = good;
        h[0] = b'X';
        assert_eq!(check_hello(&h, &me()), Err(Refusal::Magic));
        let mut h = good;
        h[8] = 1;
        assert_eq!(check_hello(&h, &me()), Err(Refusal::Version(1)));
        let mut h = good;
        h[14] = 1;
        assert_eq!(check_hello(&h, &me()), Err(Refusal::Reserved));
        let mut h = good;
        h[47] ^= 1;
        assert_eq!(check_hello(&h, &me()), Err(Refusal::Secret));
        let other_job = JobIdentity {
            job_id: 7,
            ..peer(2)
        };
        assert_eq!(
            check_hello(&hello(&other_job, 0, 0), &me()),
            Err(Refusal::JobId { got: 7 })
        );
        let bigger = JobIdentity { size: 5, ..peer(2) };
        assert_eq!(
            check_hello(&hello(&bigger, 0, 0), &me()),
            Err(Refusal::JobSize { got: 5, ours: 4 })
        );
        assert_eq!(
            check_hello(&hello(&peer(4), 0, 0), &me()),
            Err(Refusal::Rank { got: 4, size: 4 })
        );
        assert_eq!(
            check_hello(&hello(&peer(0), 0, 0), &me()),
            Err(Refusal::Rank { got: 0, size: 4 })
        );
    }

    #[test]
    fn acks() {
        assert_eq!(check_ack(&ack(3), 3), Ok(()));
        assert!(check_ack(&ack(3), 2)
            .unwrap_err()
            .contains("rank 3, not rank 2"));
        let mut a = ack(3);
        a[1] = 0;
        assert!(check_ack(&a, 3).is_err());
    }

    #[test]
    fn secret_comparison() {
        let a = [7u8; 16];
        let mut b = a;
        assert!(secrets_equal(&a, &b));
        b[15] = 6;
        assert!(!secrets_equal(&a, &b));
    }

    #[test]
    fn frame_headers() {
        let mut buf = [0u8; FRAME_HEADER_LEN + MAX_HEADER];
        let n = put_frame_header(&mut buf, &[1, 2, 3], 1 << 33);
        assert_eq!(n, FRAME_HEADER_LEN + 3);
        assert_eq!(get_frame_header(&buf), Ok((3, 1 << 33)));
        assert_eq!(&buf[12..15], &[1, 2, 3]);
        let mut bad = buf;
        bad[0] = 0;
        assert!(get_frame_header(&bad).unwrap_err().contains("damaged"));
        let mut bad = buf;
        bad[2] = 65;
        assert!(get_frame_header(&bad)
            .unwrap_err()
            .contains("65-byte header"));
        let mut bad = buf;
        bad[11] = 0xff;
        assert!(get_frame_header(&bad)
            .unwrap_err()
            .contains("impossible payload"));
    }
}
