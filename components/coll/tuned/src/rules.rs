//! Dynamic rules files: the user's choice of algorithm per collective,
//! communicator size and message size (parameter
//! `coll_tuned_dynamic_rules_filename`).
//!
//! # Format
//!
//! The format is the classic Open MPI one, so existing files keep working.
//! A file is a sequence of non-negative integers separated by white space.
//! `#` starts a comment that runs to the end of its line; blank lines do not
//! matter. The integers are, in order:
//!
//! ```text
//! <number of collectives>
//!   <collective id>                  (once per collective)
//!   <number of communicator sizes>
//!     <communicator size>            (once per communicator size)
//!     <number of message sizes>
//!       <message size> <algorithm> <fan-in/out> <segment size>
//! ```
//!
//! Collective ids follow Open MPI's numbering (see [`RuleOp`]): 0 allgather,
//! 1 allgatherv, 2 allreduce, 3 alltoall, 4 alltoallv, 5 alltoallw,
//! 6 barrier, 7 bcast, 8 exscan, 9 gather, 10 gatherv, 11 reduce,
//! 12 reduce_scatter, 13 reduce_scatter_block, 14 scan, 15 scatter,
//! 16 scatterv. Each collective may appear once; within it communicator
//! sizes must increase, and within a communicator size message sizes must
//! increase. A message size is the total size in bytes from which the rule
//! applies. Algorithm 0 means "use the fixed decision"; a fan-in/out or a
//! segment size of 0 means "the default".
//!
//! For example, this file sets allreduce to algorithm 3 for small messages
//! and to algorithm 4 with 32 KiB segments from 8 KiB on, and, from 16
//! processes on, to algorithm 6 with a fan-out of 2 for every message size:
//!
//! ```text
//! 1              # one collective
//! 2              # allreduce
//! 2              # two communicator sizes
//! 1              # from 1 process on
//! 2              #   two message sizes
//! 0    3 0 0     #   from 0 bytes: algorithm 3
//! 8192 4 0 32768 #   from 8 KiB: algorithm 4, 32 KiB segments
//! 16             # from 16 processes on
//! 1              #   one message size
//! 0    6 2 0     #   from 0 bytes: algorithm 6, fan-out 2
//! ```
//!
//! # Lookup
//!
//! [`RulesFile::lookup`] takes, for a collective, the entry with the largest
//! communicator size not above the communicator's size, and in it the rule
//! with the largest message size not above the message's size. With the
//! file above, allreduce of 10 000 bytes on 8 processes gets algorithm 4, on
//! 64 processes algorithm 6. When there is no such entry or rule (a
//! collective the file does not list, a communicator smaller than the first
//! size given, a message smaller than the first size given), there is no
//! rule and the fixed decision applies.

use std::fmt;
use std::path::Path;

/// Defines [`RuleOp`] and its tables from one list of variant, id and name.
macro_rules! rule_ops {
    ($($op:ident $id:literal $name:literal,)*) => {
        /// A collective as rules files number it (Open MPI's numbering).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum RuleOp {
            $(#[doc = concat!("`", $name, "`, id ", $id, ".")] $op = $id,)*
        }

        impl RuleOp {
            /// Every collective, in id order (`ALL[id]` has that id).
            pub const ALL: [RuleOp; 17] = [$(RuleOp::$op,)*];

            /// The collective's name in lower case, as in `"allreduce"` or
            /// `"reduce_scatter_block"`.
            pub fn name(self) -> &'static str {
                match self {
                    $(RuleOp::$op => $name,)*
                }
            }
        }
    };
}

rule_ops! {
    Allgather 0 "allgather",
    Allgatherv 1 "allgatherv",
    Allreduce 2 "allreduce",
    Alltoall 3 "alltoall",
    Alltoallv 4 "alltoallv",
    Alltoallw 5 "alltoallw",
    Barrier 6 "barrier",
    Bcast 7 "bcast",
    Exscan 8 "exscan",
    Gather 9 "gather",
    Gatherv 10 "gatherv",
    Reduce 11 "reduce",
    ReduceScatter 12 "reduce_scatter",
    ReduceScatterBlock 13 "reduce_scatter_block",
    Scan 14 "scan",
    Scatter 15 "scatter",
    Scatterv 16 "scatterv",
}

