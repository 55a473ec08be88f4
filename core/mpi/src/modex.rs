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

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use oxmpi_pmi::{PmiClient, PmiError};
use std::collections::HashMap;

/// Longest chunk of encoded card per PMI value, in characters.
pub const CHUNK: usize = 600;

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
        Err(ModexError::BadName(name.to_string()))
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
    /// [`Modex::fence`]. Errors: a bad name, or the PMI request failing
    /// (putting a different card under the same name again is refused).
    pub fn put(&mut self, name: &str, card: &[u8]) -> Result<(), ModexError> {
        check_name(name)?;
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
            .filter(|n| (1..=1_000_000).contains(n))
            .ok_or_else(|| corrupt(format!("bad chunk count \"{count}\"")))?;
        let mut encoded = String::with_capacity(count * CHUNK);
        encoded.push_str(first);
        for i in 1..count {
            let chunk = self
                .client
                .get(&format!("ox:{name}:{rank}:{i}"))?
                .ok_or_else(|| corrupt(format!("chunk {i} of {count} is missing")))?;
            encoded.push_str(&chunk);
        }
        URL_SAFE_NO_PAD
            .decode(encoded.as_bytes())
            .map(Some)
            .map_err(|e| corrupt(format!("not base64: {e}")))
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
