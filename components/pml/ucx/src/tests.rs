//! Tests of the component's declarations and of its query on this host.
//! The exported table is tested end to end in `tests/session.rs` (its own
//! process, since the state is process-global).

use crate::{Component, UcxParams, DEFAULT_TLS, MODULE};
use oxmpi_framework_pml::module::PmlTransport;
use oxmpi_plugin_api::{testkit, Lifecycle, ParamType, ParamValue, Params, QueryReply};

#[test]
fn parameter_declarations_are_valid_for_the_core() {
    UcxParams::check_declarations().unwrap();
    let list = |s: &str| s.split(',').map(str::to_string).collect::<Vec<_>>();
    assert_eq!(
        UcxParams::default(),
        UcxParams {
            priority: 51,
            tls: list("rc_verbs,ud_verbs,rc_mlx5,dc_mlx5,ud_mlx5,cuda_ipc,rocm_ipc"),
            devices: list("mlx*"),
            keep_truncated: false,
            peer_failure: false,
        }
    );
    for decl in UcxParams::DECLS {
        let full = format!("pml_ucx_{}", decl.name);
        assert_eq!(oxmpi_mca::registry::check_decl(&full, decl), None, "{full}");
    }
    let names: Vec<(&str, ParamType, &str)> = UcxParams::DECLS
        .iter()
        .map(|d| (d.name.as_str(), d.ty, d.default.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            ("priority", ParamType::Int, "51"),
            ("tls", ParamType::List, DEFAULT_TLS),
            ("devices", ParamType::List, "mlx*"),
            ("keep_truncated", ParamType::Bool, "false"),
            ("peer_failure", ParamType::Bool, "false"),
        ]
    );
}

#[test]
fn component_root_exports_a_pml_module_with_its_own_transport() {
    let root = crate::__oxmpi_component_export::component_root();
    assert_eq!(root.framework().as_str(), "pml");
    assert_eq!(root.component().as_str(), "ucx");
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
    assert_eq!(MODULE.transport, PmlTransport::Own);
}

/// The query's answer and the lines it logged, with `params` set.
fn query_with(params: &[(&str, &str)]) -> (QueryReply, Vec<String>) {
    let _lock = testkit::lock();
    for (name, value) in params {
        let items = value.split(',').map(|s| s.into()).collect();
        testkit::set_param(name, ParamValue::List(items));
    }
    let before = testkit::logged_by("pml", "ucx").len();
    let reply = Component::query(&testkit::context("pml", "ucx"));
    for (name, _) in params {
        testkit::clear_param(name);
    }
    let lines = testkit::logged_by("pml", "ucx")[before..]
        .iter()
        .map(|(_, m)| m.clone())
        .collect();
    (reply.expect("the query answers"), lines)
}

#[test]
fn without_a_preferred_transport_the_query_answers_19_and_says_why() {
    // This host has no InfiniBand device: TCP and shared memory only.
    let (reply, lines) = query_with(&[]);
    match reply {
        QueryReply::Usable { priority } => assert_eq!(priority, 19),
        QueryReply::Declined { reason } => panic!("declined: {reason}"),
    }
    let text = lines.join("\n");
    assert!(text.contains("UCX lists the transports"), "{text}");
    assert!(text.contains("self/memory0"), "{text}");
    assert!(text.contains("priority 19"), "{text}");
    assert!(text.contains("pml_ucx_tls (rc_verbs"), "{text}");
}

#[test]
fn a_listed_transport_on_a_listed_device_gives_the_configured_priority() {
    let (reply, lines) = query_with(&[("pml_ucx_tls", "self"), ("pml_ucx_devices", "any")]);
    match reply {
        QueryReply::Usable { priority } => assert_eq!(priority, 51),
        QueryReply::Declined { reason } => panic!("declined: {reason}"),
    }
    let text = lines.join("\n");
    assert!(
        text.contains("self/memory0 match pml_ucx_tls and pml_ucx_devices"),
        "{text}"
    );
}
