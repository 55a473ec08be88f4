//! The component repository: finds component libraries on
//! `mca_base_component_path` and loads them.
//!
//! A candidate is a file named `libmca_<framework>_<component>.so` or
//! `mca_<framework>_<component>.so` (the framework ends at the first `_`).
//! Loading runs no component code besides the root-module constructor:
//! abi_stable checks the library's ABI version and type layouts, then the
//! repository checks the component's names against the file name and its
//! framework interface version against the core's. Every rejection is kept
//! as a [`LoadFailure`] naming the full path, the reason, and what to do.
//! Libraries are never unloaded.
//!
//! The first component loaded for a framework/name wins; later files with
//! the same identity are recorded as [`Shadowed`] and not loaded. A file
//! named after an old name of a renamed component
//! ([`oxmpi_plugin_api::ComponentAlias`], btl `vader`) is a failure and is
//! not opened: the core reads that name as the new one everywhere.
//!
//! A component's framework module table (optional in the root module) is
//! checked at load time against the layout the program hands in for its
//! framework ([`ModuleLayout`]), so a table of another layout is refused
//! when the library is loaded, not when a job first selects it. The core
//! does not know the framework crates' module types: each program passes
//! the layouts of the frameworks it uses. A module built against an
//! earlier minor version of a framework interface, whose prefix type lacks
//! fields appended since, is accepted ([`module_layout_matches`]): callers
//! read the fields it lacks as absent.
//!
//! Files whose names almost match the pattern (a `.so` that is not
//! `libmca_<framework>_<component>.so`, a `.so.1` or `.so.bak` copy, a
//! `libmca_` name without the second `_`) are not loaded; they are kept as
//! [`Ignored`] so that verbose output and `oxmpi_info --show-failed` can
//! say why.

use abi_stable::abi_stability::abi_checking::check_layout_compatibility;
use abi_stable::library::{lib_header_from_path, LibraryError};
use abi_stable::std_types::ROption;
use abi_stable::type_layout::TypeLayout;
use abi_stable::StableAbi;
use oxmpi_plugin_api::{ComponentRootRef, FrameworkInfo, Version};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// The layout a framework's module table must have, handed to the core by
/// the program that knows the framework's module type (the MCA core does
/// not depend on framework crates).
#[derive(Copy, Clone)]
pub struct ModuleLayout {
    /// Framework name (`btl`).
    pub framework: &'static str,
    /// Layout of the framework crate's module type.
    pub layout: &'static TypeLayout,
}

impl ModuleLayout {
    /// The layout of module type `T` of `framework`.
    pub fn of<T: StableAbi>(framework: &'static str) -> ModuleLayout {
        ModuleLayout {
            framework,
            layout: <T as StableAbi>::LAYOUT,
        }
    }
}

impl std::fmt::Debug for ModuleLayout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModuleLayout")
            .field("framework", &self.framework)
            .field("type", &self.layout.full_type().to_string())
            .finish()
    }
}

/// Reason given for a file whose name almost matches the component pattern.
pub const IGNORED_REASON: &str =
    "ignored: the name does not match libmca_<framework>_<component>.so";

/// A file in a component directory whose name almost matches the component
/// pattern, and which was therefore not loaded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ignored {
    /// Full path of the file.
    pub path: PathBuf,
}

impl Ignored {
    /// The one-paragraph message for this file: the path, the reason, and
    /// what to do.
    pub fn message(&self) -> String {
        format!(
            "{} was {IGNORED_REASON}. If it is a component, rename it to libmca_<framework>_<component>.so (the framework ends at the first _); otherwise remove it from the component directory.",
            self.path.display()
        )
    }
}

/// Whether `file_name` almost matches the component pattern without
/// matching it: a shared library (`.so`) that is not named
/// `libmca_<framework>_<component>.so`, or a versioned or backup copy
/// (`.so.1`, `.so.bak`). Cargo's other outputs next to the components in a
/// dev tree (`.d`, `.rlib`) are not near misses.
pub fn near_miss(file_name: &str) -> bool {
    component_file_name(file_name).is_none()
        && (file_name.ends_with(".so") || file_name.contains(".so."))
}

