//! Tests of the engine over an in-memory network ([`fake`]), and of the
//! component's declarations. The exported table (the pml adapter over
//! [`Ob1`](crate::Ob1)) is tested in `tests/abi.rs` (its own process,
//! since the state is process-global).

mod alloc;
mod armed;
mod data;
mod fake;
mod immediate;
mod light;
mod routing;
mod semantics;

use oxmpi_plugin_api::{ParamType, Params};

use crate::{Ob1Params, MODULE};

#[test]
fn parameter_declarations_are_valid_for_the_core() {
    Ob1Params::check_declarations().unwrap();
    assert_eq!(
        Ob1Params::default(),
        Ob1Params {
            priority: 20,
            send_pipeline_depth: 8,
            use_rdma: true,
        }
    );
    for decl in Ob1Params::DECLS {
        let full = format!("pml_ob1_{}", decl.name);
        assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None, "{full}");
    }
    let names: Vec<(&str, ParamType, &str)> = Ob1Params::DECLS
        .iter()
        .map(|d| (d.name.as_str(), d.ty, d.default.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("priority", ParamType::Int, "20"),
            ("send_pipeline_depth", ParamType::Int, "8"),
            ("use_rdma", ParamType::Bool, "true"),
        ]
    );
}

#[test]
fn component_root_exports_the_pml_module() {
    let root = crate::__oxmpi_component_export::component_root();
    assert_eq!(root.framework().as_str(), "pml");
    assert_eq!(root.component().as_str(), "ob1");
    assert_eq!(
        root.interface_version(),
        oxmpi_framework_pml::INTERFACE_VERSION
    );
    let table = root.module().expect("module field").unwrap();
    abi_stable::abi_stability::abi_checking::check_layout_compatibility(
        <oxmpi_framework_pml::module::PmlModule as abi_stable::StableAbi>::LAYOUT,
        table.layout,
    )
    .expect("the exported table has the pml module layout");
    assert!(std::ptr::eq(
        table.table,
        &MODULE as *const _ as *const std::ffi::c_void
    ));
}
