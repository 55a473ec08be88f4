//! What to show: the options turned into a view, and the parameter rows
//! it selects, in a stable order (core first, then each framework's base
//! parameters, then its components by name).

use crate::cli::Cli;
use oxmpi_mca::registry::ParamInfo;
use oxmpi_mca::repository::LoadedComponent;
use oxmpi_mca::{Mca, Resolved};
use oxmpi_plugin_api::flags;

/// The parts of the output requested.
#[derive(Debug, Default)]
pub struct View {
    /// Only the version line.
    pub version_only: bool,
    /// Version and install summary.
    pub header: bool,
    /// The framework and component list.
    pub components: bool,
    /// Which paths (`all` or one name).
    pub paths: Option<String>,
    /// Parameters of (framework, component); `None` parts mean all.
    pub params: Option<(Option<String>, Option<String>)>,
    /// Highest level shown.
    pub level: u8,
    /// Failed and shadowed libraries.
    pub failed: bool,
}

/// One parameter to show.
pub struct ParamRow<'a> {
    /// Its declaration and owner.
    pub info: &'a ParamInfo,
    /// Its value in effect.
    pub resolved: &'a Resolved,
    /// Whether the selection parameter excludes its component.
    pub disabled: bool,
    /// Its synonyms (name, deprecated).
    pub synonyms: Vec<(&'a str, bool)>,
}

/// Names accepted for `--path`.
pub const PATH_NAMES: &[&str] = &[
    "prefix",
    "bindir",
    "sysconfdir",
    "componentdir",
    "paramfiles",
    "overridefile",
    "componentpath",
    "all",
];

impl View {
    /// Builds the view from the options, checking framework, component
    /// and path names.
    pub fn from_cli(mca: &Mca, cli: &Cli) -> Result<View, String> {
        let mut view = View {
            level: if cli.all { 9 } else { cli.level },
            ..View::default()
        };
        if cli.version {
            view.version_only = true;
            return Ok(view);
        }
        if let Some(which) = &cli.path {
            if !PATH_NAMES.contains(&which.as_str()) {
                return Err(format!(
                    "--path {which}: unknown path name; use one of {}",
                    PATH_NAMES.join(", ")
                ));
            }
            view.paths = Some(which.clone());
        }
        if let Some(p) = &cli.param {
            view.params = Some(check_param_selection(mca, &p[0], &p[1])?);
        }
        view.failed = cli.show_failed;
        if cli.all {
            view.header = true;
            view.components = true;
            view.paths = Some("all".into());
            view.params = Some((None, None));
            view.failed = true;
        } else if view.paths.is_none() && view.params.is_none() && !view.failed {
            view.header = true;
            view.components = true;
        }
        Ok(view)
    }

    /// The parameter rows this view shows.
    pub fn param_rows<'a>(&self, mca: &'a Mca) -> Vec<ParamRow<'a>> {
        let Some((fw, comp)) = &self.params else {
            return Vec::new();
        };
        let registry = mca.registry();
        let mut rows: Vec<(usize, ParamRow<'a>)> = registry
            .params()
            .iter()
            .enumerate()
            .filter(|(_, p)| fw.as_ref().is_none_or(|f| f == &p.framework))
            .filter(|(_, p)| comp.as_ref().is_none_or(|c| c == &p.component))
            .filter(|(_, p)| p.decl.level <= self.level)
            .filter(|(_, p)| p.decl.flags & flags::INTERNAL == 0 || self.level == 9)
            .map(|(i, p)| {
                let disabled = p.component != "base"
                    && mca
                        .filter(&p.framework)
                        .is_some_and(|f| !f.allows(&p.component));
                (
                    i,
                    ParamRow {
                        info: p,
                        resolved: mca.resolved(i),
                        disabled,
                        synonyms: registry.synonyms_of(i),
                    },
                )
            })
            .collect();
        rows.sort_by_key(|(i, r)| (group_key(mca, r.info), *i));
        rows.into_iter().map(|(_, r)| r).collect()
    }
}

fn framework_rank(mca: &Mca, framework: &str) -> usize {
    match framework {
        "mca" => return 0,
        "mpi" => return 1,
        _ => {}
    }
    2 + mca
        .frameworks()
        .iter()
        .position(|f| f.name == framework)
        .unwrap_or(usize::MAX - 1)
}

fn group_key(mca: &Mca, info: &ParamInfo) -> (usize, bool, String) {
    (
        framework_rank(mca, &info.framework),
        info.component != "base",
        info.component.clone(),
    )
}