impl RuleOp {
    /// The collective with the id `id`, or `None` for an unknown id.
    pub fn from_id(id: u32) -> Option<RuleOp> {
        let i = usize::try_from(id).ok()?;
        RuleOp::ALL.get(i).copied()
    }

    /// The collective's id in rules files.
    pub fn id(self) -> u32 {
        self as u32
    }

    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for RuleOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One line of a rules file: what to do from a message size on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// The total message size in bytes from which the rule applies.
    pub msg_size: u64,
    /// The algorithm's number; 0 means "use the fixed decision".
    pub algorithm: u32,
    /// The fan-in/out of tree algorithms; 0 means the default.
    pub fanout: u32,
    /// The segment size in bytes; 0 means the default.
    pub segment_size: u64,
}

impl Rule {
    /// Whether the rule leaves the choice to the fixed decision
    /// (algorithm 0).
    pub fn uses_fixed_decision(&self) -> bool {
        self.algorithm == 0
    }
}

/// The rules of one collective from one communicator size on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommRules {
    /// The communicator size (number of processes) from which these rules
    /// apply; at least 1.
    pub comm_size: u32,
    /// The rules, by strictly increasing message size.
    pub rules: Vec<Rule>,
}

/// A parsed rules file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesFile {
    /// Indexed by [`RuleOp`] id; `None` for a collective the file does not
    /// list. Each list is by strictly increasing communicator size.
    by_op: [Option<Vec<CommRules>>; 17],
}

impl RulesFile {
    /// Parses the text of a rules file; `origin` (usually the file's path)
    /// names it in errors.
    pub fn parse(text: &str, origin: &str) -> Result<RulesFile, RulesError> {
        Parser::new(text, origin).file()
    }

    /// Reads and parses the rules file at `path`.
    ///
    /// Errors name the path as given; when the file cannot be read, the
    /// error's line is 0 and its message gives the system's reason.
    pub fn read(path: &Path) -> Result<RulesFile, RulesError> {
        let origin = path.display().to_string();
        match std::fs::read_to_string(path) {
            Ok(text) => RulesFile::parse(&text, &origin),
            Err(e) => Err(RulesError {
                origin,
                line: 0,
                message: format!("cannot read the rules file: {e}"),
            }),
        }
    }

    /// The rule for `op` on a communicator of `comm_size` processes and a
    /// message of `msg_size` bytes: among the entries for the largest
    /// communicator size <= `comm_size`, the one with the largest message
    /// size <= `msg_size`; `None` when there is none (then the fixed
    /// decision applies).
    pub fn lookup(&self, op: RuleOp, comm_size: u32, msg_size: u64) -> Option<&Rule> {
        let comms = self.by_op[op.index()].as_deref()?;
        let c = comms.partition_point(|c| c.comm_size <= comm_size);
        let rules = &comms.get(c.checked_sub(1)?)?.rules;
        let r = rules.partition_point(|r| r.msg_size <= msg_size);
        rules.get(r.checked_sub(1)?)
    }

    /// The collectives the file lists, in id order.
    pub fn ops(&self) -> impl Iterator<Item = RuleOp> + '_ {
        RuleOp::ALL
            .into_iter()
            .filter(move |op| self.by_op[op.index()].is_some())
    }

    /// The entries the file gives for `op`, by increasing communicator size
    /// (none when the file does not list `op`).
    pub fn rules_for(&self, op: RuleOp) -> &[CommRules] {
        self.by_op[op.index()].as_deref().unwrap_or(&[])
    }
}

/// What is wrong with a rules file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RulesError {
    /// The file's name (or whatever the text came from).
    pub origin: String,
    /// The line (from 1) of the offending token; for an unexpected end of
    /// file, the file's last line; 0 when the error is about the whole file
    /// (it cannot be read).
    pub line: usize,
    /// What was wrong and what was expected.
    pub message: String,
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.origin, self.message)
        } else {
            write!(f, "{}:{}: {}", self.origin, self.line, self.message)
        }
    }
}

impl std::error::Error for RulesError {}