/// A loaded component library.
#[derive(Clone)]
pub struct LoadedComponent {
    /// Framework name.
    pub framework: String,
    /// Component name.
    pub name: String,
    /// Full path of the library.
    pub path: PathBuf,
    /// The component's root module.
    pub root: ComponentRootRef,
    /// The component's own version.
    pub version: Version,
    /// Framework interface version it implements.
    pub interface_version: Version,
    /// One-line description.
    pub description: String,
    /// The expected module layout the table was checked against when the
    /// library was loaded (its framework's module type, when the program
    /// passed it in [`McaInputs::module_layouts`](crate::mca::McaInputs)),
    /// so [`LoadedComponent::module`] need not walk the layouts again.
    pub checked_module_layout: Option<&'static TypeLayout>,
}

impl std::fmt::Debug for LoadedComponent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoadedComponent")
            .field("framework", &self.framework)
            .field("name", &self.name)
            .field("path", &self.path)
            .field("version", &self.version)
            .field("interface_version", &self.interface_version)
            .finish_non_exhaustive()
    }
}

impl LoadedComponent {
    /// The component's framework module table, checked against the layout
    /// of `T` (the framework crate's module type).
    ///
    /// Errors, as one sentence naming the library: the component exports no
    /// module, or its module type differs from `T` (built against another
    /// version of the framework interface).
    pub fn module<T: StableAbi>(&self) -> Result<&'static T, String> {
        let table = self
            .root
            .module()
            .and_then(ROption::into_option)
            .ok_or_else(|| {
                format!(
                    "{} component {} ({}) provides no {} module",
                    self.framework,
                    self.name,
                    self.path.display(),
                    self.framework
                )
            })?;
        let expected = <T as StableAbi>::LAYOUT;
        // The same Rust type of this program (its `TypeId`, which abi_stable
        // keeps in the layout): the layout statics themselves may be
        // duplicated by the compiler, so their addresses are not compared.
        let checked_at_load = self
            .checked_module_layout
            .is_some_and(|checked| checked.get_utypeid() == expected.get_utypeid());
        if checked_at_load {
            // SAFETY: the table was checked against the layout of `T`
            // itself (the same type id) when the library was loaded; it is
            // a `'static` reference in a library that is never unloaded.
            return Ok(unsafe { &*(table.table as *const T) });
        }
        module_layout_matches(expected, table.layout).map_err(|e| {
            format!(
                "{} component {} ({}) has a {} module of another layout ({}); rebuild it against this version of oxmpi",
                self.framework,
                self.name,
                self.path.display(),
                self.framework,
                summarize_abi_error(&e.to_string())
            )
        })?;
        // SAFETY: the layout check proved the table is a `T`; it is a
        // `'static` reference in a library that is never unloaded.
        Ok(unsafe { &*(table.table as *const T) })
    }
}

/// Whether a component's module table of layout `found` may be read as
/// the program's module type of layout `expected`: abi_stable's check
/// (`expected` first), which lets `found` have *more* fields appended to a
/// prefix type, or the same check the other way round, which passes when
/// `found` is an earlier version of `expected` with fewer appended fields
/// (a component built against an earlier minor version of the framework
/// interface). Reading such a table through the program's type is sound:
/// the shared fields have the same layout, and a prefix type's accessor of
/// an appended field consults the table's own field accessibility, so the
/// fields it lacks read as absent.
///
/// # Errors
///
/// abi_stable's errors of the check in the `expected`-first direction.
pub fn module_layout_matches(
    expected: &'static TypeLayout,
    found: &'static TypeLayout,
) -> Result<(), abi_stable::abi_stability::abi_checking::AbiInstabilityErrors> {
    match check_layout_compatibility(expected, found) {
        Ok(()) => Ok(()),
        Err(e) => check_layout_compatibility(found, expected).map_err(|_| e),
    }
}

/// A library that was skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoadFailure {
    /// Full path of the library.
    pub path: PathBuf,
    /// Framework, from the file name.
    pub framework: String,
    /// Component, from the file name.
    pub component: String,
    /// Why it was skipped (one sentence).
    pub reason: String,
    /// What the user can do about it.
    pub hint: String,
    /// Full diagnostic text, for verbose output, when the reason summarizes it.
    pub detail: Option<String>,
}

