//! The launcher side of PMI-1: a pure state machine (no I/O) that `mpirun`
//! feeds with the bytes each rank writes to its PMI socket and that says
//! what to write back.
//!
//! It answers the requests of the "simple" PMI client as hydra (MPICH 4.0)
//! does, byte for byte where a client could tell the difference:
//!
//! | request | reply |
//! |---|---|
//! | `cmd=init pmi_version=1 pmi_subversion=1` | `cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0` |
//! | `cmd=initack pmiid=R` (`PMI_PORT` clients) | `cmd=initack`, `cmd=set size=N`, `cmd=set rank=R`, `cmd=set debug=0` (four lines) |
//! | `cmd=get_maxes` | `cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024` |
//! | `cmd=get_appnum` | `cmd=appnum appnum=A` |
//! | `cmd=get_my_kvsname` | `cmd=my_kvsname kvsname=K` |
//! | `cmd=get_universe_size` | `cmd=universe_size size=U` |
//! | `cmd=put kvsname=K key=k value=v` | `cmd=put_result rc=0 msg=success` |
//! | `cmd=get kvsname=K key=k` | `cmd=get_result rc=0 msg=success value=v`, or `cmd=get_result rc=-1 msg=key_k_not_found value=unknown` |
//! | `cmd=barrier_in` | `cmd=barrier_out` to every rank once all have entered |
//! | `cmd=finalize` | `cmd=finalize_ack` |
//! | `cmd=abort exitcode=C [message=text]` | none: [`Action::Abort`] |
//!
//! Errors are replies with `rc=-1` and a `msg=` token (spaces written as
//! `_`), under the reply name the client waits for, so that it fails
//! cleanly instead of hanging: a `put` that breaks the rules of
//! [`crate::Kvs`] (duplicate key with another value, too long, reserved,
//! more than [`crate::kvs::MAX_KEYS_PER_RANK`] keys from one rank),
//! an unsupported PMI version, name publishing and spawning (unsupported:
//! `publish_result`, `unpublish_result`, `lookup_result`, `spawn_result`
//! with `rc=-1`), a malformed or overlong message. An unknown command is
//! answered `cmd=error rc=-1 msg=unknown_command_<name>`. Everything a
//! launcher should log comes with an [`Action::ProtocolError`].
//!
//! Values are visible to `get` as soon as they are `put` (hydra makes them
//! visible at the next barrier at the latest; a correct client fences
//! first, so it cannot tell).

use crate::frame::{Frame, Framer};
use crate::kvs::{
    Kvs, Maxes, PutError, DEAD_PROCESSES_KEY, MAX_KEYS_PER_RANK, PROCESS_MAPPING_KEY,
};
use crate::mapping::process_mapping;
use crate::wire::{self, excerpt, msg_token, response, Message, WireError};

/// What the launcher knows about the job, for the replies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobInfo {
    /// The number of ranks (`PMI_SIZE`).
    pub size: u32,
    /// The name of the job's key-value space, unique per job (hydra uses
    /// `kvs_<pid>_<n>_<random>_<host>`). Spaces and line breaks are
    /// replaced by `_`, an empty name becomes `kvs_0`, and names longer
    /// than 255 bytes are cut (MPICH clients keep at most 255).
    pub kvsname: String,
    /// The answer to `get_universe_size` (usually the number of slots).
    pub universe_size: u32,
    /// The application number (`MPI_APPNUM`) of each rank: 0 for every
    /// rank of a single-program job; ranks beyond the vector's end get 0.
    pub appnum_of_rank: Vec<u32>,
    /// The `PMI_process_mapping` value, built with
    /// [`crate::mapping::process_mapping`]. Spaces are removed; when empty,
    /// `get` of the key answers "not found" (an MPICH program then finds
    /// co-located ranks by itself, whereas an empty value would make its
    /// `MPI_Init` fail).
    pub process_mapping: String,
}

impl JobInfo {
    /// A single-program job of `size` ranks all on one node: universe size
    /// `size`, application number 0 for every rank, mapping
    /// `(vector,(0,1,size))`.
    pub fn new(size: u32, kvsname: impl Into<String>) -> Self {
        JobInfo {
            size,
            kvsname: kvsname.into(),
            universe_size: size,
            appnum_of_rank: vec![0; size as usize],
            process_mapping: process_mapping(&vec![0; size as usize]),
        }
    }
}

