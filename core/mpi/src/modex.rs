//! The modex: how ranks exchange their transports' contact cards.
//!
//! During initialization every transport [`Modex::put`]s its card (bytes:
//! addresses, ports, ...) under its name, all ranks [`Modex::fence`] once,
//! and afterwards a card is read lazily with [`Modex::get`] when a peer is
//! first contacted (and cached). Cards travel through the PMI key-value
//! space, which carries short text values only, so a card is encoded as
//! unpadded base64url and split into chunks of at most
//! [`CHUNK`] characters (small enough for hydra's 1024-byte lines too):
//! key `ox:<name>:<rank>` holds `<chunks>:<first chunk>` (one round trip for
//! a small card), keys `ox:<name>:<rank>:<i>` the others.
//!
//! A card is at most [`MAX_CARD_LEN`] bytes, so at most
//! [`MAX_CARD_CHUNKS`] chunks. Reading a card checks the chunk count and
//! every chunk's length before fetching or allocating anything for them:
//! a damaged or hostile card is a [`ModexError::Corrupt`], never a large
//! allocation or a panic.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use oxmpi_plugin_api::text::excerpt;
use oxmpi_pmi::{PmiClient, PmiError};
use std::collections::HashMap;

/// Longest chunk of encoded card per PMI value, in characters.
pub const CHUNK: usize = 600;

/// Longest card, in bytes: 64 KiB (a tcp card with a dozen interfaces is
/// under 1 KiB).
pub const MAX_CARD_LEN: usize = 64 * 1024;

/// Most chunks a card can have: [`MAX_CARD_LEN`] bytes encoded (4
/// characters for every 3 bytes), [`CHUNK`] characters a chunk — 146.
pub const MAX_CARD_CHUNKS: usize = (MAX_CARD_LEN * 4).div_ceil(3).div_ceil(CHUNK);

/// Longest transport name (keys must stay within PMI's 64 bytes).
pub const MAX_NAME: usize = 40;

/// Why a modex operation failed.
#[derive(Debug, thiserror::Error)]
pub enum ModexError {
    /// The PMI request failed (the launcher went away, refused, ...).
    #[error("modex: {0}")]
    Pmi(#[from] PmiError),
    /// The transport name cannot be used in a key.
    #[error("modex: the card name \"{0}\" must be 1 to 40 letters, digits, '_' or '-'")]
    BadName(String),
    /// The card to put is larger than [`MAX_CARD_LEN`].
    #[error("modex: the {name} card is {len} bytes, more than the modex carries ({max} bytes)")]
    TooLarge {
        /// Transport name.
        name: String,
        /// The card's length in bytes.
        len: usize,
        /// [`MAX_CARD_LEN`].
        max: usize,
    },
    /// The card read back is damaged.
    #[error("modex: the {name} card of rank {rank} is damaged ({what}); was it written by another version of oxmpi?")]
    Corrupt {
        /// Transport name.
        name: String,
        /// The rank that published it.
        rank: u32,
        /// What is wrong.
        what: String,
    },
    /// A rank outside the job was asked for.
    #[error("modex: rank {rank} is not in the job (size {size})")]
    NoSuchRank {
        /// The rank asked for.
        rank: u32,
        /// The job size.
        size: u32,
    },
}

/// One rank's modex over its PMI client.
pub struct Modex {
    client: PmiClient,
    cache: HashMap<(String, u32), Option<Vec<u8>>>,
}

fn check_name(name: &str) -> Result<(), ModexError> {
    let ok = !name.is_empty()
        && name.len() <= MAX_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        Ok(())
    } else {
        Err(ModexError::BadName(excerpt(name)))
    }
}

impl Modex {
    /// A modex over `client` (from [`PmiClient::from_env`], or a singleton).
    pub fn new(client: PmiClient) -> Modex {
        Modex {
            client,
            cache: HashMap::new(),
        }
    }

    /// This rank.
    pub fn rank(&self) -> u32 {
        self.client.rank()
    }

    /// The number of ranks.
    pub fn size(&self) -> u32 {
        self.client.size()
    }

    /// The PMI client (for abort and finalize).
    pub fn client(&mut self) -> &mut PmiClient {
        &mut self.client
    }

    /// Publishes this rank's `name` card; peers can read it after the next
    /// [`Modex::fence`]. Errors: a bad name, a card larger than
    /// [`MAX_CARD_LEN`], or the PMI request failing (putting a different
    /// card under the same name again is refused).
    pub fn put(&mut self, name: &str, card: &[u8]) -> Result<(), ModexError> {
        check_name(name)?;
        if card.len() > MAX_CARD_LEN {
            return Err(ModexError::TooLarge {
                name: name.to_string(),
                len: card.len(),
                max: MAX_CARD_LEN,
            });
        }
        let encoded = URL_SAFE_NO_PAD.encode(card);
        let chunks: Vec<&str> = if encoded.is_empty() {
            vec![""]
        } else {
            encoded
                .as_bytes()
                .chunks(CHUNK)
                .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
                .collect()
        };
        let rank = self.rank();
        self.client.put(
            &format!("ox:{name}:{rank}"),
            &format!("{}:{}", chunks.len(), chunks[0]),
        )?;
        for (i, chunk) in chunks.iter().enumerate().skip(1) {
            self.client.put(&format!("ox:{name}:{rank}:{i}"), chunk)?;
        }
        Ok(())
    }

