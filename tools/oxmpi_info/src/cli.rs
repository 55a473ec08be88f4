//! Command-line options.

use clap::Parser;
use std::path::PathBuf;

/// Shows oxmpi's version, install paths, frameworks and components, and
/// every MCA parameter: its value, where the value came from, level, type
/// and help.
///
/// Parameters come from (lowest to highest precedence): defaults, the
/// system parameter file, the user file ($HOME/.oxmpi/mca-params.conf),
/// tune files, OXMPI_MCA_<name> environment variables, --mca on the command
/// line, and the system override file.
#[derive(Parser, Debug, Default)]
#[command(name = "oxmpi_info", version = oxmpi_mca::VERSION, disable_version_flag = true)]
pub struct Cli {
    /// Show the parameters of FRAMEWORK (or "all", "mca" for the core's own,
    /// "mpi" for the MPI layer's) and COMPONENT (or "all", or "base" for
    /// framework-wide ones).
    #[arg(long = "param", visible_alias = "params", num_args = 2, value_names = ["FRAMEWORK", "COMPONENT"])]
    pub param: Option<Vec<String>>,

    /// Show parameters up to this level (1-3 end user, 4-6 application
    /// tuner, 7-9 developer).
    #[arg(short, long, default_value_t = 1, value_parser = clap::value_parser!(u8).range(1..=9))]
    pub level: u8,

    /// Show everything: every framework, component and parameter (level 9),
    /// and the component libraries that failed (as --show-failed).
    #[arg(short, long)]
    pub all: bool,

    /// Machine-readable output, one `key:value` line each (compatible with
    /// `ompi_info --parsable`).
    #[arg(long, visible_alias = "parseable", conflicts_with = "json")]
    pub parsable: bool,

    /// Machine-readable output as one JSON object.
    #[arg(long)]
    pub json: bool,

    /// List component libraries that a job would skip, with the reason:
    /// those that fail to load or whose register, open or query fails or
    /// panics (so their code runs), libraries hidden by an earlier one
    /// with the same name, and files ignored because their name does not
    /// match the component pattern.
    #[arg(long)]
    pub show_failed: bool,

    /// Show install paths: prefix, bindir, sysconfdir, componentdir,
    /// paramfiles, componentpath, or all.
    #[arg(long, num_args = 0..=1, default_missing_value = "all", value_name = "WHICH")]
    pub path: Option<String>,

    /// Show the version and exit.
    #[arg(short = 'V', long)]
    pub version: bool,

    /// Set a parameter as `mpirun --mca` would, to see its effect.
    #[arg(long = "mca", visible_alias = "gmca", num_args = 2, value_names = ["NAME", "VALUE"], action = clap::ArgAction::Append)]
    pub mca: Vec<String>,

    /// Read a tune file as `mpirun --tune` would.
    #[arg(long, value_name = "FILE")]
    pub tune: Vec<PathBuf>,

    /// Print every source that sets NAME, in precedence order, and which one
    /// is in effect.
    #[arg(long, value_name = "NAME")]
    pub explain: Option<String>,
}

impl Cli {
    /// The `--mca NAME VALUE` pairs, in order.
    pub fn mca_pairs(&self) -> Vec<(String, String)> {
        self.mca
            .chunks(2)
            .filter(|c| c.len() == 2)
            .map(|c| (c[0].clone(), c[1].clone()))
            .collect()
    }
}