/// What the launcher must do after feeding the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Write `bytes` to rank `rank`'s PMI socket, in order.
    Send {
        /// The rank to write to.
        rank: u32,
        /// The bytes (complete lines).
        bytes: Vec<u8>,
    },
    /// Rank `rank` asked to abort the job (`MPI_Abort`): kill every rank
    /// and exit with `exit_code`, reporting `message` and the rank. The
    /// rank gets no reply. `exit_code` is 1 when the request carried none
    /// or an unreadable one; MPICH 4.0 sends no message, newer MPICH does.
    Abort {
        /// The rank that asked.
        rank: u32,
        /// The exit status it asked for.
        exit_code: i32,
        /// Its explanation, if it sent one.
        message: Option<String>,
    },
    /// Something the launcher should log (a malformed, unknown or
    /// unsupported request, a rank not in the job, a connection closed in
    /// the middle of a message). Any reply is in a separate
    /// [`Action::Send`].
    ProtocolError {
        /// The rank concerned.
        rank: u32,
        /// What happened, in a sentence that names the rank.
        message: String,
    },
}

#[derive(Debug, Clone, Default)]
struct RankState {
    initialized: bool,
    finalized: bool,
    in_barrier: bool,
    aborted: bool,
    disconnected: bool,
    /// Keys this rank has put (new keys only).
    keys: usize,
}

/// The launcher's PMI-1 server for one job. See the module documentation
/// for the protocol; create it with [`PmiServer::new`], then call
/// [`PmiServer::on_bytes`] with whatever each rank's socket delivers and
/// carry out the returned [`Action`]s in order.
#[derive(Debug)]
pub struct PmiServer {
    framers: Vec<Framer>,
    core: Core,
}

#[derive(Debug)]
struct Core {
    job: JobInfo,
    kvs: Kvs,
    ranks: Vec<RankState>,
    waiting: u32,
    maxes_line: Vec<u8>,
    kvsname_line: Vec<u8>,
    universe_line: Vec<u8>,
    mapping_line: Option<Vec<u8>>,
}

const INIT_OK: &[u8] = b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n";
const PUT_OK: &[u8] = b"cmd=put_result rc=0 msg=success\n";
const BARRIER_OUT: &[u8] = b"cmd=barrier_out\n";
const FINALIZE_ACK: &[u8] = b"cmd=finalize_ack\n";

impl PmiServer {
    /// A server for `job` (sanitized as the fields of [`JobInfo`] say).
    pub fn new(mut job: JobInfo) -> Self {
        job.kvsname = sanitize_kvsname(&job.kvsname);
        job.process_mapping
            .retain(|c| !matches!(c, ' ' | '\n' | '\r'));
        let maxes = Maxes::HYDRA;
        let maxes_line = response(
            "maxes",
            &[
                ("kvsname_max", &maxes.kvsname_max.to_string()),
                ("keylen_max", &maxes.keylen_max.to_string()),
                ("vallen_max", &maxes.vallen_max.to_string()),
            ],
        );
        let kvsname_line = response("my_kvsname", &[("kvsname", &job.kvsname)]);
        let universe_line = response("universe_size", &[("size", &job.universe_size.to_string())]);
        let mapping_line = (!job.process_mapping.is_empty()).then(|| {
            response(
                "get_result",
                &[
                    ("rc", "0"),
                    ("msg", "success"),
                    ("value", &job.process_mapping),
                ],
            )
        });
        let n = job.size as usize;
        PmiServer {
            framers: (0..n).map(|_| Framer::default()).collect(),
            core: Core {
                job,
                kvs: Kvs::new(maxes),
                ranks: vec![RankState::default(); n],
                waiting: 0,
                maxes_line,
                kvsname_line,
                universe_line,
                mapping_line,
            },
        }
    }

    /// The job as served (after sanitizing).
    pub fn job(&self) -> &JobInfo {
        &self.core.job
    }

