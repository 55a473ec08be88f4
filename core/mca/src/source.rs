//! Where a parameter value came from, and how sources rank.

use std::fmt;
use std::path::PathBuf;

/// The source of one assignment of a value to a parameter.
///
/// Precedence, lowest to highest: default, parameter files (the leftmost
/// file of `mca_base_param_files` wins, so the user file beats the system
/// file), tune files, environment, command line, override file. Within one
/// source, the later assignment wins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// The declaration's default.
    Default,
    /// A parameter file; `index` is its position in `mca_base_param_files`.
    File {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
        /// Position in the file list (0 wins over 1).
        index: usize,
    },
    /// A tune file (`--tune FILE`).
    Tune {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
    /// An `OXMPI_MCA_<name>` environment variable.
    Environment {
        /// The variable's name.
        variable: String,
    },
    /// `--mca NAME VALUE` on a command line (possibly forwarded by mpirun).
    CommandLine,
    /// The system override file, which beats every other source.
    Override {
        /// The file.
        path: PathBuf,
        /// 1-based line number.
        line: usize,
    },
}

impl Source {
    /// Sort key: a higher key wins.
    pub fn rank(&self) -> (u8, i64) {
        match self {
            Source::Default => (0, 0),
            Source::File { index, .. } => (1, -(*index as i64)),
            Source::Tune { .. } => (2, 0),
            Source::Environment { .. } => (3, 0),
            Source::CommandLine => (4, 0),
            Source::Override { .. } => (5, 0),
        }
    }

    /// Short kind name used in parsable and JSON output (`default`, `file`,
    /// `tune`, `environment`, `command line`, `override`).
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::File { .. } => "file",
            Source::Tune { .. } => "tune",
            Source::Environment { .. } => "environment",
            Source::CommandLine => "command line",
            Source::Override { .. } => "override",
        }
    }

    /// Longer description for `--explain` (names the variable or option).
    pub fn detail(&self) -> String {
        match self {
            Source::Environment { variable } => format!("environment ({variable})"),
            Source::CommandLine => "command line (--mca)".to_string(),
            other => other.to_string(),
        }
    }
}

impl fmt::Display for Source {
    /// `default`, `file (PATH:LINE)`, `tune file (PATH:LINE)`, `environment`,
    /// `command line`, `override (PATH:LINE)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File { path, line, .. } => write!(f, "file ({}:{line})", path.display()),
            Source::Tune { path, line } => write!(f, "tune file ({}:{line})", path.display()),
            Source::Environment { .. } => f.write_str("environment"),
            Source::CommandLine => f.write_str("command line"),
            Source::Override { path, line } => write!(f, "override ({}:{line})", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pair_of_sources_ranks_in_documented_order() {
        let ordered = [
            Source::Default,
            Source::File {
                path: "/sys".into(),
                line: 1,
                index: 1,
            },
            Source::File {
                path: "/user".into(),
                line: 1,
                index: 0,
            },
            Source::Tune {
                path: "/t".into(),
                line: 1,
            },
            Source::Environment {
                variable: "OXMPI_MCA_x".into(),
            },
            Source::CommandLine,
            Source::Override {
                path: "/o".into(),
                line: 1,
            },
        ];
        for (i, lower) in ordered.iter().enumerate() {
            for higher in &ordered[i + 1..] {
                assert!(
                    lower.rank() < higher.rank(),
                    "{lower} should lose to {higher}"
                );
            }
        }
    }

    #[test]
    fn display_forms() {
        let f = Source::File {
            path: "/h/.oxmpi/mca-params.conf".into(),
            line: 3,
            index: 0,
        };
        assert_eq!(f.to_string(), "file (/h/.oxmpi/mca-params.conf:3)");
        assert_eq!(
            Source::Environment {
                variable: "V".into()
            }
            .to_string(),
            "environment"
        );
        assert_eq!(Source::CommandLine.to_string(), "command line");
    }
}