/// The value of one `--path` entry, as text.
pub fn path_value(mca: &Mca, which: &str) -> String {
    let p = mca.paths();
    match which {
        "prefix" => p.prefix.display().to_string(),
        "bindir" => p.bindir.display().to_string(),
        "sysconfdir" => p.sysconfdir.display().to_string(),
        "componentdir" => p.component_dir.display().to_string(),
        "paramfiles" => mca
            .param_files()
            .iter()
            .map(|(f, exists)| {
                let missing = if *exists { "" } else { " (not found)" };
                format!("{}{missing}", f.display())
            })
            .collect::<Vec<_>>()
            .join(", "),
        "overridefile" => {
            let f = p.override_param_file();
            let missing = if f.is_file() { "" } else { " (not found)" };
            format!("{}{missing}", f.display())
        }
        "componentpath" => mca
            .component_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect::<Vec<_>>()
            .join(":"),
        _ => String::new(),
    }
}

/// The `--path` names to print for a request (`all` expands).
pub fn path_names(which: &str) -> Vec<&'static str> {
    PATH_NAMES
        .iter()
        .copied()
        .filter(|n| *n != "all" && (which == "all" || which == *n))
        .collect()
}

/// The "Valid values" text of a parameter, if it has one.
pub fn valid_values(decl: &oxmpi_plugin_api::ParamDecl) -> Option<String> {
    use oxmpi_plugin_api::ParamType;
    let range = decl.range.into_option();
    match decl.ty {
        ParamType::Enum => {
            let mut items: Vec<String> = decl
                .enum_values
                .iter()
                .map(|v| format!("{}:\"{}\"", v.value, v.name))
                .collect();
            if let Some(r) = range {
                items.push(format!("{} - {}", r.min, r.max));
            }
            Some(items.join(", "))
        }
        ParamType::Bool => Some("0: f|false|disabled|no|n|off, 1: t|true|enabled|yes|y|on".into()),
        ParamType::Int | ParamType::Size => range.map(|r| format!("{} - {}", r.min, r.max)),
        _ => None,
    }
}

/// The `--map-by` policy names an rmaps component declares, as
/// `(name, help)` (none for other frameworks, or a module that cannot be
/// read, which the loader already reported).
pub fn map_policies(c: &LoadedComponent) -> Vec<(&'static str, &'static str)> {
    if c.framework != "rmaps" {
        return Vec::new();
    }
    c.module::<oxmpi_framework_rmaps::RmapsModuleRef>()
        .map(|m| {
            oxmpi_framework_rmaps::RmapsHandle::new(*m)
                .policy_names()
                .iter()
                .map(|p| (p.name.as_str(), p.help.as_str()))
                .collect()
        })
        .unwrap_or_default()
}

/// Loaded components in display order: by framework, then name.
pub fn components(mca: &Mca) -> Vec<&LoadedComponent> {
    let mut list: Vec<&LoadedComponent> = mca.repository().components.iter().collect();
    list.sort_by_key(|c| (framework_rank(mca, &c.framework), c.name.clone()));
    list
}

fn check_param_selection(
    mca: &Mca,
    framework: &str,
    component: &str,
) -> Result<(Option<String>, Option<String>), String> {
    let known: Vec<&str> = mca.frameworks().iter().map(|f| f.name).collect();
    if !matches!(framework, "all" | "mca" | "mpi") && !known.contains(&framework) {
        return Err(format!(
            "--param {framework} {component}: there is no framework named \"{framework}\"; use all, mca (the core's own parameters), mpi (the MPI layer's) or one of {}",
            known.join(", ")
        ));
    }
    // An old name of a renamed component shows the component (`--param
    // btl vader` shows btl sm).
    let asked = component;
    let component = if framework == "all" {
        component
    } else {
        mca.current_component_name(framework, component)
    };
    let formerly = if component == asked {
        String::new()
    } else {
        format!(" (formerly \"{asked}\")")
    };
    if component != "all" && component != "base" {
        let installed: Vec<&str> = mca
            .repository()
            .components
            .iter()
            .filter(|c| framework == "all" || c.framework == framework)
            .map(|c| c.name.as_str())
            .collect();
        if !installed.contains(&component) {
            let listing = if installed.is_empty() {
                "none are installed".to_string()
            } else {
                format!("installed: {}", installed.join(", "))
            };
            return Err(format!(
                "--param {framework} {asked}: no {framework} component named \"{component}\"{formerly} is installed ({listing}; `oxmpi_info --show-failed` lists libraries that failed to load)"
            ));
        }
    }
    let f = (framework != "all").then(|| framework.to_string());
    let c = (component != "all").then(|| component.to_string());
    Ok((f, c))
}