    /// Bytes read from rank `rank`'s PMI socket, in any chunking (an
    /// incomplete message is kept until the rest arrives). Returns what to
    /// do, in order.
    ///
    /// A rank outside the job, or bytes after [`PmiServer::on_disconnect`],
    /// give a [`Action::ProtocolError`] and are ignored; anything after a
    /// rank's abort request is ignored silently.
    pub fn on_bytes(&mut self, rank: u32, bytes: &[u8]) -> Vec<Action> {
        let mut actions = Vec::new();
        let Some(framer) = self.framers.get_mut(rank as usize) else {
            actions.push(self.core.not_in_job(rank));
            return actions;
        };
        if self.core.ranks[rank as usize].disconnected {
            actions.push(Action::ProtocolError {
                rank,
                message: format!(
                    "rank {rank}: {} bytes arrived after its PMI connection closed; ignored",
                    bytes.len()
                ),
            });
            return actions;
        }
        framer.push(bytes);
        while let Some(frame) = framer.next_frame() {
            if self.core.ranks[rank as usize].aborted {
                continue;
            }
            match frame {
                Frame::Line(range) => self.core.on_line(rank, framer.bytes(range), &mut actions),
                Frame::Multi(range) => self.core.on_mcmd(rank, framer.bytes(range), &mut actions),
                Frame::TooLong { len } => {
                    self.core
                        .on_too_long(rank, len, framer.overlong_head(), &mut actions)
                }
            }
        }
        actions
    }

    /// Rank `rank`'s PMI socket reached end of file.
    ///
    /// Returns a [`Action::ProtocolError`] if it closed in the middle of a
    /// message, and nothing otherwise: whether a rank that exits without
    /// finalizing (see [`PmiServer::finalized`]) or while others wait in a
    /// barrier that now cannot complete is a failure is the launcher's
    /// decision (`mpirun` tears the job down).
    pub fn on_disconnect(&mut self, rank: u32) -> Vec<Action> {
        let mut actions = Vec::new();
        let Some(framer) = self.framers.get_mut(rank as usize) else {
            actions.push(self.core.not_in_job(rank));
            return actions;
        };
        let state = &mut self.core.ranks[rank as usize];
        if state.disconnected {
            return actions;
        }
        state.disconnected = true;
        let pending = framer.pending_len();
        if pending > 0 && !state.aborted {
            actions.push(Action::ProtocolError {
                rank,
                message: format!(
                    "rank {rank} closed its PMI connection in the middle of a message \
                     ({pending} bytes: {:?})",
                    excerpt(framer.pending_head())
                ),
            });
        }
        *framer = Framer::default();
        actions
    }

    /// Whether rank `rank` completed `finalize` (false for a rank outside
    /// the job).
    pub fn finalized(&self, rank: u32) -> bool {
        self.core.rank(rank).is_some_and(|s| s.finalized)
    }

    /// Whether rank `rank` completed the `init` handshake (false for a
    /// rank outside the job).
    pub fn initialized(&self, rank: u32) -> bool {
        self.core.rank(rank).is_some_and(|s| s.initialized)
    }

    /// Whether rank `rank` waits in the current barrier.
    pub fn in_barrier(&self, rank: u32) -> bool {
        self.core.rank(rank).is_some_and(|s| s.in_barrier)
    }

    /// How many ranks wait in the current barrier.
    pub fn barrier_waiting(&self) -> u32 {
        self.core.waiting
    }
}

fn sanitize_kvsname(name: &str) -> String {
    let mut s: String = name
        .chars()
        .map(|c| {
            if matches!(c, ' ' | '\n' | '\r') {
                '_'
            } else {
                c
            }
        })
        .collect();
    if s.is_empty() {
        s.push_str("kvs_0");
    }
    let max = Maxes::HYDRA.kvsname_max - 1;
    if s.len() > max {
        let mut cut = max;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
    }
    s
}

