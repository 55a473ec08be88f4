//! Human-readable output: labels right-aligned so the colon is at column
//! 24, continuation lines indented by 26 columns (Open MPI's layout). Lines
//! are not wrapped, so the output is the same on a terminal and in a file.

use crate::catalog::{self, View};
use oxmpi_mca::levels::level_name;
use oxmpi_mca::value::type_name;
use oxmpi_mca::Mca;
use oxmpi_plugin_api::SelectionKind;
use std::fmt::Write as _;

const INDENT: &str = "                          ";
const SEPARATOR: &str = "---------------------------------------------------";

fn line(out: &mut String, label: &str, text: &str) {
    let _ = writeln!(out, "{label:>24}: {text}");
}

fn title_case(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// Renders the view.
pub fn render(mca: &Mca, view: &View) -> String {
    let mut out = String::new();
    if view.version_only {
        let _ = writeln!(out, "oxmpi {}", oxmpi_mca::VERSION);
        return out;
    }
    if view.header {
        line(&mut out, "Package", "oxmpi (an MPI runtime in Rust)");
        line(&mut out, "oxmpi", oxmpi_mca::VERSION);
        line(&mut out, "Plugin ABI", oxmpi_plugin_api::ABI_VERSION);
        if view.paths.is_none() {
            line(
                &mut out,
                "Prefix",
                &mca.paths().prefix.display().to_string(),
            );
        }
    }
    if let Some(which) = &view.paths {
        for name in catalog::path_names(which) {
            line(&mut out, &title_case(name), &catalog::path_value(mca, name));
        }
    }
    if view.components {
        render_components(mca, &mut out);
    }
    if view.failed {
        render_failed(mca, &mut out);
    }
    render_params(mca, view, &mut out);
    out
}

fn render_components(mca: &Mca, out: &mut String) {
    let components = catalog::components(mca);
    for fw in mca.frameworks() {
        let kind = match fw.selection {
            SelectionKind::Single => "single-select",
            SelectionKind::Multi => "multi-select",
        };
        line(
            out,
            "MCA framework",
            &format!(
                "{} (API v{}, {kind}) {}",
                fw.name, fw.interface_version, fw.description
            ),
        );
        let filter = mca.filter(fw.name);
        let mut any = false;
        for c in components.iter().filter(|c| c.framework == fw.name) {
            any = true;
            let disabled = filter.as_ref().is_some_and(|f| !f.allows(&c.name));
            let label = if disabled {
                format!("MCA (-) {}", fw.name)
            } else {
                format!("MCA {}", fw.name)
            };
            line(
                out,
                &label,
                &format!(
                    "{} (API v{}, Component v{}, {})",
                    c.name,
                    c.interface_version,
                    c.version,
                    c.path.display()
                ),
            );
            for (name, help) in catalog::map_policies(c) {
                line(
                    out,
                    &format!("MCA {} policy", fw.name),
                    &format!("--map-by {name} ({}) {help}", c.name),
                );
            }
        }
        if !any {
            line(
                out,
                &format!("MCA {}", fw.name),
                "(no components installed)",
            );
        }
    }
}

fn render_failed(mca: &Mca, out: &mut String) {
    let repo = mca.repository();
    let failures = mca.failures();
    if failures.is_empty() && repo.shadowed.is_empty() && repo.ignored.is_empty() {
        line(out, "Failed components", "none");
    }
    for (i, f) in failures.iter().enumerate() {
        // Load failures come first; the others failed in an entry point.
        let how = if i < repo.failures.len() {
            "failed to load"
        } else {
            "failed"
        };
        line(
            out,
            &format!("MCA {}", f.framework),
            &format!(
                "{} ({how}) {}: {}. {}",
                f.component,
                f.path.display(),
                f.reason,
                f.hint
            ),
        );
    }
    for i in &repo.ignored {
        line(out, "Ignored file", &i.message());
    }
    for s in &repo.shadowed {
        line(
            out,
            &format!("MCA {}", s.framework),
            &format!(
                "{} (shadowed) {} is not used: {} was found first",
                s.name,
                s.path.display(),
                s.used.display()
            ),
        );
    }
}

fn render_params(mca: &Mca, view: &View, out: &mut String) {
    let mut last_group: Option<(String, String)> = None;
    for row in view.param_rows(mca) {
        let info = row.info;
        let label = if row.disabled {
            format!("MCA (-) {} {}", info.framework, info.component)
        } else {
            format!("MCA {} {}", info.framework, info.component)
        };
        let group = (info.framework.clone(), info.component.clone());
        if last_group.as_ref() != Some(&group) {
            line(out, &label, SEPARATOR);
            last_group = Some(group);
        }
        let mut attrs = format!(
            "current value: \"{}\", data source: {}, level: {} {}, type: {}",
            row.resolved.text,
            row.resolved.source,
            info.decl.level,
            level_name(info.decl.level),
            type_name(info.decl.ty)
        );
        if info.deprecated() {
            attrs.push_str(", deprecated");
        }
        if info.read_only() {
            attrs.push_str(", read-only");
        }
        if !row.synonyms.is_empty() {
            let names: Vec<String> = row
                .synonyms
                .iter()
                .map(|(n, dep)| {
                    if *dep {
                        format!("{n} (deprecated)")
                    } else {
                        n.to_string()
                    }
                })
                .collect();
            let _ = write!(attrs, ", synonyms: {}", names.join(", "));
        }
        let kind = if info.read_only() {
            "informational"
        } else {
            "parameter"
        };
        line(
            out,
            &label,
            &format!("{kind} \"{}\" ({attrs})", info.full_name),
        );
        let _ = writeln!(out, "{INDENT}{}", info.decl.help);
        if let Some(valid) = catalog::valid_values(&info.decl) {
            let _ = writeln!(out, "{INDENT}Valid values: {valid}");
        }
    }
}
