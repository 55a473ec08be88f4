//! Choosing what moves messages: the pml, and what it runs over (the btls,
//! or an MTL).
//!
//! The pml framework is queried first. A pml that drives an MTL is usable
//! only when an MTL is: the mtl framework is opened (only then) and its
//! best component selected; without one, such pmls are set aside with the
//! MTLs' reasons. Then the pml with the highest priority is chosen, and
//! the btls are opened only when it runs over them.

use super::{Error, ErrorClass};
use abi_stable::std_types::RStr;
use oxmpi_framework_btl::module::BtlComponentModule;
use oxmpi_framework_mtl::module::{MtlCandidate, MtlModule};
use oxmpi_framework_pml::module::{BtlCandidate, PmlModule, PmlTransport};
use oxmpi_mca::framework::OpenFramework;
use oxmpi_mca::mca::Mca;

fn init_error(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::Init, message)
}

/// The pml chosen and what it runs over.
pub(super) struct Chosen {
    /// The pml's name.
    pub(super) pml_name: String,
    /// Its table and context names.
    pub(super) pml: (&'static PmlModule, RStr<'static>, RStr<'static>),
    /// The btls (for a pml over btls; empty otherwise).
    pub(super) btls: Vec<BtlCandidate>,
    /// The MTL (for a pml over one).
    pub(super) mtl: Option<MtlCandidate>,
    /// Why `self` is not among the btls (hint for sends to oneself).
    pub(super) self_hint: Option<String>,
    /// Installed btls not in use, and why.
    pub(super) unused_btls: Option<String>,
    /// The open frameworks, in the order they close (the pml first).
    pub(super) frameworks: Vec<OpenFramework<'static>>,
}

/// Finds the module table of a loaded component.
pub(super) fn module_of<T: abi_stable::StableAbi>(
    mca: &'static Mca,
    framework: &str,
    name: &str,
) -> Result<(&'static T, RStr<'static>, RStr<'static>), String> {
    let component = mca
        .repository()
        .components
        .iter()
        .find(|c| c.framework == framework && c.name == name)
        .ok_or_else(|| format!("the {framework} component {name} is not loaded"))?;
    let module = component.module::<T>()?;
    Ok((
        module,
        component.root.framework(),
        component.root.component(),
    ))
}

/// Chooses the pml and opens what it runs over.
pub(super) fn choose(mca: &'static Mca, program: &str) -> Result<Chosen, Error> {
    let mut pml_fw: OpenFramework<'static> = mca
        .open_framework("pml")
        .map_err(|e| init_error(e.to_string()))?;
    let usable: Vec<String> = pml_fw
        .query()
        .iter()
        .filter(|c| c.priority.is_some())
        .map(|c| c.name.clone())
        .collect();
    let over_mtl: Vec<String> = usable
        .into_iter()
        .filter(|name| {
            module_of::<PmlModule>(mca, "pml", name)
                .is_ok_and(|(m, _, _)| m.transport == PmlTransport::Mtl)
        })
        .collect();
    let mut mtl = None;
    if !over_mtl.is_empty() {
        match select_mtl(mca) {
            Ok(found) => mtl = Some(found),
            Err(why) => {
                for name in &over_mtl {
                    pml_fw.decline(name, &why);
                }
            }
        }
    }
    let chosen = pml_fw.select().map_err(|e| init_error(e.to_string()))?;
    let pml_name = chosen
        .first()
        .map(|s| s.name.clone())
        .ok_or_else(|| init_error("no pml component is usable"))?;
    mca.print_diagnostics();
    let pml = module_of::<PmlModule>(mca, "pml", &pml_name).map_err(init_error)?;
    let mut frameworks = vec![pml_fw];
    let mut out = Chosen {
        pml_name,
        pml,
        btls: Vec::new(),
        mtl: None,
        self_hint: None,
        unused_btls: None,
        frameworks: Vec::new(),
    };
    match pml.0.transport {
        PmlTransport::Btls => {
            let btl_fw = open_btls(mca, program, &mut out)?;
            frameworks.push(btl_fw);
        }
        PmlTransport::Mtl => {
            // Present: a pml over an MTL is passed over without one.
            let (candidate, fw) = mtl.ok_or_else(|| {
                init_error(format!("the {} pml has no MTL to run over", out.pml_name))
            })?;
            out.mtl = Some(candidate);
            frameworks.push(fw);
        }
        PmlTransport::Own => {}
    }
    out.frameworks = frameworks;
    Ok(out)
}

/// Opens the mtl framework and selects its best component; `Err` is why
/// none is usable (the framework's sentence with every component's
/// reason).
fn select_mtl(mca: &'static Mca) -> Result<(MtlCandidate, OpenFramework<'static>), String> {
    let mut fw: OpenFramework<'static> = mca.open_framework("mtl").map_err(|e| e.to_string())?;
    let selected = fw.select().map_err(|e| e.to_string())?;
    mca.print_diagnostics();
    let name = selected
        .first()
        .map(|s| s.name.clone())
        .ok_or_else(|| "no mtl component is usable".to_string())?;
    let (module, framework, component) = module_of::<MtlModule>(mca, "mtl", &name)?;
    Ok((
        MtlCandidate {
            name: component,
            module,
            context: oxmpi_mca::services::context(framework, component),
        },
        fw,
    ))
}

/// Opens the btl framework and selects every usable btl for a pml over
/// btls; a btl the user named that cannot run is an error.
fn open_btls(
    mca: &'static Mca,
    program: &str,
    out: &mut Chosen,
) -> Result<OpenFramework<'static>, Error> {
    let mut btl_fw: OpenFramework<'static> = mca
        .open_framework("btl")
        .map_err(|e| init_error(e.to_string()))?;
    let selected = btl_fw.select().map_err(|e| init_error(e.to_string()))?;
    let mut btl_names = Vec::new();
    for s in &selected {
        match module_of::<BtlComponentModule>(mca, "btl", &s.name) {
            Ok((module, fw, comp)) => {
                out.btls.push(BtlCandidate {
                    name: comp,
                    module,
                    context: oxmpi_mca::services::context(fw, comp),
                });
                btl_names.push(s.name.clone());
            }
            Err(e) => eprintln!("{program}: warning: {e}"),
        }
    }
    // A btl the user asked for by name must run: say why it does not
    // instead of failing later with "unreachable".
    if let Some(oxmpi_mca::selection::Filter::Include(wanted)) = mca.filter("btl") {
        let missing: Vec<String> = wanted
            .iter()
            .filter(|w| !btl_names.contains(w))
            .map(|w| {
                let why = btl_fw
                    .reasons()
                    .iter()
                    .find(|(n, _)| n == w)
                    .map(|(_, r)| r.clone())
                    .unwrap_or_else(|| "it did not load or open (see the warnings above)".into());
                format!("{w}: {why}")
            })
            .collect();
        if !missing.is_empty() {
            let source = mca
                .value("btl")
                .map(|r| r.source.to_string())
                .unwrap_or_default();
            return Err(init_error(format!(
                "btl {} asked for by btl = \"{}\" ({source}) cannot be used: {}",
                if missing.len() == 1 {
                    "component"
                } else {
                    "components"
                },
                wanted.join(","),
                missing.join("; ")
            )));
        }
    }
    out.self_hint = self_hint(mca, &btl_names);
    // Btls that are installed but not in use here, and why (those the user
    // excluded aside): part of every "cannot reach" error, so a user sees
    // why tcp (say) was not tried.
    let unused: Vec<String> = btl_fw
        .reasons()
        .iter()
        .filter(|(n, r)| !btl_names.contains(n) && !r.starts_with("excluded"))
        .map(|(n, r)| format!("{n} ({r})"))
        .collect();
    if !unused.is_empty() {
        out.unused_btls = Some(format!(
            "Btls not in use in this process: {}.",
            unused.join("; ")
        ));
    }
    // Components that failed to open or answer their query (mpirun never
    // opens these frameworks, so only the rank can tell).
    mca.print_diagnostics();
    Ok(btl_fw)
}

/// Why `self` is not among the btls, as a hint for send-to-self failures.
fn self_hint(mca: &Mca, selected: &[String]) -> Option<String> {
    if selected.iter().any(|n| n == "self") {
        return None;
    }
    let installed = mca
        .repository()
        .components
        .iter()
        .any(|c| c.framework == "btl" && c.name == "self");
    Some(if !installed {
        "The self btl, which carries a process's messages to itself, is not installed.".to_string()
    } else {
        let why = match mca.value("btl") {
            Some(r) => format!(" (btl = \"{}\", from {})", r.text, r.source),
            None => String::new(),
        };
        format!(
            "The self btl, which carries a process's messages to itself, is not in use{why}; \
             add it, e.g. --mca btl self,tcp."
        )
    })
}