/// The reply name a client waits for after sending `command`, for the
/// commands that have one.
fn reply_name(command: &str) -> Option<&'static str> {
    Some(match command {
        "init" => "response_to_init",
        "initack" => "initack",
        "get_maxes" => "maxes",
        "get_appnum" => "appnum",
        "get_my_kvsname" => "my_kvsname",
        "get_universe_size" => "universe_size",
        "put" => "put_result",
        "get" => "get_result",
        "finalize" => "finalize_ack",
        "publish_name" => "publish_result",
        "unpublish_name" => "unpublish_result",
        "lookup_name" => "lookup_result",
        "spawn" => "spawn_result",
        _ => return None,
    })
}

/// The command name at the start of raw bytes (`cmd=NAME ...` or
/// `mcmd=NAME...`), if readable.
fn command_of(bytes: &[u8]) -> Option<&str> {
    let rest = bytes
        .strip_prefix(b"cmd=")
        .or_else(|| bytes.strip_prefix(b"mcmd="))?;
    let end = rest
        .iter()
        .position(|&b| matches!(b, b' ' | b'\n' | b'\r'))
        .unwrap_or(rest.len());
    std::str::from_utf8(&rest[..end]).ok()
}

impl Core {
    fn rank(&self, rank: u32) -> Option<&RankState> {
        self.ranks.get(rank as usize)
    }

    fn not_in_job(&self, rank: u32) -> Action {
        Action::ProtocolError {
            rank,
            message: format!(
                "rank {rank} is not part of this job of {} ranks; its PMI traffic is ignored",
                self.job.size
            ),
        }
    }

    fn send(actions: &mut Vec<Action>, rank: u32, bytes: Vec<u8>) {
        actions.push(Action::Send { rank, bytes });
    }

    /// Answers a request that cannot be served with `rc=-1` under the
    /// reply name the client waits for (or `error`).
    fn fail(actions: &mut Vec<Action>, rank: u32, command: Option<&str>, msg: &str) {
        let name = command.and_then(reply_name).unwrap_or("error");
        Self::send(
            actions,
            rank,
            response(name, &[("rc", "-1"), ("msg", &msg_token(msg))]),
        );
    }

    fn on_line(&mut self, rank: u32, line: &[u8], actions: &mut Vec<Action>) {
        let msg = match wire::parse_line(line) {
            Ok(m) => m,
            Err(WireError::Empty) => return,
            Err(e) => {
                actions.push(Action::ProtocolError {
                    rank,
                    message: format!("rank {rank} sent a malformed PMI message: {e}"),
                });
                Self::fail(actions, rank, command_of(line), "malformed_message");
                return;
            }
        };
        match msg.command.as_str() {
            "init" => self.init(rank, &msg, actions),
            "initack" => self.initack(rank, &msg, actions),
            "get_maxes" => Self::send(actions, rank, self.maxes_line.clone()),
            "get_appnum" => {
                let appnum = self
                    .job
                    .appnum_of_rank
                    .get(rank as usize)
                    .copied()
                    .unwrap_or(0);
                Self::send(
                    actions,
                    rank,
                    response("appnum", &[("appnum", &appnum.to_string())]),
                );
            }
            "get_my_kvsname" => Self::send(actions, rank, self.kvsname_line.clone()),
            "get_universe_size" => Self::send(actions, rank, self.universe_line.clone()),
            "put" => self.put(rank, &msg, actions),
            "get" => self.get(rank, &msg, actions),
            "barrier_in" => self.barrier_in(rank, actions),
            "finalize" => {
                self.ranks[rank as usize].finalized = true;
                Self::send(actions, rank, FINALIZE_ACK.to_vec());
            }
            "abort" => {
                let exit_code = msg
                    .get("exitcode")
                    .and_then(|c| c.parse::<i32>().ok())
                    .unwrap_or(1);
                // parse_line succeeded, so the line is UTF-8.
                let text = std::str::from_utf8(line).unwrap_or_default();
                let message = wire::rest_of_line(text, "message")
                    .filter(|m| !m.is_empty())
                    .map(str::to_owned);
                self.ranks[rank as usize].aborted = true;
                actions.push(Action::Abort {
                    rank,
                    exit_code,
                    message,
                });
            }
            name @ ("publish_name" | "unpublish_name" | "lookup_name") => {
                actions.push(Action::ProtocolError {
                    rank,
                    message: format!(
                        "rank {rank} asked to {name} (MPI name publishing), which this \
                         launcher does not support; answered with an error"
                    ),
                });
                Self::fail(
                    actions,
                    rank,
                    Some(name),
                    &format!("{name}_is_not_supported_by_this_launcher"),
                );
            }
            other => {
                actions.push(Action::ProtocolError {
                    rank,
                    message: format!(
                        "rank {rank} sent an unknown PMI command {:?} ({:?}); \
                         answered with an error",
                        excerpt(other.as_bytes()),
                        excerpt(line.strip_suffix(b"\n").unwrap_or(line))
                    ),
                });
                Self::send(
                    actions,
                    rank,
                    response(
                        "error",
                        &[
                            ("rc", "-1"),
                            ("msg", &msg_token(&format!("unknown_command_{other}"))),
                        ],
                    ),
                );
            }
        }
    }