    /// Waits until every rank has published its cards.
    pub fn fence(&mut self) -> Result<(), ModexError> {
        Ok(self.client.barrier()?)
    }

    /// The `name` card of `rank`, or `None` if that rank published none;
    /// read from PMI on first use, then cached.
    pub fn get(&mut self, rank: u32, name: &str) -> Result<Option<&[u8]>, ModexError> {
        check_name(name)?;
        if rank >= self.size() {
            return Err(ModexError::NoSuchRank {
                rank,
                size: self.size(),
            });
        }
        let key = (name.to_string(), rank);
        if !self.cache.contains_key(&key) {
            let card = self.fetch(rank, name)?;
            self.cache.insert(key.clone(), card);
        }
        Ok(self.cache[&key].as_deref())
    }

    fn fetch(&mut self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, ModexError> {
        let corrupt = |what: String| ModexError::Corrupt {
            name: name.to_string(),
            rank,
            what,
        };
        let Some(head) = self.client.get(&format!("ox:{name}:{rank}"))? else {
            return Ok(None);
        };
        let (count, first) = head
            .split_once(':')
            .ok_or_else(|| corrupt("no chunk count".into()))?;
        let count: usize = count
            .parse()
            .ok()
            .filter(|n| (1..=MAX_CARD_CHUNKS).contains(n))
            .ok_or_else(|| {
                corrupt(format!(
                    "bad chunk count \"{}\" (a card has 1 to {MAX_CARD_CHUNKS})",
                    excerpt(count)
                ))
            })?;
        // Every chunk but the last is exactly CHUNK characters long; the
        // last one 1 to CHUNK (0 only for an empty card). Too long is
        // refused as each chunk arrives, so that at most count × CHUNK
        // characters are ever kept; too short once all have arrived.
        let bad_len = |i: usize, len: usize| {
            corrupt(format!("chunk {i} of {count} is {len} characters long"))
        };
        let mut lens = Vec::with_capacity(count);
        let mut encoded = String::with_capacity(count * CHUNK);
        for i in 0..count {
            let fetched;
            let chunk = if i == 0 {
                first
            } else {
                fetched = self
                    .client
                    .get(&format!("ox:{name}:{rank}:{i}"))?
                    .ok_or_else(|| corrupt(format!("chunk {i} of {count} is missing")))?;
                fetched.as_str()
            };
            if chunk.len() > CHUNK {
                return Err(bad_len(i, chunk.len()));
            }
            lens.push(chunk.len());
            encoded.push_str(chunk);
        }
        for (i, &len) in lens.iter().enumerate() {
            let last = i + 1 == count;
            if (!last && len != CHUNK) || (last && count > 1 && len == 0) {
                return Err(bad_len(i, len));
            }
        }
        let card = URL_SAFE_NO_PAD
            .decode(encoded.as_bytes())
            .map_err(|e| corrupt(format!("not base64: {e}")))?;
        if card.len() > MAX_CARD_LEN {
            return Err(corrupt(format!(
                "{} bytes, more than the {MAX_CARD_LEN} a card may have",
                card.len()
            )));
        }
        Ok(Some(card))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_pmi::local::{socket_pairs, LocalServer};
    use oxmpi_pmi::JobInfo;

    #[test]
    fn singleton_reads_its_own_cards() {
        let mut m = Modex::new(PmiClient::singleton());
        m.put("tcp", b"\x00\x01card").unwrap();
        m.fence().unwrap();
        assert_eq!(m.get(0, "tcp").unwrap(), Some(&b"\x00\x01card"[..]));
        assert_eq!(m.get(0, "sm").unwrap(), None);
        assert!(matches!(
            m.get(1, "tcp"),
            Err(ModexError::NoSuchRank { rank: 1, size: 1 })
        ));
        assert!(matches!(
            m.put("bad name", b""),
            Err(ModexError::BadName(_))
        ));
        assert!(matches!(
            m.put(&"x".repeat(41), b""),
            Err(ModexError::BadName(_))
        ));
    }

    #[test]
    fn empty_and_large_cards_round_trip() {
        let mut m = Modex::new(PmiClient::singleton());
        let big: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 256) as u8).collect();
        m.put("big", &big).unwrap();
        m.put("empty", b"").unwrap();
        assert_eq!(m.get(0, "big").unwrap(), Some(&big[..]));
        assert_eq!(m.get(0, "empty").unwrap(), Some(&b""[..]));
    }

