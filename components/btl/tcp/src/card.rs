//! The contact card: what a process publishes through the modex so that
//! its peers can reach it (its interfaces, listening ports and link count).
//!
//! # Format (version 1)
//!
//! All integers little-endian.
//!
//! | offset | size | field                                                  |
//! |--------|------|--------------------------------------------------------|
//! | 0      | 1    | format version, 1                                      |
//! | 1      | 1    | links per interface (`btl_tcp_links`), 1–[`MAX_LINKS`] |
//! | 2      | 2    | interface count, 1–[`MAX_INTERFACES`]                  |
//! | 4      | …    | one entry per interface, in module order               |
//!
//! An entry:
//!
//! | size   | field                                                     |
//! |--------|-----------------------------------------------------------|
//! | 1      | address family: 4 or 6                                    |
//! | 1      | flags: bit 0 = loopback device; other bits must be 0      |
//! | 1      | prefix length (≤ 32 for IPv4, ≤ 128 for IPv6)             |
//! | 1      | name length, 1–255                                        |
//! | 2      | listening port (not 0)                                    |
//! | 4      | bandwidth in Mbit/s (used by the reachability weights)    |
//! | 4      | kernel interface index                                    |
//! | 4 / 16 | address                                                   |
//! | n      | interface name (UTF-8, no control characters)             |
//!
//! Nothing may follow the last entry. [`Card::decode`] checks all of this
//! and names the first problem; it never panics.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use oxmpi_netif::interfaces::Interface;

/// The format version this code writes and reads.
pub const CARD_VERSION: u8 = 1;

/// The most links per interface a card may carry (and `btl_tcp_links`
/// accepts).
pub const MAX_LINKS: u8 = 64;

/// The most interfaces a card may carry.
pub const MAX_INTERFACES: u16 = 1024;

const HEADER_LEN: usize = 4;
const ENTRY_FIXED_LEN: usize = 14;
const FLAG_LOOPBACK: u8 = 0x1;

/// One interface of a card: where the peer listens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CardInterface {
    /// The interface (name, index, address, prefix, loopback flag,
    /// bandwidth; always up).
    pub iface: Interface,
    /// The port the peer listens on at `iface.addr`.
    pub port: u16,
}

/// A decoded contact card.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    /// `btl_tcp_links` of the peer.
    pub links: u8,
    /// Its interfaces, in its module order.
    pub interfaces: Vec<CardInterface>,
}

/// Why a contact card cannot be read. [`fmt::Display`] gives one clause
/// naming the problem and its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CardError {
    /// No bytes at all.
    Empty,
    /// A version this code does not read.
    Version(u8),
    /// The card ends too early.
    Truncated {
        /// Its length.
        len: usize,
        /// What was being read.
        reading: String,
    },
    /// A link count of 0 or above [`MAX_LINKS`].
    Links(u8),
    /// An interface count of 0 or above [`MAX_INTERFACES`].
    Count(u16),
    /// An entry's family byte is neither 4 nor 6.
    Family {
        /// Entry number (0-based).
        entry: usize,
        /// The byte.
        family: u8,
    },
    /// An entry has unknown flag bits.
    Flags {
        /// Entry number.
        entry: usize,
        /// The byte.
        flags: u8,
    },
    /// An entry's prefix length exceeds its family's width.
    Prefix {
        /// Entry number.
        entry: usize,
        /// The prefix length.
        prefix: u8,
    },
    /// An entry's port is 0.
    Port {
        /// Entry number.
        entry: usize,
    },
    /// An entry's name is empty, not UTF-8, or has control characters.
    Name {
        /// Entry number.
        entry: usize,
    },
    /// Bytes follow the last entry.
    Trailing {
        /// Where the last entry ends.
        at: usize,
        /// How many bytes follow.
        extra: usize,
    },
}

