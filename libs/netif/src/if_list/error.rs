//! A bad include or exclude setting ([`IfListError`], [`ItemProblem`]) and
//! its message.

use std::fmt;

use super::ParamNames;
use crate::interfaces::CidrError;

/// A bad include or exclude setting. The message names the parameter and
/// the item and says what to write instead; the caller adds where the value
/// came from (file and line, environment variable, command line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IfListError {
    /// Both lists are set; only one may be (reference 001 §7: "only one of
    /// the two should be set").
    BothSet {
        /// The parameter names.
        params: ParamNames,
        /// The include value as given (trimmed).
        include: String,
        /// The exclude value as given (trimmed).
        exclude: String,
    },
    /// An item of a list does not parse.
    BadItem {
        /// The parameter.
        param: &'static str,
        /// The item as given (trimmed).
        item: String,
        /// What is wrong with it.
        problem: ItemProblem,
    },
}

/// What is wrong with a list item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemProblem {
    /// It contains `/` but is not a network (`10.0.0.0/33`, `10.0.0.5/24`).
    Network(CidrError),
    /// It contains a space (`eth0 eth1`: items are separated by commas).
    Whitespace,
    /// It contains a control character.
    ControlChar(char),
    /// It starts with `^` (that is the syntax of component selection, not
    /// of these lists).
    Caret {
        /// The exclude parameter (where interfaces to avoid go).
        exclude_param: &'static str,
    },
}

impl fmt::Display for IfListError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IfListError::BothSet {
                params,
                include,
                exclude,
            } => write!(
                f,
                "{inc} (\"{include}\") and {exc} (\"{exclude}\") are both set, but only one of \
                 them may be: list the interfaces to use in {inc}, or the ones to avoid in {exc}, \
                 and unset the other. Loopback is left out unless {inc} names it, so {exc} need \
                 not mention it",
                inc = params.include,
                exc = params.exclude,
            ),
            IfListError::BadItem {
                param,
                item,
                problem,
            } => {
                write!(f, "{param}: item \"{item}\": ")?;
                match problem {
                    ItemProblem::Network(e) => write!(f, "{e}"),
                    ItemProblem::Whitespace => {
                        f.write_str("contains a space; separate items with commas (eth0,eth1)")
                    }
                    ItemProblem::ControlChar(c) => {
                        write!(f, "contains the control character {c:?}")
                    }
                    ItemProblem::Caret { exclude_param } if exclude_param == param => write!(
                        f,
                        "'^' does not negate items here, and {param} already lists what to leave \
                         out: write \"{}\"",
                        item.trim_start_matches('^')
                    ),
                    ItemProblem::Caret { exclude_param } => write!(
                        f,
                        "'^' does not negate items here; to leave interfaces out, list them in \
                         {exclude_param} instead (and unset {param})"
                    ),
                }
            }
        }
    }
}

impl std::error::Error for IfListError {}