    fn init(&mut self, rank: u32, msg: &Message, actions: &mut Vec<Action>) {
        let version = msg.get("pmi_version").and_then(|v| v.parse::<i64>().ok());
        let subversion = match msg.get("pmi_subversion") {
            None => Some(0),
            Some(s) => s.parse::<i64>().ok(),
        };
        if let (Some(1), Some(0..=1)) = (version, subversion) {
            self.ranks[rank as usize].initialized = true;
            Self::send(actions, rank, INIT_OK.to_vec());
            return;
        }
        let asked = format!(
            "{}.{}",
            excerpt(msg.get("pmi_version").unwrap_or("?").as_bytes()),
            excerpt(msg.get("pmi_subversion").unwrap_or("?").as_bytes())
        );
        actions.push(Action::ProtocolError {
            rank,
            message: format!(
                "rank {rank} asked for PMI version {asked}, but this launcher speaks PMI 1.1 \
                 only (a program built for PMI-2 or PMIx needs a launcher for those)"
            ),
        });
        Self::send(
            actions,
            rank,
            response(
                "response_to_init",
                &[
                    ("pmi_version", "1"),
                    ("pmi_subversion", "1"),
                    ("rc", "-1"),
                    (
                        "msg",
                        &msg_token(&format!("unsupported_PMI_version_{asked}")),
                    ),
                ],
            ),
        );
    }

    fn initack(&mut self, rank: u32, msg: &Message, actions: &mut Vec<Action>) {
        let id = msg.get("pmiid").and_then(|v| v.parse::<u32>().ok());
        if id == Some(rank) {
            let bytes = format!(
                "cmd=initack\ncmd=set size={}\ncmd=set rank={rank}\ncmd=set debug=0\n",
                self.job.size
            );
            Self::send(actions, rank, bytes.into_bytes());
            return;
        }
        let got = excerpt(msg.get("pmiid").unwrap_or("(none)").as_bytes());
        actions.push(Action::ProtocolError {
            rank,
            message: format!(
                "rank {rank} sent initack with pmiid {got:?}, which is not its rank; \
                 answered with an error"
            ),
        });
        Self::fail(
            actions,
            rank,
            Some("initack"),
            &format!("pmiid_{got}_is_not_rank_{rank}"),
        );
    }

    /// Checks the optional `kvsname=` field of a put or get.
    fn kvsname_ok(&self, rank: u32, msg: &Message, actions: &mut Vec<Action>) -> bool {
        match msg.get("kvsname") {
            Some(name) if name != self.job.kvsname => {
                Self::fail(
                    actions,
                    rank,
                    Some(msg.command.as_str()),
                    &format!("unknown_kvsname_{name}"),
                );
                false
            }
            _ => true,
        }
    }

