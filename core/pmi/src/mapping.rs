//! `PMI_process_mapping`: which node each rank runs on, in the compact
//! form MPICH programs read with `get` during `MPI_Init`.
//!
//! The value is `(vector,(S,N,P),(S,N,P),...)`. Each triple assigns the
//! next `N * P` ranks to the nodes `S, S+1, ..., S+N-1`, `P` consecutive
//! ranks per node. When the triples describe fewer ranks than the job has,
//! MPICH starts over from the first triple whose `S` is 0 (hydra relies on
//! this: for any number of ranks on one host with one slot it sends
//! `(vector,(0,1,1))`). An empty value means "layout unknown", and MPICH
//! then finds co-located ranks by exchanging host names.
//!
//! Examples: one node, 4 ranks: `(vector,(0,1,4))`; 2 nodes, 2 ranks each
//! by block: `(vector,(0,2,2))`; 4 ranks round-robin over 2 nodes:
//! `(vector,(0,2,1),(0,2,1))`.

use std::fmt::Write as _;

use crate::kvs::Maxes;

/// One `(start, nodes, per_node)` triple of a mapping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Block {
    /// The first node id.
    pub start: u32,
    /// How many consecutive nodes.
    pub nodes: u32,
    /// How many consecutive ranks on each of them.
    pub per_node: u32,
}

/// Why a mapping value could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    /// The text does not follow `(vector,(S,N,P),...)`.
    #[error("PMI_process_mapping {text:?} is malformed at byte {at}: expected {expected}")]
    Syntax {
        /// The whole value.
        text: String,
        /// Where parsing stopped.
        at: usize,
        /// What was expected there.
        expected: &'static str,
    },
    /// The blocks place no rank at all, so they cannot cover the job.
    #[error("PMI_process_mapping {text:?} places no rank")]
    Empty {
        /// The whole value.
        text: String,
    },
}

/// The mapping value for a job whose rank `r` runs on node
/// `node_of_rank[r]` (node ids are the launcher's, usually 0-based in
/// host order).
///
/// The triples are written out explicitly (one node with `N` ranks gives
/// `(vector,(0,1,N))`). When that text would exceed the advertised value
/// limit ([`Maxes::HYDRA`]`.vallen_max`, 1024 bytes), the shortest
/// repeating pattern is written instead (possible when rank 0 is on node
/// 0), and if even that is too long, the empty value ("unknown"), as hydra
/// does. No ranks gives the empty value.
pub fn process_mapping(node_of_rank: &[u32]) -> String {
    let limit = Maxes::HYDRA.vallen_max;
    if node_of_rank.is_empty() {
        return String::new();
    }
    let explicit = format_blocks(&blocks(node_of_rank));
    if explicit.len() <= limit {
        return explicit;
    }
    if node_of_rank[0] == 0 {
        let period = (1..=node_of_rank.len())
            .find(|&p| {
                node_of_rank
                    .iter()
                    .enumerate()
                    .all(|(i, &n)| n == node_of_rank[i % p])
            })
            .unwrap_or(node_of_rank.len());
        let cyclic = format_blocks(&blocks(&node_of_rank[..period]));
        if cyclic.len() <= limit {
            return cyclic;
        }
    }
    String::new()
}

/// Run-length encodes the node list into merged triples.
fn blocks(node_of_rank: &[u32]) -> Vec<Block> {
    let mut out: Vec<Block> = Vec::new();
    let mut i = 0;
    while i < node_of_rank.len() {
        let node = node_of_rank[i];
        let run = node_of_rank[i..].iter().take_while(|&&n| n == node).count();
        i += run;
        let run = u32::try_from(run).unwrap_or(u32::MAX);
        match out.last_mut() {
            Some(last)
                if last.per_node == run && last.start.checked_add(last.nodes) == Some(node) =>
            {
                last.nodes += 1;
            }
            _ => out.push(Block {
                start: node,
                nodes: 1,
                per_node: run,
            }),
        }
    }
    out
}

