//! The MCA base's own parameters (framework `mca`, component `base`) and
//! the parameters the core declares for every framework (`<fw>` and
//! `<fw>_base_verbose`).

use crate::paths::{user_component_dir, user_param_file, InstallPaths};
use oxmpi_plugin_api::params::VERBOSITY_VALUES;
use oxmpi_plugin_api::text::excerpt;
use oxmpi_plugin_api::{flags, FrameworkInfo, ParamDecl, ParamType};
use std::path::Path;

/// `mca_base_param_files`.
pub const PARAM_FILES: &str = "mca_base_param_files";
/// `mca_base_override_param_file`.
pub const OVERRIDE_FILE: &str = "mca_base_override_param_file";
/// `mca_base_component_path`.
pub const COMPONENT_PATH: &str = "mca_base_component_path";
/// `mca_base_component_show_load_errors`.
pub const SHOW_LOAD_ERRORS: &str = "mca_base_component_show_load_errors";
/// `mca_base_warn_unknown`.
pub const WARN_UNKNOWN: &str = "mca_base_warn_unknown";
/// `mca_base_verbose`.
pub const VERBOSE: &str = "mca_base_verbose";

/// What [`SHOW_LOAD_ERRORS`] accepts, worded for the end of an "invalid
/// value" message.
pub const SHOW_LOAD_ERRORS_ACCEPTED: &str = "\"all\", \"none\" (also yes/no, true/false, 1/0), or a comma-separated list of framework or framework/component names (\"btl,pml/ucx\"), with one ^ in front to report all but those";