/// Reads tokens in order, each with its line number.
struct Parser<'a> {
    tokens: std::vec::IntoIter<(usize, &'a str)>,
    last_line: usize,
    origin: &'a str,
}

impl<'a> Parser<'a> {
    fn new(text: &'a str, origin: &'a str) -> Parser<'a> {
        let mut tokens = Vec::new();
        let mut last_line = 1;
        for (i, line) in text.lines().enumerate() {
            last_line = i + 1;
            let code = line.split('#').next().unwrap_or("");
            tokens.extend(code.split_whitespace().map(|t| (i + 1, t)));
        }
        let tokens = tokens.into_iter();
        Parser {
            tokens,
            last_line,
            origin,
        }
    }

    fn fail<T>(&self, line: usize, message: String) -> Result<T, RulesError> {
        let origin = self.origin.to_string();
        Err(RulesError {
            origin,
            line,
            message,
        })
    }

    /// The next token as a number of type `T` (whose largest value is
    /// `max`); `what` describes the expected value for error messages.
    fn number<T>(&mut self, max: T, what: &dyn Fn() -> String) -> Result<(T, usize), RulesError>
    where
        T: std::str::FromStr + fmt::Display,
    {
        let Some((line, token)) = self.tokens.next() else {
            let msg = format!("the file ends where {} was expected", what());
            return self.fail(self.last_line, msg);
        };
        if !token.bytes().all(|b| b.is_ascii_digit()) {
            let msg = format!("\"{token}\" is not a number; expected {}", what());
            return self.fail(line, msg);
        }
        // All digits, so parsing fails only on overflow.
        match token.parse::<T>() {
            Ok(value) => Ok((value, line)),
            Err(_) => {
                let msg = format!("\"{token}\" is too large for {} (at most {max})", what());
                self.fail(line, msg)
            }
        }
    }

    fn file(mut self) -> Result<RulesFile, RulesError> {
        let mut file = RulesFile {
            by_op: std::array::from_fn(|_| None),
        };
        let (count, _) = self.number(u32::MAX, &|| "the number of collectives".into())?;
        for i in 1..=count {
            let what = || format!("the id of collective {i} of {count}");
            let (id, line) = self.number(u64::MAX, &what)?;
            let Some(op) = u32::try_from(id).ok().and_then(RuleOp::from_id) else {
                let ids = "ids go from 0 (allgather) to 16 (scatterv)";
                return self.fail(line, format!("collective id {id} is not known; {ids}"));
            };
            if file.by_op[op.index()].is_some() {
                return self.fail(line, format!("{op} (collective id {id}) is given twice"));
            }
            file.by_op[op.index()] = Some(self.collective(op)?);
        }
        if let Some((line, token)) = self.tokens.next() {
            let msg = format!("unexpected \"{token}\" after the last collective");
            return self.fail(line, format!("{msg} (the file declares {count})"));
        }
        Ok(file)
    }

    fn collective(&mut self, op: RuleOp) -> Result<Vec<CommRules>, RulesError> {
        let what = || format!("the number of communicator sizes of {op}");
        let (count, _) = self.number(u32::MAX, &what)?;
        let mut comms: Vec<CommRules> = Vec::new();
        for c in 1..=count {
            let what = || format!("the communicator size of entry {c} of {op}");
            let (comm_size, line) = self.number(u32::MAX, &what)?;
            if comm_size == 0 {
                let msg = format!("communicator size 0 in {op} is not allowed; sizes start at 1");
                return self.fail(line, msg);
            }
            if let Some(prev) = comms.last().filter(|p| p.comm_size >= comm_size) {
                let (now, prev) = (comm_size, prev.comm_size);
                let msg = format!("communicator size {now} follows {prev}; sizes must increase");
                return self.fail(line, msg);
            }
            let rules = self.comm_rules(op, comm_size)?;
            comms.push(CommRules { comm_size, rules });
        }
        Ok(comms)
    }

    fn comm_rules(&mut self, op: RuleOp, comm_size: u32) -> Result<Vec<Rule>, RulesError> {
        let what =
            || format!("the number of message sizes of communicator size {comm_size} of {op}");
        let (count, _) = self.number(u32::MAX, &what)?;
        let mut rules: Vec<Rule> = Vec::new();
        for r in 1..=count {
            let what = |field: &str| {
                format!("{field} of rule {r} of communicator size {comm_size} of {op}")
            };
            let (msg_size, line) = self.number(u64::MAX, &|| what("the message size"))?;
            if let Some(prev) = rules.last().filter(|p| p.msg_size >= msg_size) {
                let (now, prev) = (msg_size, prev.msg_size);
                let msg = format!("message size {now} follows {prev}; sizes must increase");
                return self.fail(line, msg);
            }
            let (algorithm, _) = self.number(u32::MAX, &|| what("the algorithm"))?;
            let (fanout, _) = self.number(u32::MAX, &|| what("the fan-in/out"))?;
            let (segment_size, _) = self.number(u64::MAX, &|| what("the segment size"))?;
            rules.push(Rule {
                msg_size,
                algorithm,
                fanout,
                segment_size,
            });
        }
        Ok(rules)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const VALID: &str = "\
# Two collectives.
2

# allreduce
2   # id
2   # two communicator sizes
4   # from 4 processes
3
0     1 0 0
1024  2 4 0     # trailing comment
65536 3 0 8192
16
1
100   5 2 16384

7   # bcast
1
1
2
0 6 0 0
4096 0 0 0
";

    fn parse(text: &str) -> Result<RulesFile, RulesError> {
        RulesFile::parse(text, "r")
    }

    /// Checks error cases given as pairs of lines: the input, with `;` for
    /// a line break, then the exact error it must give.
    fn rejects(cases: &str) {
        let lines: Vec<&str> = cases
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let pairs = lines.chunks_exact(2);
        assert!(
            !lines.is_empty() && pairs.remainder().is_empty(),
            "malformed cases"
        );
        for pair in pairs {
            let text = pair[0].replace(';', "\n");
            match parse(&text) {
                Ok(f) => panic!("{text:?} was accepted as {f:?}"),
                Err(e) => assert_eq!(e.to_string(), pair[1], "for {text:?}"),
            }
        }
    }

    fn ops(f: &RulesFile) -> Vec<RuleOp> {
        f.ops().collect()
    }

    fn alg(f: &RulesFile, op: RuleOp, comm: u32, msg: u64) -> Option<u32> {
        f.lookup(op, comm, msg).map(|r| r.algorithm)
    }

    #[test]
    fn op_ids_and_names() {
        for (i, op) in RuleOp::ALL.iter().enumerate() {
            assert_eq!(op.id() as usize, i);
            assert_eq!(RuleOp::from_id(op.id()), Some(*op));
        }
        assert_eq!(RuleOp::from_id(2).map(RuleOp::name), Some("allreduce"));
        let name = RuleOp::from_id(13).map(RuleOp::name);
        assert_eq!(name, Some("reduce_scatter_block"));
        assert_eq!(RuleOp::from_id(17), None);
        assert_eq!(RuleOp::Scatterv.to_string(), "scatterv");
    }

    #[test]
    fn parses_a_valid_file() {
        let f = parse(VALID).unwrap();
        assert_eq!(ops(&f), [RuleOp::Allreduce, RuleOp::Bcast]);
        let fields = |r: &Rule| (r.msg_size, r.algorithm, r.fanout, r.segment_size);
        let ar = f.rules_for(RuleOp::Allreduce);
        assert_eq!((ar.len(), ar[0].comm_size, ar[1].comm_size), (2, 4, 16));
        let first: Vec<_> = ar[0].rules.iter().map(fields).collect();
        assert_eq!(first, [(0, 1, 0, 0), (1024, 2, 4, 0), (65536, 3, 0, 8192)]);
        let second: Vec<_> = ar[1].rules.iter().map(fields).collect();
        assert_eq!(second, [(100, 5, 2, 16384)]);
        let b = f.rules_for(RuleOp::Bcast);
        assert_eq!((b.len(), b[0].comm_size, b[0].rules.len()), (1, 1, 2));
        assert!(f.rules_for(RuleOp::Reduce).is_empty());
        let fixed = |m| Some(f.lookup(RuleOp::Bcast, 9, m)?.uses_fixed_decision());
        assert_eq!((fixed(4095), fixed(4096)), (Some(false), Some(true)));
    }

    #[test]
    fn lookup_picks_the_largest_sizes_not_above() {
        let f = parse(VALID).unwrap();
        let ar = RuleOp::Allreduce;
        // Below the smallest communicator size.
        assert_eq!(alg(&f, ar, 0, 0), None);
        assert_eq!(alg(&f, ar, 3, 1 << 20), None);
        // First communicator size, at and between message boundaries.
        assert_eq!(alg(&f, ar, 4, 0), Some(1));
        assert_eq!(alg(&f, ar, 4, 1023), Some(1));
        assert_eq!(alg(&f, ar, 4, 1024), Some(2));
        assert_eq!(alg(&f, ar, 15, 65535), Some(2));
        assert_eq!(alg(&f, ar, 15, 65536), Some(3));
        assert_eq!(alg(&f, ar, 8, u64::MAX), Some(3));
        // Second communicator size: below, at and above its one message size.
        assert_eq!(alg(&f, ar, 16, 0), None);
        assert_eq!(alg(&f, ar, 16, 99), None);
        assert_eq!(alg(&f, ar, 16, 100), Some(5));
        assert_eq!(alg(&f, ar, u32::MAX, 1 << 30), Some(5));
        // Bcast from one process on; algorithm 0 is returned as such.
        assert_eq!(alg(&f, RuleOp::Bcast, 1, 4095), Some(6));
        assert_eq!(alg(&f, RuleOp::Bcast, 1000, 4096), Some(0));
        assert_eq!(alg(&f, RuleOp::Bcast, 0, 4096), None);
        // A collective the file does not list.
        assert_eq!(alg(&f, RuleOp::Reduce, 16, 100), None);
        let r = f.lookup(ar, 4, 2000).unwrap();
        assert_eq!((r.msg_size, r.fanout, r.segment_size), (1024, 4, 0));
    }

    #[test]
    fn empty_lists_are_allowed() {
        let f = parse("2  6 0  9 1 8 0 # gather: nothing\n").unwrap();
        assert_eq!(ops(&f), [RuleOp::Barrier, RuleOp::Gather]);
        assert_eq!(f.lookup(RuleOp::Barrier, 8, 0), None);
        assert_eq!(f.lookup(RuleOp::Gather, 8, 0), None);
        assert_eq!(parse("0").unwrap().ops().count(), 0);
    }

    #[test]
    fn bad_tokens() {
        rejects(
            r#"
            1;2;1;4;2;0 1 0 0;x1 2 0 0
            r:7: "x1" is not a number; expected the message size of rule 2 of communicator size 4 of allreduce
            -1
            r:1: "-1" is not a number; expected the number of collectives
            1 7 1 +2
            r:1: "+2" is not a number; expected the communicator size of entry 1 of bcast
            1 7 1 4 1 0 1.5 0 0
            r:1: "1.5" is not a number; expected the algorithm of rule 1 of communicator size 4 of bcast
            "#,
        );
    }

    #[test]
    fn unknown_and_repeated_collectives() {
        rejects(
            "
            1;42
            r:2: collective id 42 is not known; ids go from 0 (allgather) to 16 (scatterv)
            1 17
            r:1: collective id 17 is not known; ids go from 0 (allgather) to 16 (scatterv)
            1 9999999999
            r:1: collective id 9999999999 is not known; ids go from 0 (allgather) to 16 (scatterv)
            2;2 0;2 0
            r:3: allreduce (collective id 2) is given twice
            ",
        );
    }

    #[test]
    fn sizes_must_increase() {
        rejects(
            "
            1 2 2;8 0;4 0
            r:3: communicator size 4 follows 8; sizes must increase
            1 2 2;8 0;8 0
            r:3: communicator size 8 follows 8; sizes must increase
            1 11 1 4 2;1000 1 0 0;100 2 0 0
            r:3: message size 100 follows 1000; sizes must increase
            1 11 1 4 2;0 1 0 0;0 2 0 0
            r:3: message size 0 follows 0; sizes must increase
            1 3 1;0 0
            r:2: communicator size 0 in alltoall is not allowed; sizes start at 1
            ",
        );
    }

    #[test]
    fn overflows() {
        rejects(
            r#"
            1 2 1 4294967296 0
            r:1: "4294967296" is too large for the communicator size of entry 1 of allreduce (at most 4294967295)
            1 2 1 4 1 18446744073709551616 1 0 0
            r:1: "18446744073709551616" is too large for the message size of rule 1 of communicator size 4 of allreduce (at most 18446744073709551615)
            1 2 1 4 1 0 1 4294967296 0
            r:1: "4294967296" is too large for the fan-in/out of rule 1 of communicator size 4 of allreduce (at most 4294967295)
            4294967296
            r:1: "4294967296" is too large for the number of collectives (at most 4294967295)
            "#,
        );
        // The largest values fit.
        let max = "1 2 1 4294967295 1 18446744073709551615 4294967295 0 18446744073709551615";
        let f = parse(max).unwrap();
        let r = f.lookup(RuleOp::Allreduce, u32::MAX, u64::MAX).unwrap();
        assert_eq!((r.algorithm, r.segment_size), (u32::MAX, u64::MAX));
    }

    #[test]
    fn trailing_tokens() {
        rejects(
            r#"
            2;6 0;7 0;;5 # more
            r:5: unexpected "5" after the last collective (the file declares 2)
            0 0
            r:1: unexpected "0" after the last collective (the file declares 0)
            "#,
        );
    }

    #[test]
    fn unexpected_end_of_file() {
        rejects(
            "
            1;2;1;4;2;0 1 0 0;1024 2 0
            r:7: the file ends where the segment size of rule 2 of communicator size 4 of allreduce was expected
            # nothing
            r:1: the file ends where the number of collectives was expected
            ;;# nothing
            r:3: the file ends where the number of collectives was expected
            2;6 0;# one
            r:3: the file ends where the id of collective 2 of 2 was expected
            1 10
            r:1: the file ends where the number of communicator sizes of gatherv was expected
            1 15 1 8
            r:1: the file ends where the number of message sizes of communicator size 8 of scatter was expected
            ",
        );
        let e = parse("").unwrap_err().to_string();
        assert_eq!(
            e,
            "r:1: the file ends where the number of collectives was expected"
        );
    }

    #[test]
    fn read_names_the_path() {
        let dir = std::env::temp_dir().join(format!("oxmpi-rules-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.rules");
        let e = RulesFile::read(&missing).unwrap_err();
        assert_eq!((e.origin.as_str(), e.line), (missing.to_str().unwrap(), 0));
        let reason = std::fs::read_to_string(&missing).unwrap_err().to_string();
        let expected = format!(
            "{}: cannot read the rules file: {reason}",
            missing.display()
        );
        assert_eq!(e.to_string(), expected);

        let good = dir.join("good.rules");
        std::fs::write(&good, VALID).unwrap();
        assert_eq!(RulesFile::read(&good).unwrap(), parse(VALID).unwrap());
        let bad = dir.join("bad.rules");
        std::fs::write(&bad, "1\n42\n").unwrap();
        let e = RulesFile::read(&bad).unwrap_err();
        assert_eq!((e.origin.as_str(), e.line), (bad.to_str().unwrap(), 2));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn never_panics() {
        // Every prefix of a valid file; only the whole file is complete.
        for end in 0..VALID.trim_end().len() {
            assert!(parse(&VALID[..end]).is_err(), "{end} bytes accepted");
        }
        // Pseudo-random token sequences (xorshift64).
        let words: Vec<&str> = "0 1 2 3 4 7 16 17 1024 4294967296 18446744073709551616 x -1 # \n"
            .split(' ')
            .collect();
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut accepted = 0;
        for _ in 0..500 {
            let len = next() % 40;
            let text: Vec<&str> = (0..len).map(|_| words[(next() % 15) as usize]).collect();
            match parse(&text.join(" ")) {
                Ok(f) => {
                    accepted += 1;
                    for op in f.ops() {
                        let _ = f.lookup(op, (next() % 20) as u32, next() % 2048);
                    }
                }
                Err(e) => assert!(e.line >= 1 && !e.message.is_empty(), "{e}"),
            }
        }
        assert!(accepted > 0 && accepted < 500, "{accepted} of 500 accepted");
    }
}
