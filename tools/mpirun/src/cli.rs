//! Command line of `mpirun` / `mpiexec`.
//!
//! Open MPI users write long options with one dash (`-np 4`, `-mca btl tcp`,
//! `-host a,b`); [`normalize`] rewrites those to clap's `--` form before
//! parsing. An MPMD job separates programs with `:`
//! (`mpirun -n 1 a : -n 2 b`); options before the first program apply to
//! the whole job, and each program may have its own `-n`, `--host`,
//! `--hostfile`, `-x` and `--wdir`.

use clap::{Args, Parser};
use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

/// Launches a parallel job: N copies (ranks) of a program, or several
/// programs separated by `:` (MPMD), with MPI wire-up (PMI-1), forwarded
/// standard input and output, and a clean teardown when anything fails.
///
/// Every rank gets OXMPI_COMM_WORLD_RANK, OXMPI_COMM_WORLD_SIZE,
/// OXMPI_COMM_WORLD_LOCAL_RANK, OXMPI_COMM_WORLD_LOCAL_SIZE and
/// OXMPI_COMM_WORLD_NODE_RANK, the PMI variables PMI_FD, PMI_RANK and
/// PMI_SIZE, the --mca and --tune parameters as OXMPI_MCA_<name>, and the
/// -x variables. Non-MPI programs run too (mpirun -n 3 hostname).
///
/// EXIT STATUS: 0 when every rank exited 0. Otherwise the status of the
/// first rank that failed: its exit code, 128+N for a rank killed by signal
/// N, or the error code given to MPI_Abort; 124 when --timeout expired;
/// 128+N when mpirun itself got signal N (SIGINT, SIGTERM, SIGHUP); 1 for
/// bad options, parameters or host lists (nothing is launched then).
///
/// When one rank fails, mpirun stops every other rank (SIGTERM, then
/// SIGKILL after a second), prints one report naming the rank, host, pid
/// and what happened, and leaves no process behind - also when mpirun
/// itself is killed with SIGKILL.
#[derive(Parser, Debug)]
#[command(
    name = "mpirun",
    version = oxmpi_mca::VERSION,
    disable_version_flag = true,
    after_help = "Examples:\n  mpirun -n 4 ./app\n  mpirun -np 2 --mca btl self,tcp ./app arg1\n  mpirun --tag-output -n 3 hostname\n  mpirun -n 1 ./server : -n 4 ./client\n  mpirun -x LD_LIBRARY_PATH -x OMP_NUM_THREADS=2 -n 8 --oversubscribe ./app"
)]
pub struct Cli {
    /// The first (or only) program and its options.
    #[command(flatten)]
    pub app: AppOptions,

    /// Mapping policy: slot (default), node, core, hwthread, package, numa,
    /// seq or ppr:N:RESOURCE, with modifiers :OVERSUBSCRIBE,
    /// :NOOVERSUBSCRIBE, :PE=n, :HWTCPUS, :SPAN. Default from the parameter
    /// rmaps_default_mapping_policy.
    #[arg(long = "map-by", value_name = "POLICY")]
    pub map_by: Option<String>,

    /// Ranking policy: slot, node, or an object (core, package, ...);
    /// default: ranks follow the mapping.
    #[arg(long = "rank-by", value_name = "POLICY")]
    pub rank_by: Option<String>,

    /// Bind each rank to: none, hwthread, core, package (socket) or numa,
    /// optionally with :overload-allowed or :if-supported. Default: core
    /// when a node has at most 2 ranks, package above, none when the node
    /// is oversubscribed.
    #[arg(long = "bind-to", value_name = "WHAT")]
    pub bind_to: Option<String>,

    /// Restrict the job to these logical CPUs (such as 0,2-3); ranks are
    /// bound within them.
    #[arg(long = "cpu-set", value_name = "LIST")]
    pub cpu_set: Option<String>,

    /// Print the binding of every rank before it starts.
    #[arg(long = "report-bindings")]
    pub report_bindings: bool,

