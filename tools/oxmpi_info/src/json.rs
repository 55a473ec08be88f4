//! `--json`: the same information as one JSON object on stdout.

use crate::catalog::{self, View};
use oxmpi_mca::levels::level_name;
use oxmpi_mca::repository::IGNORED_REASON;
use oxmpi_mca::value::type_name;
use oxmpi_mca::Mca;
use oxmpi_plugin_api::SelectionKind;
use serde_json::{json, Map, Value};

/// Renders the view: `version`, `plugin_abi`, and as requested `paths`,
/// `frameworks` (with their components), `failed`, `shadowed`, `ignored`,
/// `parameters`.
pub fn render(mca: &Mca, view: &View) -> String {
    let mut root = Map::new();
    root.insert("version".into(), json!(oxmpi_mca::VERSION));
    root.insert("plugin_abi".into(), json!(oxmpi_plugin_api::ABI_VERSION));
    if view.version_only {
        return finish(root);
    }
    if let Some(which) = &view.paths {
        let mut paths = Map::new();
        for name in catalog::path_names(which) {
            paths.insert(name.into(), json!(catalog::path_value(mca, name)));
        }
        root.insert("paths".into(), Value::Object(paths));
    }
    if view.components {
        let components = catalog::components(mca);
        let frameworks: Vec<Value> = mca
            .frameworks()
            .iter()
            .map(|fw| {
                let filter = mca.filter(fw.name);
                let list: Vec<Value> = components
                    .iter()
                    .filter(|c| c.framework == fw.name)
                    .map(|c| {
                        let mut v = json!({
                            "name": c.name,
                            "version": c.version.to_string(),
                            "interface_version": c.interface_version.to_string(),
                            "path": c.path.display().to_string(),
                            "description": c.description,
                            "disabled": filter.as_ref().is_some_and(|f| !f.allows(&c.name)),
                        });
                        if c.framework == "rmaps" {
                            let policies: Vec<Value> = catalog::map_policies(c)
                                .into_iter()
                                .map(|(name, help)| json!({ "name": name, "help": help }))
                                .collect();
                            v["policies"] = Value::Array(policies);
                        }
                        v
                    })
                    .collect();
                json!({
                    "name": fw.name,
                    "description": fw.description,
                    "interface_version": fw.interface_version.to_string(),
                    "selection": match fw.selection { SelectionKind::Single => "single", SelectionKind::Multi => "multi" },
                    "components": list,
                })
            })
            .collect();
        root.insert("frameworks".into(), Value::Array(frameworks));
    }
    if view.failed {
        let repo = mca.repository();
        let failed: Vec<Value> = mca
            .failures()
            .iter()
            .map(|f| {
                json!({
                    "path": f.path.display().to_string(),
                    "framework": f.framework,
                    "component": f.component,
                    "reason": f.reason,
                    "hint": f.hint,
                })
            })
            .collect();
        let shadowed: Vec<Value> = repo
            .shadowed
            .iter()
            .map(|s| {
                json!({
                    "framework": s.framework,
                    "component": s.name,
                    "path": s.path.display().to_string(),
                    "used": s.used.display().to_string(),
                })
            })
            .collect();
        root.insert("failed".into(), Value::Array(failed));
        root.insert("shadowed".into(), Value::Array(shadowed));
        let ignored: Vec<Value> = repo
            .ignored
            .iter()
            .map(|i| json!({ "path": i.path.display().to_string(), "reason": IGNORED_REASON }))
            .collect();
        root.insert("ignored".into(), Value::Array(ignored));
    }
    if view.params.is_some() {
        let params: Vec<Value> = view
            .param_rows(mca)
            .iter()
            .map(|row| {
                let d = &row.info.decl;
                json!({
                    "name": row.info.full_name,
                    "framework": row.info.framework,
                    "component": row.info.component,
                    "value": row.resolved.text,
                    "source": row.resolved.source.to_string(),
                    "source_kind": row.resolved.source.kind(),
                    "level": d.level,
                    "level_name": level_name(d.level),
                    "type": type_name(d.ty),
                    "default": d.default.as_str(),
                    "help": d.help.as_str(),
                    "enumerators": d.enum_values.iter().map(|e| json!({"value": e.value, "name": e.name.as_str()})).collect::<Vec<_>>(),
                    "range": d.range.into_option().map(|r| json!({"min": r.min, "max": r.max})),
                    "synonyms": row.synonyms.iter().map(|(n, dep)| json!({"name": n, "deprecated": dep})).collect::<Vec<_>>(),
                    "deprecated": row.info.deprecated(),
                    "read_only": row.info.read_only(),
                    "disabled": row.disabled,
                })
            })
            .collect();
        root.insert("parameters".into(), Value::Array(params));
    }
    finish(root)
}

fn finish(root: Map<String, Value>) -> String {
    let mut text = serde_json::to_string_pretty(&Value::Object(root)).unwrap_or_default();
    text.push('\n');
    text
}