/// Checks a value of [`SHOW_LOAD_ERRORS`]: the words of
/// [`SHOW_LOAD_ERRORS_ACCEPTED`], or a list whose items each name one of
/// `frameworks` (optionally `/component`; components are not checked, since
/// the one that fails to load is not installed). Empty items are ignored.
/// The error says what is wrong, quoting excerpts of the items.
pub fn check_show_load_errors(spec: &str, frameworks: &[&str]) -> Result<(), String> {
    let spec = spec.trim();
    if matches!(
        spec.to_ascii_lowercase().as_str(),
        "all" | "yes" | "1" | "true" | "none" | "no" | "0" | "false" | ""
    ) {
        return Ok(());
    }
    let list = spec.strip_prefix('^').unwrap_or(spec);
    let mut unknown: Vec<&str> = Vec::new();
    for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        if item.starts_with('^') {
            return Err(format!(
                "\"{}\" has a ^ inside the list; a ^ applies to the whole list and goes once in front of it",
                excerpt(item)
            ));
        }
        let framework = match item.split_once('/') {
            Some((_, component)) if component.trim().is_empty() => {
                return Err(format!(
                    "\"{}\" names no component after the /",
                    excerpt(item)
                ))
            }
            Some((fw, _)) => fw.trim(),
            None => item,
        };
        if !frameworks.contains(&framework) && !unknown.contains(&framework) {
            unknown.push(framework);
        }
    }
    match unknown.as_slice() {
        [] => Ok(()),
        [one] => Err(format!(
            "\"{}\" is not a framework (known: {})",
            excerpt(one),
            frameworks.join(", ")
        )),
        many => Err(format!(
            "{} are not frameworks (known: {})",
            excerpt(
                &many
                    .iter()
                    .map(|f| format!("\"{f}\""))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            frameworks.join(", ")
        )),
    }
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

/// Declarations of the core's parameters; defaults depend on the install
/// paths and the home directory, so they are built at start-up.
pub fn core_params(paths: &InstallPaths, home: Option<&Path>) -> Vec<ParamDecl> {
    let mut files = Vec::new();
    if let Some(home) = home {
        files.push(user_param_file(home).display().to_string());
    }
    files.push(paths.system_param_file().display().to_string());
    vec![
        ParamDecl::new(
            "param_files",
            ParamType::List,
            leak(files.join(",")),
            9,
            "Comma-separated list of parameter files to read. Where two files set the same parameter, the leftmost file wins (so the user file beats the system file). \"none\" reads no file. Set it in the environment or on the command line; parameter files cannot set it.",
        ),
        ParamDecl::new(
            "override_param_file",
            ParamType::String,
            leak(paths.override_param_file().display().to_string()),
            9,
            "Parameter file whose values beat every other source, including the command line (for site administrators). Its location is fixed by the install prefix.",
        )
        .with_flags(flags::READ_ONLY),
        ParamDecl::new(
            "component_path",
            ParamType::String,
            "SYSTEM_DEFAULT:USER_DEFAULT",
            9,
            leak(format!(
                "Colon-separated list of directories searched, in order, for component libraries (libmca_<framework>_<component>.so). SYSTEM_DEFAULT stands for {}, USER_DEFAULT for {}. The first library found for a framework/component wins.",
                paths.component_dir.display(),
                home.map(|h| user_component_dir(h).display().to_string()).unwrap_or_else(|| "$HOME/.oxmpi/components".into())
            )),
        ),
        ParamDecl::new(
            "component_show_load_errors",
            ParamType::String,
            "all",
            9,
            "Which component libraries that fail to load are reported as warnings: \"all\", \"none\", or a comma-separated list of framework or framework/component names (\"btl,pml/ucx\"); a leading ^ reports all but those. A component requested by name in a selection parameter is always reported.",
        ),
        ParamDecl::new(
            "warn_unknown",
            ParamType::Bool,
            "true",
            3,
            "Warn about OXMPI_MCA_* variables, parameter file entries and --mca names that no installed framework or component declares, with the closest known names.",
        ),
        ParamDecl::new(
            "verbose",
            ParamType::Enum,
            "error",
            8,
            "Verbosity of the MCA base itself (parameter files, component repository): none, error, component, warn, info, trace, debug, max, or a number from 0 to 100.",
        )
        .with_enum(VERBOSITY_VALUES)
        .with_range(0, 100),
    ]
}

/// `mpi_yield_when_idle`.
pub const YIELD_WHEN_IDLE: &str = "mpi_yield_when_idle";

/// Parameters of the MPI layer (framework `mpi`, component `base`; their
/// full names are `mpi_<name>`), declared here so that every oxmpi process
/// (mpirun, oxmpi_info, ranks) knows them.
pub fn mpi_params() -> Vec<ParamDecl> {
    vec![ParamDecl::new(
        "yield_when_idle",
        ParamType::Bool,
        "false",
        5,
        "Yield the processor while waiting for communication (degraded mode) instead of polling aggressively. mpirun sets it to true for ranks on a node that has more ranks than slots (oversubscribed).",
    )]
}

/// The selection and verbosity parameters of a framework.
pub fn framework_params(info: &FrameworkInfo) -> [ParamDecl; 2] {
    let fw = info.name;
    let renamed: Vec<String> = info
        .component_aliases
        .iter()
        .map(|a| format!("{} (now {})", a.old, a.current))
        .collect();
    let old_names = if renamed.is_empty() {
        String::new()
    } else {
        format!(
            " Old names still work but are deprecated: {}.",
            renamed.join(", ")
        )
    };
    [
        ParamDecl::new(
            "",
            ParamType::String,
            "",
            2,
            leak(format!(
                "Which {fw} components may be used: a comma-separated list names the only ones (\"a,b\"); a list starting with ^ names the ones to exclude (\"^a,b\"); empty allows every available component.{old_names}"
            )),
        ),
        ParamDecl::new(
            "verbose",
            ParamType::Enum,
            "error",
            8,
            leak(format!(
                "Verbosity of the {fw} framework: none, error, component (selection decisions), warn, info, trace, debug, max, or a number from 0 to 100."
            )),
        )
        .with_enum(VERBOSITY_VALUES)
        .with_range(0, 100),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::check_decl;

    const FWS: &[&str] = &["btl", "coll", "mtl", "pml", "rmaps"];

    #[test]
    fn show_load_errors_accepts_words_and_known_frameworks() {
        for ok in [
            "all",
            "ALL",
            "none",
            "",
            " yes ",
            "0",
            "btl",
            "^btl",
            "btl,pml/ucx",
            "btl, ,pml",
            "^btl/tcp, rmaps",
        ] {
            assert_eq!(check_show_load_errors(ok, FWS), Ok(()), "{ok:?}");
        }
    }

    #[test]
    fn show_load_errors_names_what_is_wrong() {
        assert_eq!(
            check_show_load_errors("bogus", FWS),
            Err("\"bogus\" is not a framework (known: btl, coll, mtl, pml, rmaps)".into())
        );
        assert_eq!(
            check_show_load_errors("^btl,foo/x,bar,foo", FWS),
            Err("\"foo\", \"bar\" are not frameworks (known: btl, coll, mtl, pml, rmaps)".into())
        );
        assert_eq!(
            check_show_load_errors("btl,^pml", FWS),
            Err("\"^pml\" has a ^ inside the list; a ^ applies to the whole list and goes once in front of it".into())
        );
        assert_eq!(
            check_show_load_errors("btl/", FWS),
            Err("\"btl/\" names no component after the /".into())
        );
        let long = "x".repeat(10_000);
        let e = check_show_load_errors(&long, FWS).unwrap_err();
        assert!(e.len() < 300 && e.contains("…(10000 bytes)"), "{e}");
    }

    #[test]
    fn every_core_and_framework_declaration_and_alias_is_valid() {
        let paths = InstallPaths::detect(None, Some("/opt/ox"));
        for d in core_params(&paths, Some(Path::new("/home/u"))) {
            assert_eq!(check_decl(&format!("mca_base_{}", d.name), &d), None);
        }
        for d in mpi_params() {
            assert_eq!(check_decl(&format!("mpi_{}", d.name), &d), None);
        }
        for info in [
            &oxmpi_framework_btl::FRAMEWORK,
            &oxmpi_framework_coll::FRAMEWORK,
            &oxmpi_framework_mtl::FRAMEWORK,
            &oxmpi_framework_pml::FRAMEWORK,
            &oxmpi_framework_rmaps::FRAMEWORK,
        ] {
            assert_eq!(info.alias_problem(), None);
            let [sel, verbose] = framework_params(info);
            assert_eq!(check_decl(info.name, &sel), None);
            assert_eq!(
                check_decl(&format!("{}_base_verbose", info.name), &verbose),
                None
            );
            for d in info.base_params {
                assert_eq!(
                    check_decl(&format!("{}_base_{}", info.name, d.name), d),
                    None
                );
            }
        }
    }
}