impl LoadFailure {
    /// The failure as a reason its component is missing: "its library …
    /// did not load: …".
    pub fn as_reason(&self) -> String {
        format!(
            "its library {} did not load: {}",
            self.path.display(),
            self.reason
        )
    }

    /// The one-paragraph warning for this failure.
    pub fn message(&self) -> String {
        format!(
            "skipped component library {} ({} component {}): {}. {}",
            self.path.display(),
            self.framework,
            self.component,
            self.reason,
            self.hint
        )
    }
}

/// A library not loaded because another with the same identity came first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shadowed {
    /// Framework name.
    pub framework: String,
    /// Component name.
    pub name: String,
    /// The library that was not loaded.
    pub path: PathBuf,
    /// The library used instead.
    pub used: PathBuf,
}

/// What a scan found.
#[derive(Default, Debug)]
pub struct Repository {
    /// Loaded components, in search order.
    pub components: Vec<LoadedComponent>,
    /// Libraries that were skipped.
    pub failures: Vec<LoadFailure>,
    /// Libraries hidden by an earlier one with the same identity.
    pub shadowed: Vec<Shadowed>,
    /// Files whose names almost match the component pattern, not loaded.
    pub ignored: Vec<Ignored>,
    /// The directories searched, in order (duplicates removed).
    pub searched: Vec<PathBuf>,
    /// Component files of frameworks this program knows but does not load
    /// (a rank's rmaps components): never opened.
    pub not_loaded: Vec<PathBuf>,
}

/// Splits a component file name into (framework, component).
pub fn component_file_name(file_name: &str) -> Option<(&str, &str)> {
    let stem = file_name.strip_suffix(".so")?;
    let stem = stem.strip_prefix("lib").unwrap_or(stem);
    let rest = stem.strip_prefix("mca_")?;
    let (framework, component) = rest.split_once('_')?;
    (!framework.is_empty() && !component.is_empty()).then_some((framework, component))
}

/// Whether a component built against `component` can be used by a core
/// that provides `core`: same major version, and no newer minor version.
pub fn interface_compatible(core: Version, component: Version) -> bool {
    core.major == component.major && component.minor <= core.minor
}

/// Scans `dirs` in order and loads every candidate of `frameworks` (the
/// frameworks this program loads), checking the module table of a framework
/// listed in `modules` against its layout. Files of the frameworks named in
/// `not_loaded` (known to the core, not used by this program) are listed in
/// [`Repository::not_loaded`] and never opened; files of any other
/// framework name are failures ("no framework named …").
///
/// Libraries that install crash-signal handlers as they load leave the
/// program's handling in place ([`crate::crash_signals`]).
pub fn scan(
    dirs: &[PathBuf],
    frameworks: &[&FrameworkInfo],
    not_loaded: &[&str],
    modules: &[ModuleLayout],
) -> Repository {
    crate::crash_signals::kept(|| scan_dirs(dirs, frameworks, not_loaded, modules))
}

/// [`scan`]'s work.
fn scan_dirs(
    dirs: &[PathBuf],
    frameworks: &[&FrameworkInfo],
    not_loaded: &[&str],
    modules: &[ModuleLayout],
) -> Repository {
    let mut repo = Repository::default();
    let mut seen_dirs = HashSet::new();
    for dir in dirs {
        if !seen_dirs.insert(dir.clone()) {
            continue;
        }
        repo.searched.push(dir.clone());
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<(String, PathBuf)> = Vec::new();
        let mut ignored: Vec<PathBuf> = Vec::new();
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if component_file_name(&name).is_some() {
                files.push((name, entry.path()));
            } else if near_miss(&name) && entry.path().is_file() {
                ignored.push(entry.path());
            }
        }
        files.sort();
        ignored.sort();
        repo.ignored
            .extend(ignored.into_iter().map(|path| Ignored { path }));
        for (file_name, path) in files {
            if let Some((framework, component)) = component_file_name(&file_name) {
                if not_loaded.contains(&framework)
                    && !frameworks.iter().any(|f| f.name == framework)
                {
                    repo.not_loaded.push(path);
                    continue;
                }
                let known = (frameworks, not_loaded);
                load_one(&mut repo, &path, framework, component, known, modules);
            }
        }
    }
    repo
}

