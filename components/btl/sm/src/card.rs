//! The sm contact card: which node a process runs on and, when it uses
//! single copy, where its probe word is (see [`crate::cma`]).
//!
//! Layout: the 4 bytes `SMC1`, the node identity's length (u32, little
//! endian) and bytes, then the probe word's address and value (two u64,
//! both 0 when the process does not use single copy).

/// The card's first bytes.
const MAGIC: &[u8; 4] = b"SMC1";

/// Longest node identity accepted.
const MAX_NODE: usize = 4096;

/// What a card says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Card {
    /// The node identity ([`node_identity`]).
    pub node: String,
    /// The probe word's address (0: no single copy).
    pub probe_address: u64,
    /// The probe word's value.
    pub probe_value: u64,
}

impl Card {
    /// The card's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(24 + self.node.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&(self.node.len() as u32).to_le_bytes());
        out.extend_from_slice(self.node.as_bytes());
        out.extend_from_slice(&self.probe_address.to_le_bytes());
        out.extend_from_slice(&self.probe_value.to_le_bytes());
        out
    }

    /// Reads a card.
    ///
    /// # Errors
    ///
    /// A sentence saying what is wrong with the bytes.
    pub fn decode(bytes: &[u8]) -> Result<Card, String> {
        let bad = |what: &str| {
            format!(
                "its sm contact card is malformed ({what}, {} bytes)",
                bytes.len()
            )
        };
        let rest = bytes
            .strip_prefix(MAGIC)
            .ok_or_else(|| bad("no SMC1 mark"))?;
        let (len, rest) = rest
            .split_first_chunk::<4>()
            .ok_or_else(|| bad("too short"))?;
        let len = u32::from_le_bytes(*len) as usize;
        if len > MAX_NODE || rest.len() != len + 16 {
            return Err(bad("wrong length"));
        }
        let (node, rest) = rest.split_at(len);
        let node = std::str::from_utf8(node).map_err(|_| bad("node identity not UTF-8"))?;
        let (address, value) = rest.split_at(8);
        Ok(Card {
            node: node.to_string(),
            probe_address: u64::from_le_bytes(address.try_into().expect("8 bytes")),
            probe_value: u64::from_le_bytes(value.try_into().expect("8 bytes")),
        })
    }
}

/// This node's identity: the host name and the kernel's boot id (two
/// machines, or two boots, with one host name differ).
pub fn node_identity() -> String {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    let boot = std::fs::read_to_string("/proc/sys/kernel/random/boot_id").unwrap_or_default();
    format!("{host}/{}", boot.trim())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_reads_back_and_damage_is_a_sentence() {
        let card = Card {
            node: node_identity(),
            probe_address: 0x7fff_0000_1000,
            probe_value: 42,
        };
        let bytes = card.encode();
        assert_eq!(Card::decode(&bytes), Ok(card));
        for cut in [0, 3, 8, bytes.len() - 1] {
            let e = Card::decode(&bytes[..cut]).unwrap_err();
            assert!(e.starts_with("its sm contact card is malformed"), "{e}");
        }
        let mut long = bytes.clone();
        long.push(0);
        assert!(Card::decode(&long).is_err());
        assert!(node_identity().contains('/'));
    }
}