impl fmt::Display for CardError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CardError::Empty => f.write_str("the card is empty"),
            CardError::Version(v) => write!(
                f,
                "the card has format version {v}, but this build reads version {CARD_VERSION} \
                 (are all ranks running the same oxmpi installation?)"
            ),
            CardError::Truncated { len, reading } => {
                write!(f, "the card ends after {len} bytes, while reading {reading}")
            }
            CardError::Links(n) => {
                write!(f, "the card's link count is {n} (must be 1 to {MAX_LINKS})")
            }
            CardError::Count(n) => write!(
                f,
                "the card's interface count is {n} (must be 1 to {MAX_INTERFACES})"
            ),
            CardError::Family { entry, family } => write!(
                f,
                "interface entry {entry} has address family {family} (must be 4 or 6)"
            ),
            CardError::Flags { entry, flags } => write!(
                f,
                "interface entry {entry} has unknown flag bits {flags:#04x}"
            ),
            CardError::Prefix { entry, prefix } => write!(
                f,
                "interface entry {entry} has prefix length {prefix}, too long for its address family"
            ),
            CardError::Port { entry } => write!(f, "interface entry {entry} has port 0"),
            CardError::Name { entry } => write!(
                f,
                "interface entry {entry} has an empty name, or one that is not UTF-8 text"
            ),
            CardError::Trailing { at, extra } => write!(
                f,
                "{extra} unexpected bytes follow the last interface entry (which ends at byte {at})"
            ),
        }
    }
}

impl std::error::Error for CardError {}

/// A cursor over the card bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize, reading: impl FnOnce() -> String) -> Result<&'a [u8], CardError> {
        match self.bytes.get(self.pos..self.pos + n) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(CardError::Truncated {
                len: self.bytes.len(),
                reading: reading(),
            }),
        }
    }
}

impl Card {
    /// Encodes the card (format above).
    ///
    /// # Panics
    ///
    /// Never for cards this component builds; a name longer than 255
    /// bytes is cut at a character boundary, and interfaces beyond
    /// [`MAX_INTERFACES`] are left out.
    pub fn encode(&self) -> Vec<u8> {
        let count = self.interfaces.len().min(usize::from(MAX_INTERFACES));
        let mut out = Vec::with_capacity(HEADER_LEN + count * 40);
        out.push(CARD_VERSION);
        out.push(self.links);
        out.extend_from_slice(&(count as u16).to_le_bytes());
        for ci in &self.interfaces[..count] {
            let i = &ci.iface;
            let mut name = i.name.as_str();
            while name.len() > 255 {
                let mut cut = 255;
                while !name.is_char_boundary(cut) {
                    cut -= 1;
                }
                name = &name[..cut];
            }
            out.push(if i.addr.is_ipv4() { 4 } else { 6 });
            out.push(if i.is_loopback() { FLAG_LOOPBACK } else { 0 });
            out.push(i.prefix_len);
            out.push(name.len() as u8);
            out.extend_from_slice(&ci.port.to_le_bytes());
            out.extend_from_slice(&i.bandwidth_mbps.to_le_bytes());
            out.extend_from_slice(&i.index.to_le_bytes());
            match i.addr {
                IpAddr::V4(a) => out.extend_from_slice(&a.octets()),
                IpAddr::V6(a) => out.extend_from_slice(&a.octets()),
            }
            out.extend_from_slice(name.as_bytes());
        }
        out
    }