fn load_one(
    repo: &mut Repository,
    path: &Path,
    framework: &str,
    component: &str,
    (frameworks, not_loaded): (&[&FrameworkInfo], &[&str]),
    modules: &[ModuleLayout],
) {
    if let Some(winner) = repo
        .components
        .iter()
        .find(|c| c.framework == framework && c.name == component)
    {
        repo.shadowed.push(Shadowed {
            framework: framework.to_string(),
            name: component.to_string(),
            path: path.to_path_buf(),
            used: winner.path.clone(),
        });
        return;
    }
    let fail = |reason: String, hint: &str, detail: Option<String>| LoadFailure {
        path: path.to_path_buf(),
        framework: framework.to_string(),
        component: component.to_string(),
        reason,
        hint: hint.to_string(),
        detail,
    };
    let Some(info) = frameworks.iter().find(|f| f.name == framework) else {
        let mut known: Vec<&str> = frameworks.iter().map(|f| f.name).collect();
        known.extend(not_loaded);
        known.sort_unstable();
        known.dedup();
        repo.failures.push(fail(
            format!(
                "there is no framework named \"{framework}\" (known: {})",
                known.join(", ")
            ),
            "Rename the file after its framework, or remove it from the component path.",
            None,
        ));
        return;
    };
    if let Some(alias) = info.alias_of(component) {
        repo.failures.push(fail(
            format!(
                "\"{component}\" is the old name of {framework} component \"{}\", and oxmpi reads it as \"{}\" in selections and parameter names, so a component by the old name can never be used",
                alias.current, alias.current
            ),
            "It is probably left from an older installation: remove it from the component path.",
            None,
        ));
        return;
    }
    let root =
        match lib_header_from_path(path).and_then(|h| h.init_root_module::<ComponentRootRef>()) {
            Ok(root) => root,
            Err(e) => {
                let (reason, hint, detail) = describe_library_error(&e);
                repo.failures.push(fail(reason, hint, detail));
                return;
            }
        };
    let (declared_fw, declared_name) = (root.framework().as_str(), root.component().as_str());
    if declared_fw != framework || declared_name != component {
        repo.failures.push(fail(
            format!(
                "the library declares itself as {declared_fw} component {declared_name}, which does not match its file name"
            ),
            &format!("Rename it to libmca_{declared_fw}_{declared_name}.so."),
            None,
        ));
        return;
    }
    let interface_version = root.interface_version();
    if !interface_compatible(info.interface_version, interface_version) {
        repo.failures.push(fail(
            format!(
                "it implements version {interface_version} of the {framework} interface, and this oxmpi provides version {} (the major versions must match and the component's minor version must not be newer)",
                info.interface_version
            ),
            "Rebuild the component against this version of oxmpi.",
            None,
        ));
        return;
    }
    let table = root.module().and_then(ROption::into_option);
    let mut checked_module_layout = None;
    if let (Some(expected), Some(table)) =
        (modules.iter().find(|m| m.framework == framework), table)
    {
        if let Err(e) = module_layout_matches(expected.layout, table.layout) {
            let full = e.to_string();
            repo.failures.push(fail(
                format!(
                    "its {framework} module table has another layout than this oxmpi's ({})",
                    summarize_abi_error(&full)
                ),
                "Rebuild the component against this version of oxmpi, or remove it from the component path.",
                Some(full),
            ));
            return;
        }
        checked_module_layout = Some(expected.layout);
    }
    repo.components.push(LoadedComponent {
        framework: framework.to_string(),
        name: component.to_string(),
        path: path.to_path_buf(),
        version: root.component_version(),
        interface_version,
        description: root.description().to_string(),
        root,
        checked_module_layout,
    });
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let s_text = s.to_string();
        if !text.contains(&s_text) {
            text.push_str(": ");
            text.push_str(&s_text);
        }
        source = s.source();
    }
    text
}