fn format_blocks(blocks: &[Block]) -> String {
    let mut s = String::from("(vector");
    for b in blocks {
        let _ = write!(s, ",({},{},{})", b.start, b.nodes, b.per_node);
    }
    s.push(')');
    s
}

/// Reads a mapping value into the node of each of `size` ranks, the way
/// MPICH does (including its starting over; see the module docs).
///
/// Returns `Ok(None)` for the empty value (layout unknown). Errors:
/// [`MappingError::Syntax`] (naming the byte where reading stopped) and
/// [`MappingError::Empty`] when the triples place no rank while `size` is
/// not 0.
pub fn parse_process_mapping(value: &str, size: usize) -> Result<Option<Vec<u32>>, MappingError> {
    if value.is_empty() {
        return Ok(None);
    }
    let blocks = parse_blocks(value)?;
    let mut nodes = Vec::with_capacity(size.min(1 << 20));
    if size == 0 {
        return Ok(Some(nodes));
    }
    let ranks_in = |bs: &[Block]| -> u64 {
        bs.iter()
            .map(|b| u64::from(b.nodes) * u64::from(b.per_node))
            .sum()
    };
    let wrap_start = blocks.iter().position(|b| b.start == 0).unwrap_or(0);
    if ranks_in(&blocks) == 0 || ranks_in(&blocks[wrap_start..]) == 0 {
        return Err(MappingError::Empty {
            text: value.to_owned(),
        });
    }
    let mut first_pass = true;
    'fill: loop {
        let from = if first_pass { 0 } else { wrap_start };
        first_pass = false;
        for b in &blocks[from..] {
            for n in 0..b.nodes {
                for _ in 0..b.per_node {
                    nodes.push(b.start.saturating_add(n));
                    if nodes.len() == size {
                        break 'fill;
                    }
                }
            }
        }
    }
    Ok(Some(nodes))
}

/// Parses the triples of a non-empty mapping value.
pub fn parse_blocks(value: &str) -> Result<Vec<Block>, MappingError> {
    let mut p = Parser { text: value, at: 0 };
    p.spaces();
    p.expect("(", "`(`")?;
    p.spaces();
    p.expect("vector", "`vector`")?;
    p.spaces();
    let mut blocks = Vec::new();
    while p.peek() == Some(b',') {
        p.expect(",", "`,`")?;
        p.spaces();
        p.expect("(", "`(` starting a triple")?;
        p.spaces();
        let start = p.number()?;
        p.spaces();
        p.expect(",", "`,`")?;
        p.spaces();
        let nodes = p.number()?;
        p.spaces();
        p.expect(",", "`,`")?;
        p.spaces();
        let per_node = p.number()?;
        p.spaces();
        p.expect(")", "`)` ending a triple")?;
        p.spaces();
        blocks.push(Block {
            start,
            nodes,
            per_node,
        });
    }
    p.expect(")", "`,` or the final `)`")?;
    p.spaces();
    if p.at != value.len() {
        return Err(p.error("the end of the value"));
    }
    Ok(blocks)
}