    /// Decodes and checks a card.
    ///
    /// # Errors
    ///
    /// [`CardError`] naming the first problem found.
    pub fn decode(bytes: &[u8]) -> Result<Card, CardError> {
        if bytes.is_empty() {
            return Err(CardError::Empty);
        }
        if bytes[0] != CARD_VERSION {
            return Err(CardError::Version(bytes[0]));
        }
        let mut r = Reader { bytes, pos: 0 };
        let head = r.take(HEADER_LEN, || "the card header".to_owned())?;
        let links = head[1];
        if links == 0 || links > MAX_LINKS {
            return Err(CardError::Links(links));
        }
        let count = u16::from_le_bytes([head[2], head[3]]);
        if count == 0 || count > MAX_INTERFACES {
            return Err(CardError::Count(count));
        }
        let mut interfaces = Vec::with_capacity(usize::from(count));
        for entry in 0..usize::from(count) {
            let fixed = r.take(ENTRY_FIXED_LEN, || format!("interface entry {entry}"))?;
            let (family, flags, prefix, name_len) = (fixed[0], fixed[1], fixed[2], fixed[3]);
            let port = u16::from_le_bytes([fixed[4], fixed[5]]);
            let bandwidth = u32::from_le_bytes([fixed[6], fixed[7], fixed[8], fixed[9]]);
            let index = u32::from_le_bytes([fixed[10], fixed[11], fixed[12], fixed[13]]);
            let (addr, max) = match family {
                4 => {
                    let a = r.take(4, || format!("the address of interface entry {entry}"))?;
                    (IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])), 32)
                }
                6 => {
                    let a = r.take(16, || format!("the address of interface entry {entry}"))?;
                    let mut octets = [0u8; 16];
                    octets.copy_from_slice(a);
                    (IpAddr::V6(Ipv6Addr::from(octets)), 128)
                }
                _ => return Err(CardError::Family { entry, family }),
            };
            if flags & !FLAG_LOOPBACK != 0 {
                return Err(CardError::Flags { entry, flags });
            }
            if prefix > max {
                return Err(CardError::Prefix { entry, prefix });
            }
            if port == 0 {
                return Err(CardError::Port { entry });
            }
            if name_len == 0 {
                return Err(CardError::Name { entry });
            }
            let name_bytes = r.take(usize::from(name_len), || {
                format!("the name of interface entry {entry}")
            })?;
            let name = std::str::from_utf8(name_bytes)
                .ok()
                .filter(|n| !n.chars().any(char::is_control))
                .ok_or(CardError::Name { entry })?;
            let iface = Interface::new(name, index, addr, prefix)
                .with_loopback(flags & FLAG_LOOPBACK != 0 || addr.is_loopback())
                .with_bandwidth(bandwidth);
            interfaces.push(CardInterface { iface, port });
        }
        if r.pos != bytes.len() {
            return Err(CardError::Trailing {
                at: r.pos,
                extra: bytes.len() - r.pos,
            });
        }
        Ok(Card { links, interfaces })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample() -> Card {
        Card {
            links: 2,
            interfaces: vec![
                CardInterface {
                    iface: Interface::parse("eth0", 2, "10.8.47.1/24")
                        .unwrap()
                        .with_bandwidth(10_000),
                    port: 1024,
                },
                CardInterface {
                    iface: Interface::parse("lo", 1, "127.0.0.1/8").unwrap(),
                    port: 65535,
                },
                CardInterface {
                    iface: Interface::parse("ib0:1", 7, "fd00::2/64").unwrap(),
                    port: 4000,
                },
            ],
        }
    }

    #[test]
    fn round_trip() {
        let card = sample();
        let bytes = card.encode();
        assert_eq!(bytes[0], CARD_VERSION);
        assert_eq!(bytes[1], 2);
        assert_eq!(u16::from_le_bytes([bytes[2], bytes[3]]), 3);
        // header, then per entry 14 fixed bytes + address + name
        assert_eq!(bytes.len(), 4 + (14 + 4 + 4) + (14 + 4 + 2) + (14 + 16 + 5));
        assert_eq!(Card::decode(&bytes).unwrap(), card);
    }

    #[test]
    fn exact_bytes_of_one_entry() {
        let card = Card {
            links: 1,
            interfaces: vec![CardInterface {
                iface: Interface::parse("lo", 1, "127.0.0.1/8").unwrap(),
                port: 0x0401,
            }],
        };
        assert_eq!(
            card.encode(),
            [
                1, 1, 1, 0, // version, links, count
                4, 1, 8, 2, // family, flags (loopback), prefix, name length
                0x01, 0x04, // port
                100, 0, 0, 0, // bandwidth
                1, 0, 0, 0, // index
                127, 0, 0, 1, // address
                b'l', b'o',
            ]
        );
    }

    #[test]
    fn damaged_cards_say_what_is_wrong() {
        let good = sample().encode();
        let err = |bytes: &[u8]| Card::decode(bytes).unwrap_err();
        assert_eq!(err(&[]), CardError::Empty);
        assert_eq!(err(&[9, 1, 1, 0]), CardError::Version(9));
        assert!(err(&[9]).to_string().contains("format version 9"));
        assert!(matches!(
            err(&good[..3]),
            CardError::Truncated { len: 3, .. }
        ));
        let cut = err(&good[..30]);
        assert!(cut.to_string().contains("ends after 30 bytes"), "{cut}");
        let mut b = good.clone();
        b[1] = 0;
        assert_eq!(err(&b), CardError::Links(0));
        b[1] = 65;
        assert_eq!(err(&b), CardError::Links(65));
        let mut b = good.clone();
        b[2] = 0;
        assert_eq!(err(&b), CardError::Count(0));
        let mut b = good.clone();
        b[4] = 5;
        assert_eq!(
            err(&b),
            CardError::Family {
                entry: 0,
                family: 5
            }
        );
        let mut b = good.clone();
        b[5] = 0x80;
        assert_eq!(
            err(&b),
            CardError::Flags {
                entry: 0,
                flags: 0x80
            }
        );
        let mut b = good.clone();
        b[6] = 33;
        assert_eq!(
            err(&b),
            CardError::Prefix {
                entry: 0,
                prefix: 33
            }
        );
        let mut b = good.clone();
        b[8] = 0;
        b[9] = 0;
        assert_eq!(err(&b), CardError::Port { entry: 0 });
        let mut b = good.clone();
        b[7] = 0;
        assert_eq!(err(&b), CardError::Name { entry: 0 });
        let mut b = good.clone();
        b[22] = 0xff; // first byte of "eth0"
        assert_eq!(err(&b), CardError::Name { entry: 0 });
        let mut b = good.clone();
        b[22] = b'\n';
        assert_eq!(err(&b), CardError::Name { entry: 0 });
        let mut b = good.clone();
        b.push(0);
        assert_eq!(
            err(&b),
            CardError::Trailing {
                at: good.len(),
                extra: 1
            }
        );
    }

    fn arb_iface() -> impl Strategy<Value = CardInterface> {
        (
            any::<bool>(),
            any::<[u8; 16]>(),
            0u8..=128,
            "[a-z]{1,8}(:[0-9])?",
            1u16..,
            any::<u32>(),
            any::<u32>(),
        )
            .prop_map(|(v4, a, prefix, name, port, bw, index)| {
                let addr = if v4 {
                    IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3]))
                } else {
                    IpAddr::V6(Ipv6Addr::from(a))
                };
                let prefix = if v4 { prefix % 33 } else { prefix };
                CardInterface {
                    iface: Interface::new(name, index, addr, prefix).with_bandwidth(bw),
                    port,
                }
            })
    }

    proptest! {
        #[test]
        fn any_card_round_trips(
            links in 1u8..=MAX_LINKS,
            interfaces in proptest::collection::vec(arb_iface(), 1..6),
        ) {
            let card = Card { links, interfaces };
            prop_assert_eq!(Card::decode(&card.encode()).unwrap(), card);
        }

        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Card::decode(&bytes);
        }

        #[test]
        fn damaged_cards_never_panic(
            interfaces in proptest::collection::vec(arb_iface(), 1..4),
            pos in any::<usize>(),
            byte in any::<u8>(),
            cut in any::<usize>(),
        ) {
            let mut bytes = Card { links: 1, interfaces }.encode();
            let pos = pos % bytes.len();
            bytes[pos] = byte;
            let cut = cut % (bytes.len() + 1);
            let _ = Card::decode(&bytes);
            let _ = Card::decode(&bytes[..cut]);
        }
    }
}