/// Turns abi_stable's (long, multi-line) error into a one-sentence reason,
/// a hint, and the full text for verbose output.
fn describe_library_error(e: &LibraryError) -> (String, &'static str, Option<String>) {
    const REBUILD: &str = "Rebuild the component against this version of oxmpi, or remove it from the component path.";
    match e {
        LibraryError::OpenError { err, .. } => (
            format!("the dynamic loader cannot load it: {}", error_chain(err.as_ref())),
            "If it is not a component library, remove it from the component path; if it needs other libraries, make them findable (ldd shows which are missing).",
            None,
        ),
        LibraryError::GetSymbolError { symbol, err, .. } => (
            format!(
                "it is not an oxmpi component: it does not export the root module symbol {} ({})",
                String::from_utf8_lossy(symbol).trim_end_matches('\0'),
                error_chain(err.as_ref())
            ),
            "oxmpi components export their root module with oxmpi_plugin_api::export_component!; remove other libraries from the component path.",
            None,
        ),
        LibraryError::IncompatibleVersionNumber { expected_version, actual_version, .. } => (
            format!(
                "it was built against version {actual_version} of the oxmpi plugin ABI, and this oxmpi uses version {expected_version}"
            ),
            REBUILD,
            None,
        ),
        LibraryError::AbiInstability(err) => {
            let full = err.to_string();
            (
                format!(
                    "its plugin interface types differ from this oxmpi's ({})",
                    summarize_abi_error(&full)
                ),
                REBUILD,
                Some(full),
            )
        }
        LibraryError::InvalidAbiHeader(_) | LibraryError::InvalidCAbi { .. } => (
            "it was built with an incompatible version of abi_stable or of the Rust compiler".into(),
            REBUILD,
            Some(e.to_string()),
        ),
        LibraryError::ParseVersionError(v) => (
            format!("its plugin ABI version cannot be read: {v}"),
            REBUILD,
            None,
        ),
        LibraryError::RootModule { err, .. } => (
            format!("its root module failed to initialize: {}", err.to_string().trim()),
            "Report this to the component's authors.",
            None,
        ),
        LibraryError::Many(errors) => match errors.first() {
            Some(first) => describe_library_error(first),
            None => ("it could not be loaded".into(), REBUILD, Some(e.to_string())),
        },
    }
}

/// One difference reported by abi_stable's layout checker.
#[derive(Debug, Default)]
struct AbiDifference {
    /// Where: the root type, then field names (`ComponentRoot.framework`).
    path: Vec<String>,
    /// What differs (`mismatched type`).
    what: String,
    /// The expected value, condensed to one line.
    expected: String,
    /// The value found in the library, condensed to one line.
    found: String,
    /// Whether the expected/found values are fields (`field framework (RStr<'a>)`).
    names_field: bool,
}

/// Whether `line` (trimmed) starts a group of errors: `3 error(s)…`.
fn is_error_group_header(line: &str) -> bool {
    line.split_once(' ').is_some_and(|(n, rest)| {
        n.bytes().all(|b| b.is_ascii_digit()) && rest.starts_with("error(s)")
    })
}

/// Condenses an `Expected:`/`Found:` block: a type layout becomes its field
/// name and type, anything else is joined on one line.
fn condense_abi_block(lines: &[&str]) -> (String, bool) {
    let value = |key: &str| {
        lines
            .iter()
            .find_map(|l| l.strip_prefix(key))
            .map(str::trim)
    };
    match (value("field_name:"), value("type:")) {
        (Some(field), Some(ty)) => (format!("field {field} ({ty})"), true),
        (None, Some(ty)) => (ty.to_string(), false),
        _ => (lines.join(" "), false),
    }
}