    /// Print the job map (hosts, slots, ranks) before launching; `json`
    /// prints it as one JSON object.
    #[arg(long = "display-map", num_args = 0..=1, require_equals = true, default_missing_value = "text", value_name = "FORMAT")]
    pub display_map: Option<String>,

    /// Map the job (and print it with --display-map), then exit 0 without
    /// launching anything.
    #[arg(long = "do-not-launch")]
    pub do_not_launch: bool,

    /// Allow more ranks than slots on a host.
    #[arg(long)]
    pub oversubscribe: bool,

    /// Set an MCA parameter for the job (repeatable; giving the same name
    /// twice with different values is an error).
    #[arg(long = "mca", visible_alias = "gmca", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append, value_parser = clap::builder::OsStringValueParser::new())]
    pub mca: Vec<OsString>,

    /// Read options from FILE: lines of `--mca NAME VALUE`, `-x VAR[=VALUE]`
    /// and `NAME = VALUE`. --mca on the command line beats a tune file.
    #[arg(long, value_name = "FILE")]
    pub tune: Vec<PathBuf>,

    /// Prefix every output line with [1,RANK]<stdout>: or [1,RANK]<stderr>:.
    #[arg(long = "tag-output")]
    pub tag_output: bool,

    /// Write each rank's output to DIR/1/rank.RANK/stdout and .../stderr
    /// instead of the terminal.
    #[arg(long = "output-filename", value_name = "DIR")]
    pub output_filename: Option<PathBuf>,

    /// Stop the job, with a report, if it runs longer than SECONDS (a
    /// positive number, at most 1e9).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<f64>,

    /// Which ranks get mpirun's standard input: a rank number (default 0),
    /// all, or none.
    #[arg(long, value_name = "RANK|all|none", default_value = "0")]
    pub stdin: String,

    /// Print the version and exit.
    #[arg(short = 'V', long)]
    pub version: bool,
}

/// Options of one program of the job.
#[derive(Args, Debug, Clone, Default)]
pub struct AppOptions {
    /// Number of ranks (default: the number of slots).
    #[arg(short = 'n', long = "np", value_name = "N")]
    pub np: Option<u32>,

    /// Hosts to run on, comma-separated, each optionally with :SLOTS
    /// (host1,host2:4). Repeatable.
    #[arg(short = 'H', long = "host", value_name = "HOSTS")]
    pub host: Vec<String>,

    /// File listing the hosts to run on.
    #[arg(long = "hostfile", visible_alias = "machinefile", value_name = "FILE")]
    pub hostfile: Option<PathBuf>,

    /// Export VAR (from mpirun's environment) or VAR=VALUE to the ranks.
    /// Repeatable.
    #[arg(short = 'x', value_name = "VAR[=VALUE]", value_parser = clap::builder::OsStringValueParser::new())]
    pub export: Vec<OsString>,

    /// Working directory of the ranks.
    #[arg(long = "wdir", visible_alias = "wd", value_name = "DIR")]
    pub wdir: Option<PathBuf>,

    /// The program and its arguments.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "PROGRAM",
        value_parser = clap::builder::OsStringValueParser::new()
    )]
    pub command: Vec<OsString>,
}

/// One extra program of an MPMD job (after a `:`).
#[derive(Parser, Debug)]
#[command(name = "mpirun", no_binary_name = true)]
pub struct AppCli {
    /// The program's options, program and arguments.
    #[command(flatten)]
    pub app: AppOptions,
}

/// Long options that Open MPI users write with one dash, and how many
/// values each takes.
const LONG_OPTIONS: &[(&str, usize)] = &[
    ("np", 1),
    ("mca", 2),
    ("gmca", 2),
    ("host", 1),
    ("hostfile", 1),
    ("machinefile", 1),
    ("wdir", 1),
    ("wd", 1),
    ("map-by", 1),
    ("rank-by", 1),
    ("bind-to", 1),
    ("report-bindings", 0),
    ("cpu-set", 1),
    ("display-map", 0),
    ("do-not-launch", 0),
    ("oversubscribe", 0),
    ("tune", 1),
    ("tag-output", 0),
    ("output-filename", 1),
    ("timeout", 1),
    ("stdin", 1),
    ("version", 0),
];