struct Parser<'a> {
    text: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.at).copied()
    }

    fn spaces(&mut self) {
        while self.peek() == Some(b' ') {
            self.at += 1;
        }
    }

    fn error(&self, expected: &'static str) -> MappingError {
        MappingError::Syntax {
            text: self.text.to_owned(),
            at: self.at,
            expected,
        }
    }

    fn expect(&mut self, what: &str, expected: &'static str) -> Result<(), MappingError> {
        if self.text.as_bytes()[self.at..].starts_with(what.as_bytes()) {
            self.at += what.len();
            Ok(())
        } else {
            Err(self.error(expected))
        }
    }

    fn number(&mut self) -> Result<u32, MappingError> {
        let digits = self.text.as_bytes()[self.at..]
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count();
        if digits == 0 {
            return Err(self.error("a number"));
        }
        let n = self.text[self.at..self.at + digits]
            .parse()
            .map_err(|_| self.error("a number below 2^32"))?;
        self.at += digits;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn one_node() {
        assert_eq!(process_mapping(&[0, 0, 0]), "(vector,(0,1,3))");
        assert_eq!(process_mapping(&[0]), "(vector,(0,1,1))");
        assert_eq!(process_mapping(&[]), "");
    }

    #[test]
    fn blocks_and_round_robin() {
        assert_eq!(process_mapping(&[0, 0, 1, 1]), "(vector,(0,2,2))");
        assert_eq!(process_mapping(&[0, 1, 0, 1]), "(vector,(0,2,1),(0,2,1))");
        assert_eq!(process_mapping(&[0, 0, 0, 1]), "(vector,(0,1,3),(1,1,1))");
        assert_eq!(process_mapping(&[2, 2, 0]), "(vector,(2,1,2),(0,1,1))");
    }

    #[test]
    fn reads_what_hydra_sends() {
        // hydra, one host with one slot, any number of ranks.
        assert_eq!(
            parse_process_mapping("(vector,(0,1,1))", 3).unwrap(),
            Some(vec![0, 0, 0])
        );
        assert_eq!(
            parse_process_mapping("(vector,(0,2,1))", 5).unwrap(),
            Some(vec![0, 1, 0, 1, 0])
        );
        assert_eq!(
            parse_process_mapping(" ( vector , (0, 2 ,2) ) ", 4).unwrap(),
            Some(vec![0, 0, 1, 1])
        );
        assert_eq!(parse_process_mapping("", 4).unwrap(), None);
        // Starting over skips leading blocks that do not start at node 0.
        assert_eq!(
            parse_process_mapping("(vector,(1,1,1),(0,1,1))", 4).unwrap(),
            Some(vec![1, 0, 0, 0])
        );
    }

    #[test]
    fn long_round_robin_layouts_use_the_repeating_form() {
        let nodes: Vec<u32> = (0..2000).map(|r| r % 4).collect();
        let m = process_mapping(&nodes);
        assert_eq!(m, "(vector,(0,4,1))");
        assert_eq!(parse_process_mapping(&m, 2000).unwrap(), Some(nodes));
        // No repetition and too long: unknown.
        let nodes: Vec<u32> = (0..2000).map(|r| (r * 7919 % 13) as u32 + 1).collect();
        assert_eq!(process_mapping(&nodes), "");
    }

    #[test]
    fn malformed_values_are_errors_not_panics() {
        for bad in [
            "(",
            "(vector",
            "(vector,",
            "(vector,(0,1))",
            "(vector,(0,1,x))",
            "(vector,(0,1,1)",
            "(vector,(0,1,1))x",
            "(block,(0,1,1))",
            "(vector,(99999999999,1,1))",
        ] {
            let e = parse_process_mapping(bad, 2).unwrap_err();
            assert!(matches!(e, MappingError::Syntax { .. }), "{bad}: {e}");
            assert!(e.to_string().contains(bad), "{e}");
        }
        assert!(matches!(
            parse_process_mapping("(vector,(0,0,1))", 2),
            Err(MappingError::Empty { .. })
        ));
        assert!(matches!(
            parse_process_mapping("(vector)", 2),
            Err(MappingError::Empty { .. })
        ));
        assert_eq!(parse_process_mapping("(vector)", 0).unwrap(), Some(vec![]));
    }

    proptest! {
        #[test]
        fn round_trips(nodes in prop::collection::vec(0u32..6, 1..100)) {
            let m = process_mapping(&nodes);
            prop_assert_eq!(parse_process_mapping(&m, nodes.len()).unwrap(), Some(nodes));
        }

        #[test]
        fn never_panics(s in "[(),vector0-9 ]{0,40}", size in 0usize..50) {
            let _ = parse_process_mapping(&s, size);
        }
    }
}
