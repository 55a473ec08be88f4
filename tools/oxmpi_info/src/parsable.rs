//! `--parsable`: one `key:value` line each, in the format of
//! `ompi_info --parsable`, so that `grep NAME:value | cut -d: -f7` works.
//! A value containing `:` is wrapped in double quotes with `"` escaped.

use crate::catalog::{self, View};
use oxmpi_mca::value::type_name;
use oxmpi_mca::Mca;
use oxmpi_plugin_api::SelectionKind;
use std::fmt::Write as _;

/// Quotes a value that contains `:`.
pub fn quote(value: &str) -> String {
    if value.contains(':') {
        format!("\"{}\"", value.replace('"', "\\\""))
    } else {
        value.to_string()
    }
}

fn kv(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "{key}:{}", quote(value));
}

/// Renders the view.
pub fn render(mca: &Mca, view: &View) -> String {
    let mut out = String::new();
    if view.version_only || view.header {
        kv(&mut out, "oxmpi:version:full", oxmpi_mca::VERSION);
        kv(
            &mut out,
            "oxmpi:version:plugin_abi",
            oxmpi_plugin_api::ABI_VERSION,
        );
    }
    if view.version_only {
        return out;
    }
    if let Some(which) = &view.paths {
        for name in catalog::path_names(which) {
            kv(
                &mut out,
                &format!("path:{name}"),
                &catalog::path_value(mca, name),
            );
        }
    }
    if view.components {
        for fw in mca.frameworks() {
            let kind = match fw.selection {
                SelectionKind::Single => "single",
                SelectionKind::Multi => "multi",
            };
            kv(
                &mut out,
                &format!("framework:{}:version:api", fw.name),
                &fw.interface_version.to_string(),
            );
            kv(&mut out, &format!("framework:{}:selection", fw.name), kind);
        }
        for c in catalog::components(mca) {
            let key = format!("mca:{}:{}", c.framework, c.name);
            let disabled = mca.filter(&c.framework).is_some_and(|f| !f.allows(&c.name));
            kv(
                &mut out,
                &format!("{key}:version:api"),
                &c.interface_version.to_string(),
            );
            kv(
                &mut out,
                &format!("{key}:version:component"),
                &c.version.to_string(),
            );
            kv(
                &mut out,
                &format!("{key}:path"),
                &c.path.display().to_string(),
            );
            kv(
                &mut out,
                &format!("{key}:disabled"),
                if disabled { "true" } else { "false" },
            );
            for (name, help) in catalog::map_policies(c) {
                kv(&mut out, &format!("{key}:policy:{name}"), help);
            }
        }
    }
    if view.failed {
        for f in &mca.failures() {
            kv(
                &mut out,
                &format!("mca:{}:{}:failed", f.framework, f.component),
                &format!("{}: {}. {}", f.path.display(), f.reason, f.hint),
            );
        }
        for s in &mca.repository().shadowed {
            kv(
                &mut out,
                &format!("mca:{}:{}:shadowed", s.framework, s.name),
                &s.path.display().to_string(),
            );
        }
        for i in &mca.repository().ignored {
            kv(&mut out, "mca:ignored", &i.path.display().to_string());
        }
    }
    for row in view.param_rows(mca) {
        let info = row.info;
        let key = format!(
            "mca:{}:{}:param:{}",
            info.framework, info.component, info.full_name
        );
        kv(&mut out, &format!("{key}:value"), &row.resolved.text);
        kv(
            &mut out,
            &format!("{key}:source"),
            &row.resolved.source.to_string(),
        );
        kv(
            &mut out,
            &format!("{key}:status"),
            if info.read_only() {
                "read-only"
            } else {
                "writeable"
            },
        );
        kv(
            &mut out,
            &format!("{key}:level"),
            &info.decl.level.to_string(),
        );
        kv(&mut out, &format!("{key}:help"), &info.decl.help);
        for e in info.decl.enum_values.iter() {
            kv(
                &mut out,
                &format!("{key}:enumerator:value:{}", e.value),
                &e.name,
            );
        }
        if let Some(r) = info.decl.range.into_option() {
            kv(
                &mut out,
                &format!("{key}:range"),
                &format!("{} - {}", r.min, r.max),
            );
        }
        kv(
            &mut out,
            &format!("{key}:deprecated"),
            if info.deprecated() { "yes" } else { "no" },
        );
        kv(&mut out, &format!("{key}:type"), type_name(info.decl.ty));
        for (name, deprecated) in &row.synonyms {
            kv(&mut out, &format!("{key}:synonym:name"), name);
            if *deprecated {
                kv(&mut out, &format!("{key}:synonym:{name}:deprecated"), "yes");
            }
        }
        kv(
            &mut out,
            &format!("{key}:disabled"),
            if row.disabled { "true" } else { "false" },
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::quote;

    #[test]
    fn quoting() {
        assert_eq!(quote("20"), "20");
        assert_eq!(quote("file (/a/b.conf:3)"), "\"file (/a/b.conf:3)\"");
        assert_eq!(quote("a:\"b\""), "\"a:\\\"b\\\"\"");
    }
}