/// Values taken by short and long options given with `--`.
fn arity(option: &str) -> usize {
    match option {
        "-n" | "-H" | "-x" => 1,
        _ => {
            let name = option.trim_start_matches('-');
            if name.contains('=') {
                return 0;
            }
            LONG_OPTIONS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, a)| *a)
                .unwrap_or(0)
        }
    }
}

/// Splits the arguments (without the program name) into the MPMD segments
/// separated by `:`, rewriting single-dash long options (`-np`) to `--np`.
/// Only words before each segment's program are rewritten. Arguments need
/// not be UTF-8: program names, arguments and paths are passed on as the
/// operating system gave them.
pub fn normalize(args: &[OsString]) -> Vec<Vec<OsString>> {
    let mut segments = vec![Vec::new()];
    let mut in_program = false;
    let mut pending_values = 0;
    for arg in args {
        if arg == ":" {
            segments.push(Vec::new());
            in_program = false;
            pending_values = 0;
            continue;
        }
        let segment = segments.last_mut().expect("at least one segment");
        if in_program {
            segment.push(arg.clone());
            continue;
        }
        if pending_values > 0 {
            pending_values -= 1;
            segment.push(arg.clone());
            continue;
        }
        let Some(text) = arg.to_str() else {
            // Not UTF-8: no option is spelled so, so it is a program name
            // unless it starts with a dash (then an unknown option).
            in_program = !starts_with_dash(arg);
            segment.push(arg.clone());
            continue;
        };
        if !text.starts_with('-') || text == "-" {
            in_program = true;
            segment.push(arg.clone());
            continue;
        }
        let mut word = text.to_string();
        if !text.starts_with("--") && text.len() > 2 {
            let name = text[1..].split('=').next().unwrap_or("");
            if LONG_OPTIONS.iter().any(|(n, _)| *n == name) {
                word = format!("-{text}");
            }
        }
        pending_values = arity(&word);
        segment.push(word.into());
    }
    segments
}

fn starts_with_dash(word: &OsStr) -> bool {
    use std::os::unix::ffi::OsStrExt;
    word.as_bytes().first() == Some(&b'-')
}

/// The first word before a segment's program that looks like an option but
/// is none of `command`'s (such as `--hostname`), so it is reported instead
/// of being run as the program.
pub fn unknown_option(segment: &[OsString], command: &clap::Command) -> Option<String> {
    let known = |word: &str| -> bool {
        if let Some(long) = word.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or("");
            return command.get_arguments().any(|a| {
                a.get_long() == Some(name)
                    || a.get_all_aliases().is_some_and(|al| al.contains(&name))
            });
        }
        let mut chars = word.chars().skip(1);
        match (chars.next(), chars.next()) {
            (Some(c), None) => command.get_arguments().any(|a| a.get_short() == Some(c)),
            _ => false,
        }
    };
    let mut pending = 0;
    for word in segment {
        if pending > 0 {
            pending -= 1;
            continue;
        }
        let Some(word) = word.to_str() else {
            return starts_with_dash(word).then(|| word.to_string_lossy().into_owned());
        };
        if !word.starts_with('-') || word == "-" {
            return None;
        }
        if word == "--" || matches!(word, "-h" | "--help") {
            return None;
        }
        if !known(word) {
            return Some(word.to_string());
        }
        pending = arity(word);
    }
    None
}

/// Where mpirun's standard input goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StdinTarget {
    /// One rank.
    Rank(u32),
    /// Every rank.
    All,
    /// No rank (they read /dev/null).
    None,
}

impl StdinTarget {
    /// Parses `--stdin`.
    pub fn parse(text: &str) -> Result<StdinTarget, String> {
        match text.trim().to_ascii_lowercase().as_str() {
            "all" => Ok(StdinTarget::All),
            "none" => Ok(StdinTarget::None),
            other => other
                .parse::<u32>()
                .map(StdinTarget::Rank)
                .map_err(|_| format!("--stdin {text}: expected a rank number, all or none")),
        }
    }