    #[test]
    fn damaged_cards_are_reported() {
        let mut client = PmiClient::singleton();
        client.put("ox:tcp:0", "3:AAAA").unwrap();
        client.put("ox:sm:0", "x:AAAA").unwrap();
        client.put("ox:ofi:0", "1:***").unwrap();
        let mut m = Modex::new(client);
        let e = m.get(0, "tcp").unwrap_err().to_string();
        assert!(
            e.contains("the tcp card of rank 0 is damaged (chunk 1 of 3 is missing)"),
            "{e}"
        );
        assert!(m
            .get(0, "sm")
            .unwrap_err()
            .to_string()
            .contains("bad chunk count"));
        assert!(m
            .get(0, "ofi")
            .unwrap_err()
            .to_string()
            .contains("not base64"));
    }

    #[test]
    fn cards_are_bounded_on_put() {
        let mut m = Modex::new(PmiClient::singleton());
        let biggest: Vec<u8> = (0..MAX_CARD_LEN).map(|i| (i % 251) as u8).collect();
        m.put("big", &biggest).unwrap();
        assert_eq!(m.get(0, "big").unwrap(), Some(&biggest[..]));
        assert_eq!(MAX_CARD_CHUNKS, 146);
        let e = m.put("bigger", &vec![0; MAX_CARD_LEN + 1]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "modex: the bigger card is 65537 bytes, more than the modex carries (65536 bytes)"
        );
    }

    #[test]
    fn damaged_counts_and_chunks_are_refused_before_fetching() {
        let mut client = PmiClient::singleton();
        // Before the bound, a count of a million reserved 600 MB and then
        // asked for the missing chunk 1.
        client.put("ox:a:0", "1000000:AAAA").unwrap();
        client
            .put("ox:b:0", &format!("{}:AAAA", "9".repeat(500)))
            .unwrap();
        client
            .put("ox:c:0", &format!("2:{}", "A".repeat(601)))
            .unwrap();
        client.put("ox:d:0", "2:AAAA").unwrap();
        client.put("ox:d:0:1", "AAAA").unwrap();
        client
            .put("ox:e:0", &format!("2:{}", "A".repeat(600)))
            .unwrap();
        client.put("ox:e:0:1", "").unwrap();
        client.put("ox:f:0", "0:").unwrap();
        let mut m = Modex::new(client);
        let err = |m: &mut Modex, name: &str| m.get(0, name).unwrap_err().to_string();
        assert_eq!(
            err(&mut m, "a"),
            "modex: the a card of rank 0 is damaged (bad chunk count \"1000000\" (a card has 1 to 146)); was it written by another version of oxmpi?"
        );
        let e = err(&mut m, "b");
        assert!(e.contains("…(500 bytes)"), "{e}");
        assert!(e.len() < 300, "{e}");
        assert!(
            err(&mut m, "c").contains("chunk 0 of 2 is 601 characters long"),
            "{}",
            err(&mut m, "c")
        );
        assert!(err(&mut m, "d").contains("chunk 0 of 2 is 4 characters long"));
        assert!(err(&mut m, "e").contains("chunk 1 of 2 is 0 characters long"));
        assert!(err(&mut m, "f").contains("bad chunk count \"0\""));
    }

    proptest::proptest! {
        #[test]
        fn damaged_cards_never_panic(
            head in "([0-9]{0,4}|[0-9]{0,30})(:[A-Za-z0-9_*=-]{0,700})?",
            chunks in proptest::collection::vec("[A-Za-z0-9_*-]{0,700}", 0..4),
        ) {
            let mut client = PmiClient::singleton();
            client.put("ox:t:0", &head).unwrap();
            for (i, c) in chunks.iter().enumerate() {
                client.put(&format!("ox:t:0:{}", i + 1), c).unwrap();
            }
            let mut m = Modex::new(client);
            match m.get(0, "t") {
                Ok(card) => proptest::prop_assert!(card.unwrap().len() <= MAX_CARD_LEN),
                Err(ModexError::Corrupt { what, .. }) => proptest::prop_assert!(what.len() < 300, "{}", what),
                Err(e) => proptest::prop_assert!(false, "{e}"),
            }
        }
    }

    #[test]
    fn every_rank_reads_every_card_through_a_real_server() {
        let size = 4u32;
        let (server_ends, rank_ends) = socket_pairs(size).unwrap();
        let server = LocalServer::start(JobInfo::new(size, "kvs_modex_test"), server_ends).unwrap();
        let card = |rank: u32| -> Vec<u8> {
            (0..(rank as usize * 900 + 3))
                .map(|i| (i as u8) ^ (rank as u8))
                .collect()
        };
        let threads: Vec<_> = rank_ends
            .into_iter()
            .enumerate()
            .map(|(rank, stream)| {
                let rank = rank as u32;
                std::thread::spawn(move || {
                    let client = PmiClient::from_unix_stream(stream, rank, size).unwrap();
                    let mut m = Modex::new(client);
                    m.put("tcp", &card(rank)).unwrap();
                    m.fence().unwrap();
                    for peer in 0..size {
                        assert_eq!(
                            m.get(peer, "tcp").unwrap(),
                            Some(&card(peer)[..]),
                            "rank {rank} reading {peer}"
                        );
                        assert_eq!(m.get(peer, "sm").unwrap(), None);
                    }
                    m.client().finalize().unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let _ = server.wait();
    }
}