    fn put(&mut self, rank: u32, msg: &Message, actions: &mut Vec<Action>) {
        if !self.kvsname_ok(rank, msg, actions) {
            return;
        }
        let Some(key) = msg.get("key") else {
            Self::fail(actions, rank, Some("put"), "missing_key");
            return;
        };
        // Like hydra, a put without value= stores the empty value.
        let value = msg.get("value").unwrap_or("");
        let new = self.kvs.get(key).is_none();
        let state = &mut self.ranks[rank as usize];
        if new && state.keys >= MAX_KEYS_PER_RANK {
            if state.keys == MAX_KEYS_PER_RANK {
                // Said once; later refusals only get the reply.
                state.keys += 1;
                actions.push(Action::ProtocolError {
                    rank,
                    message: format!(
                        "rank {rank} put more than {MAX_KEYS_PER_RANK} PMI keys, the limit for \
                         one rank; its further new keys are refused"
                    ),
                });
            }
            let e = PutError::TooManyKeys {
                max: MAX_KEYS_PER_RANK,
            };
            Self::fail(actions, rank, Some("put"), &e.to_string());
            return;
        }
        match self.kvs.put(key, value) {
            Ok(()) => {
                if new {
                    state.keys += 1;
                }
                Self::send(actions, rank, PUT_OK.to_vec())
            }
            Err(e) => Self::fail(actions, rank, Some("put"), &e.to_string()),
        }
    }

    fn get(&mut self, rank: u32, msg: &Message, actions: &mut Vec<Action>) {
        if !self.kvsname_ok(rank, msg, actions) {
            return;
        }
        let Some(key) = msg.get("key") else {
            Self::fail(actions, rank, Some("get"), "missing_key");
            return;
        };
        if key == PROCESS_MAPPING_KEY {
            if let Some(line) = &self.mapping_line {
                Self::send(actions, rank, line.clone());
                return;
            }
        }
        let value = if key == DEAD_PROCESSES_KEY {
            Some("")
        } else {
            self.kvs.get(key)
        };
        let bytes = match value {
            Some(v) => response(
                "get_result",
                &[("rc", "0"), ("msg", "success"), ("value", v)],
            ),
            None => response(
                "get_result",
                &[
                    ("rc", "-1"),
                    ("msg", &format!("key_{key}_not_found")),
                    ("value", "unknown"),
                ],
            ),
        };
        Self::send(actions, rank, bytes);
    }

    fn barrier_in(&mut self, rank: u32, actions: &mut Vec<Action>) {
        let state = &mut self.ranks[rank as usize];
        if state.in_barrier {
            actions.push(Action::ProtocolError {
                rank,
                message: format!(
                    "rank {rank} entered the barrier again before it completed; ignored"
                ),
            });
            return;
        }
        state.in_barrier = true;
        self.waiting += 1;
        if self.waiting == self.job.size {
            self.waiting = 0;
            for (r, s) in self.ranks.iter_mut().enumerate() {
                s.in_barrier = false;
                actions.push(Action::Send {
                    rank: r as u32,
                    bytes: BARRIER_OUT.to_vec(),
                });
            }
        }
    }

    /// An `mcmd=spawn` block: answered once the last block of a request
    /// (`spawnssofar` = `totspawns`) has arrived.
    fn on_mcmd(&mut self, rank: u32, block: &[u8], actions: &mut Vec<Action>) {
        let text = String::from_utf8_lossy(block);
        let field = |key: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
                .and_then(|v| v.trim().parse::<u64>().ok())
        };
        if let (Some(total), Some(so_far)) = (field("totspawns"), field("spawnssofar")) {
            if so_far < total {
                return;
            }
        }
        let command = command_of(block).unwrap_or("spawn");
        actions.push(Action::ProtocolError {
            rank,
            message: format!(
                "rank {rank} asked to {command} processes (MPI_Comm_spawn), which this \
                 launcher does not support; answered with an error"
            ),
        });
        Self::fail(
            actions,
            rank,
            Some("spawn"),
            "spawn_is_not_supported_by_this_launcher",
        );
    }

    fn on_too_long(&mut self, rank: u32, len: usize, head: &[u8], actions: &mut Vec<Action>) {
        actions.push(Action::ProtocolError {
            rank,
            message: format!(
                "rank {rank} sent a PMI message of {len} bytes, longer than the limit of {} \
                 ({:?}); answered with an error",
                wire::MAX_MESSAGE_LEN,
                excerpt(head)
            ),
        });
        let command = if head.starts_with(b"mcmd=") {
            Some("spawn")
        } else {
            command_of(head)
        };
        Self::fail(actions, rank, command, "message_too_long");
    }
}

#[cfg(test)]
mod tests;