    /// Whether `rank` reads mpirun's standard input.
    pub fn includes(self, rank: u32) -> bool {
        match self {
            StdinTarget::Rank(r) => r == rank,
            StdinTarget::All => true,
            StdinTarget::None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(args: &[&str]) -> Vec<Vec<String>> {
        normalize(&args.iter().map(OsString::from).collect::<Vec<_>>())
            .into_iter()
            .map(|seg| {
                seg.into_iter()
                    .map(|w| w.into_string().expect("utf-8 in these tests"))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn words_that_are_not_utf8_pass_through_as_programs_or_arguments() {
        use std::os::unix::ffi::OsStringExt;
        let odd = OsString::from_vec(b"x\xff".to_vec());
        let dashed = OsString::from_vec(b"-\xff".to_vec());
        let args = vec![
            OsString::from("-np"),
            OsString::from("2"),
            odd.clone(),
            dashed.clone(),
        ];
        assert_eq!(
            normalize(&args),
            vec![vec![
                OsString::from("--np"),
                "2".into(),
                odd.clone(),
                dashed.clone()
            ]]
        );
        use clap::CommandFactory;
        let cmd = Cli::command();
        assert_eq!(unknown_option(&[odd], &cmd), None);
        assert_eq!(
            unknown_option(&[dashed], &cmd),
            Some("-\u{fffd}".to_string())
        );
    }

    #[test]
    fn single_dash_long_options_become_double_dash_before_the_program() {
        assert_eq!(
            n(&["-np", "2", "-mca", "btl", "tcp", "-x", "A", "prog", "-np", "-x"]),
            vec![vec![
                "--np", "2", "--mca", "btl", "tcp", "-x", "A", "prog", "-np", "-x"
            ]]
        );
        assert_eq!(
            n(&["-host", "a,b", "-n", "2", "a.out"]),
            vec![vec!["--host", "a,b", "-n", "2", "a.out"]]
        );
        assert_eq!(
            n(&["--display-map=json", "-tag-output", "p"]),
            vec![vec!["--display-map=json", "--tag-output", "p"]]
        );
    }

    #[test]
    fn mpmd_segments_split_on_colon() {
        assert_eq!(
            n(&["-n", "1", "a", "x", ":", "-np", "2", "b"]),
            vec![vec!["-n", "1", "a", "x"], vec!["--np", "2", "b"]]
        );
    }

    #[test]
    fn values_of_options_are_not_taken_for_the_program() {
        assert_eq!(
            n(&["--mca", "x", "-1", "prog"]),
            vec![vec!["--mca", "x", "-1", "prog"]]
        );
        assert_eq!(
            n(&["--timeout", "5", "sleep", "1"]),
            vec![vec!["--timeout", "5", "sleep", "1"]]
        );
    }

    #[test]
    fn unknown_options_are_found_before_the_program_only() {
        use clap::CommandFactory;
        let cmd = Cli::command();
        let seg = |a: &[&str]| a.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            unknown_option(&seg(&["--hostname", "h", "-n", "2", "true"]), &cmd),
            Some("--hostname".into())
        );
        assert_eq!(
            unknown_option(
                &seg(&["-n", "2", "--mca", "a", "b", "prog", "--bogus"]),
                &cmd
            ),
            None
        );
        assert_eq!(
            unknown_option(&seg(&["--machinefile", "f", "-q", "prog"]), &cmd),
            Some("-q".into())
        );
        assert_eq!(
            unknown_option(&seg(&["--display-map=json", "prog"]), &cmd),
            None
        );
    }

    #[test]
    fn stdin_target() {
        assert_eq!(StdinTarget::parse("all"), Ok(StdinTarget::All));
        assert_eq!(StdinTarget::parse("3"), Ok(StdinTarget::Rank(3)));
        assert!(StdinTarget::parse("x").is_err());
        assert!(StdinTarget::Rank(0).includes(0) && !StdinTarget::None.includes(0));
    }
}