/// Parses abi_stable's layout error text (the `Display` of its
/// `AbiInstabilityErrors`): groups of `N error(s)inside:` followed by the
/// stack of nested fields where they were found, the two layouts, then one
/// `Error:<what>` / `Expected:` / `Found:` block per difference.
fn parse_abi_error(full: &str) -> Vec<AbiDifference> {
    let lines: Vec<&str> = full.lines().map(str::trim).collect();
    let mut differences = Vec::new();
    let mut path: Vec<String> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if is_error_group_header(line) {
            path.clear();
            i += 1;
            if !line.ends_with("inside:") {
                continue;
            }
            // The stack: entries of `field_name:` and `type:` lines; the
            // first entry names the root type, later ones the fields inside it.
            let mut entries: Vec<(String, String)> = Vec::new();
            while i < lines.len()
                && !lines[i].starts_with("Layout of expected type:")
                && !lines[i].starts_with("Error:")
                && !is_error_group_header(lines[i])
            {
                if let Some(field) = lines[i].strip_prefix("field_name:") {
                    entries.push((field.trim().to_string(), String::new()));
                } else if let (Some(ty), Some(last)) =
                    (lines[i].strip_prefix("type:"), entries.last_mut())
                {
                    last.1 = ty.trim().to_string();
                }
                i += 1;
            }
            path = entries
                .iter()
                .enumerate()
                .map(|(n, (field, ty))| if n == 0 { ty.clone() } else { field.clone() })
                .collect();
        } else if let Some(what) = line.strip_prefix("Error:") {
            let (mut expected, mut found) = (Vec::new(), Vec::new());
            let mut into_found = None;
            i += 1;
            while i < lines.len() {
                let l = lines[i];
                if l.is_empty()
                    || l.starts_with("Error:")
                    || l == "Extra:"
                    || is_error_group_header(l)
                {
                    break;
                }
                match l {
                    "Expected:" => into_found = Some(false),
                    "Found:" => into_found = Some(true),
                    _ => match into_found {
                        Some(false) => expected.push(l),
                        Some(true) => found.push(l),
                        None => {}
                    },
                }
                i += 1;
            }
            let (expected, expected_field) = condense_abi_block(&expected);
            let (found, found_field) = condense_abi_block(&found);
            differences.push(AbiDifference {
                path: path.clone(),
                what: what.trim().to_string(),
                expected,
                found,
                names_field: expected_field || found_field,
            });
        } else {
            i += 1;
        }
    }
    differences
}

/// A one-line summary of an abi_stable layout error: the first mismatched
/// field (`ComponentRoot.framework: mismatched type: expected RStr<'a>,
/// found u32`) and how many differences there are in all.
fn summarize_abi_error(full: &str) -> String {
    let differences = parse_abi_error(full);
    // Most precise first: a difference inside a field, then one naming a
    // field, then whatever came first.
    let best = differences
        .iter()
        .find(|d| d.path.len() > 1)
        .or_else(|| differences.iter().find(|d| d.names_field))
        .or_else(|| differences.first());
    let mut summary = match best {
        Some(d) => {
            let at = if d.path.is_empty() {
                String::new()
            } else {
                format!("{}: ", d.path.join("."))
            };
            format!("{at}{}: expected {}, found {}", d.what, d.expected, d.found)
        }
        None => "the layout checker reported a mismatch".to_string(),
    };
    if differences.len() > 1 {
        summary.push_str(&format!(
            "; 1 of {} differences, mca_base_verbose=info shows them all",
            differences.len()
        ));
    }
    if summary.chars().count() > 300 {
        summary = summary.chars().take(300).collect();
        summary.push('…');
    }
    summary
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A module type in two minor versions (abi_stable compares type
    /// names, so both are `Table`), and an unrelated one.
    // Only their layouts are used, not the generated accessors.
    #[allow(dead_code)]
    mod minor0 {
        #[repr(C)]
        #[derive(abi_stable::StableAbi)]
        #[sabi(kind(Prefix(prefix_ref = TableRef)))]
        #[sabi(missing_field(option))]
        pub struct Table {
            #[sabi(last_prefix_field)]
            pub first: extern "C" fn() -> u32,
        }
    }

    // Only their layouts are used, not the generated accessors.
    #[allow(dead_code)]
    mod minor1 {
        #[repr(C)]
        #[derive(abi_stable::StableAbi)]
        #[sabi(kind(Prefix(prefix_ref = TableRef)))]
        #[sabi(missing_field(option))]
        pub struct Table {
            #[sabi(last_prefix_field)]
            pub first: extern "C" fn() -> u32,
            pub appended: extern "C" fn() -> u64,
        }
    }

    // Only their layouts are used, not the generated accessors.
    #[allow(dead_code)]
    mod other {
        #[repr(C)]
        #[derive(abi_stable::StableAbi)]
        #[sabi(kind(Prefix(prefix_ref = TableRef)))]
        #[sabi(missing_field(option))]
        pub struct Table {
            #[sabi(last_prefix_field)]
            pub first: extern "C" fn(u8) -> u32,
        }
    }

    #[test]
    fn a_module_of_an_earlier_or_later_minor_matches_and_another_does_not() {
        let old = <minor0::TableRef as StableAbi>::LAYOUT;
        let new = <minor1::TableRef as StableAbi>::LAYOUT;
        let unrelated = <other::TableRef as StableAbi>::LAYOUT;
        // abi_stable alone refuses a table with fewer appended fields.
        assert!(check_layout_compatibility(new, old).is_err());
        module_layout_matches(new, old).expect("an earlier minor is read by a later one");
        module_layout_matches(old, new).expect("a later minor has more fields");
        module_layout_matches(new, new).expect("the same minor");
        assert!(module_layout_matches(new, unrelated).is_err());
        assert!(module_layout_matches(old, unrelated).is_err());
    }

    #[test]
    fn file_names() {
        assert_eq!(
            component_file_name("libmca_btl_tcp.so"),
            Some(("btl", "tcp"))
        );
        assert_eq!(component_file_name("mca_btl_tcp.so"), Some(("btl", "tcp")));
        assert_eq!(
            component_file_name("libmca_rmaps_round_robin.so"),
            Some(("rmaps", "round_robin"))
        );
        for bad in [
            "libmca_btl.so",
            "libmca_btl_.so",
            "libmca__x.so",
            "libmca_btl_tcp.so.1",
            "libfoo.so",
            "libmca_btl_tcp.d",
            "mca_btl_tcp",
        ] {
            assert_eq!(component_file_name(bad), None, "{bad}");
        }
    }

    #[test]
    fn near_misses_are_names_that_almost_match() {
        for near in [
            "mine.so",
            "libmca_rmapsmine.so",
            "libmca_btl_tcp.so.1",
            "libmca_btl_x.so.bak",
            "liboxmpi_fixture_good.so",
        ] {
            assert!(near_miss(near), "{near}");
        }
        for other in [
            "libmca_btl_tcp.so",
            "libmca_btl_tcp.d",
            "libmca_btl_tcp.rlib",
            "mca_btl_tcp",
            "README",
            "mpirun",
        ] {
            assert!(!near_miss(other), "{other}");
        }
    }

    #[test]
    fn near_misses_are_kept_as_ignored_with_their_full_path() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "mine.so",
            "libmca_rmapsmine.so",
            "libmca_btl_x.so.bak",
            "notes.txt",
        ] {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        std::fs::create_dir(dir.path().join("sub.so")).unwrap();
        let repo = scan(&[dir.path().to_path_buf()], &[], &[], &[]);
        let ignored: Vec<PathBuf> = repo.ignored.iter().map(|i| i.path.clone()).collect();
        assert_eq!(
            ignored,
            ["libmca_btl_x.so.bak", "libmca_rmapsmine.so", "mine.so"].map(|n| dir.path().join(n))
        );
        assert!(repo.failures.is_empty(), "{:?}", repo.failures);
        let message = repo.ignored[2].message();
        assert!(
            message.starts_with(&format!(
                "{} was ignored: the name does not match libmca_<framework>_<component>.so. ",
                dir.path().join("mine.so").display()
            )),
            "{message}"
        );
    }

    #[test]
    fn interface_semver() {
        let core = Version::new(1, 2, 0);
        assert!(interface_compatible(core, Version::new(1, 0, 5)));
        assert!(interface_compatible(core, Version::new(1, 2, 9)));
        assert!(!interface_compatible(core, Version::new(1, 3, 0)));
        assert!(!interface_compatible(core, Version::new(2, 0, 0)));
        assert!(!interface_compatible(core, Version::new(0, 2, 0)));
    }

    #[test]
    fn missing_directories_are_skipped_quietly() {
        let repo = scan(
            &[
                PathBuf::from("/nonexistent/oxmpi"),
                PathBuf::from("/nonexistent/oxmpi"),
            ],
            &[],
            &[],
            &[],
        );
        assert!(repo.components.is_empty() && repo.failures.is_empty());
        assert_eq!(repo.searched.len(), 1);
    }

    #[test]
    fn abi_summary_names_the_first_mismatched_field() {
        let text = "Compared <this>:\n    type:PrefixRef<'a, ComponentRoot>\n\n0 error(s).\n\n\
1 error(s)inside:\n    <other>\n\n    field_name:0\n    type:ComponentRoot\n    size:40 align:8\n\n\
Layout of expected type:\n    type:ComponentRoot\n    fields:\n        field_name:framework\n\n\n\
Error:incompatible type size\nExpected:\n    120\nFound:\n    40\n\
1 error(s)inside:\n    <other>\n\n    field_name:0\n    type:ComponentRoot\n\n    field_name:framework\n    type:u32\n\n\
Layout of expected type:\n    type:RStr<'a>\n\n\nError:mismatched type\nExpected:\n    RStr<'a>\nFound:\n    u32\n";
        assert_eq!(
            summarize_abi_error(text),
            "ComponentRoot.framework: mismatched type: expected RStr<'a>, found u32; 1 of 2 differences, mca_base_verbose=info shows them all"
        );
        let package = "1 error(s)inside:\n    <other>\n\n    field_name:0\n    type:ComponentRoot\n\n\
Layout of expected type:\n    package:'x'\n\nError:mismatched package\nExpected:\n    oxmpi-plugin-api\nFound:\n    other\n";
        assert_eq!(
            summarize_abi_error(package),
            "ComponentRoot: mismatched package: expected oxmpi-plugin-api, found other"
        );
        assert_eq!(
            summarize_abi_error("garbage\nmismatch"),
            "the layout checker reported a mismatch"
        );
    }

    #[test]
    fn junk_and_unknown_framework_files_fail_with_full_path() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("libmca_btl_junk.so"), b"not an ELF file").unwrap();
        std::fs::write(dir.path().join("libmca_nosuchfw_x.so"), b"junk").unwrap();
        std::fs::write(dir.path().join("README"), b"ignored").unwrap();
        let repo = scan(
            &[dir.path().to_path_buf()],
            &[&oxmpi_framework_btl::FRAMEWORK],
            &["rmaps"],
            &[],
        );
        assert_eq!(repo.failures.len(), 2, "{:?}", repo.failures);
        let junk = &repo.failures[0];
        assert_eq!(junk.path, dir.path().join("libmca_btl_junk.so"));
        assert!(
            junk.reason.contains("dynamic loader cannot load it"),
            "{}",
            junk.reason
        );
        assert!(junk
            .message()
            .contains(&dir.path().join("libmca_btl_junk.so").display().to_string()));
        assert!(repo.failures[1]
            .reason
            .contains("no framework named \"nosuchfw\" (known: btl, rmaps)"));
    }

    #[test]
    fn files_of_frameworks_not_loaded_are_not_opened() {
        let dir = tempfile::tempdir().unwrap();
        // Not ELF files: opening either would record a failure.
        std::fs::write(dir.path().join("libmca_rmaps_junk.so"), b"junk").unwrap();
        std::fs::write(dir.path().join("libmca_btl_junk.so"), b"junk").unwrap();
        let repo = scan(
            &[dir.path().to_path_buf()],
            &[&oxmpi_framework_btl::FRAMEWORK],
            &["pml", "rmaps"],
            &[],
        );
        assert_eq!(
            repo.not_loaded,
            [dir.path().join("libmca_rmaps_junk.so")],
            "{repo:?}"
        );
        assert_eq!(repo.failures.len(), 1, "{:?}", repo.failures);
        assert_eq!(repo.failures[0].path, dir.path().join("libmca_btl_junk.so"));
    }
}
