//! The handle over modules made by the generated layer
//! ([`__mapper_module!`](crate::__mapper_module)): answers, panics and
//! unreadable input told apart; and over a module laid out as interface 2.0
//! made it, read the old way.

use super::*;
use crate::allocation::{Allocation, AllocationSource, NodeSpec};
use crate::base::{run, Ctx, Placement};
use crate::module::{serve_accepts, serve_map, RmapsModule, RmapsModule_Prefix};
use crate::policy::{parse_map_by, MapBy};
use crate::request::AppRequest;
use crate::topology::Topology;
use crate::Mapper;
use abi_stable::abi_stability::abi_checking::check_layout_compatibility;
use abi_stable::prefix_type::{PrefixRef, WithMetadata};
use abi_stable::std_types::RSlice;
use abi_stable::StableAbi;
use std::sync::atomic::{AtomicBool, Ordering};

#[derive(oxmpi_plugin_api::Params, Clone, Debug, PartialEq, Eq)]
struct Params {
    /// Priority of the test mapper.
    #[param(default = "1", level = Developer(All))]
    priority: i32,
}

/// Maps by slot; panics in `accepts` and `map` while `PANICS` is set.
struct Fickle;

static PANICS: AtomicBool = AtomicBool::new(false);

fn place(ctx: &mut Ctx<'_>, app: usize, nodes: &[usize]) -> Result<Vec<Placement>, MapError> {
    let n = ctx.np_or_slots(app, nodes)?;
    ctx.check_capacity(app, nodes, n)?;
    Ok(ctx.fill(nodes, n, None))
}

impl Mapper for Fickle {
    type Params = Params;
    const NAME: &'static str = "fickle";

    fn accepts(&self, policy: &MapPolicy) -> bool {
        assert!(!PANICS.load(Ordering::Relaxed), "fickle accepts panics");
        policy.map_by == MapBy::Slot
    }

    fn map(&self, req: &MapRequest, _params: &Params) -> Result<JobMap, MapError> {
        assert!(!PANICS.load(Ordering::Relaxed), "fickle map panics");
        run(req, Self::NAME, place)
    }
}

mod fickle {
    crate::__mapper_module!(super::Fickle, super::Params);
}

fn policy(text: &str) -> MapPolicy {
    MapPolicy::from(parse_map_by(text).unwrap())
}

fn request(text: &str, np: u32) -> MapRequest {
    MapRequest {
        allocation: Allocation {
            nodes: vec![NodeSpec {
                name: "a".into(),
                slots: 2,
                max_slots: None,
                slots_given: true,
                topology: None,
            }],
            source: AllocationSource::HostOption,
            sequence: vec!["a".into()],
        },
        apps: vec![AppRequest {
            np: Some(np),
            hosts: None,
        }],
        policy: policy(text),
        rank_by: None,
        default_topology: Topology::default(),
    }
}

/// Serializes the tests that set `PANICS`.
fn lock() -> std::sync::MutexGuard<'static, ()> {
    static L: std::sync::Mutex<()> = std::sync::Mutex::new(());
    L.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn answers_maps_and_refusals() {
    let _l = lock();
    let h = RmapsHandle::new(fickle::MODULE);
    assert!(h.checks_accepts());
    assert!(h.policy_names().is_empty());
    assert_eq!(h.accepts(&policy("slot")), Ok(true));
    assert_eq!(h.accepts(&policy("node")), Ok(false));
    let map = h.map(&request("slot", 2)).unwrap();
    assert_eq!(map.rank_hosts(), ["a", "a"]);
    assert_eq!(map.mapper, "fickle");
    let e = h.map(&request("slot", 3)).unwrap_err();
    assert_eq!(e.kind, MapErrorKind::NotEnoughSlots, "{e}");
    // A policy it declines is refused before its map runs.
    let e = h.map(&request("node", 1)).unwrap_err();
    assert_eq!(e.kind, MapErrorKind::NoMapper, "{e}");
    assert!(
        e.message.contains("the fickle mapper does not map by node"),
        "{e}"
    );
}

#[test]
fn unreadable_input_is_a_bad_request_and_the_old_entry_reads_it_as_no() {
    let _l = lock();
    let h = RmapsHandle::new(fickle::MODULE);
    let e = h.accepts_json("{not json").unwrap_err();
    assert_eq!(e.kind, MapErrorKind::BadRequest, "{e}");
    assert!(
        e.message.starts_with(
            "the fickle mapper could not read the mapping policy it was asked about: "
        ),
        "{e}"
    );
    assert!(!(fickle::MODULE.accepts())(RStr::from_str("{not json")));
    let e = h.map_json("[1, 2").unwrap_err();
    assert_eq!(e.kind, MapErrorKind::BadRequest, "{e}");
    assert!(
        e.message
            .starts_with("the fickle mapper could not read the request: "),
        "{e}"
    );
}

#[test]
fn a_panic_is_a_component_failure_naming_it_not_a_no() {
    let _l = lock();
    let h = RmapsHandle::new(fickle::MODULE);
    PANICS.store(true, Ordering::Relaxed);
    let accepts = h.accepts(&policy("slot"));
    let old = (fickle::MODULE.accepts())(RStr::from_str(
        &serde_json::to_string(&policy("slot")).unwrap(),
    ));
    let mapped = h.map(&request("slot", 1));
    PANICS.store(false, Ordering::Relaxed);
    let e = accepts.unwrap_err();
    assert_eq!(e.kind, MapErrorKind::ComponentFailed, "{e}");
    assert!(
        e.message
            .starts_with("the fickle mapper's accepts panicked: 'fickle accepts panics' at "),
        "{e}"
    );
    assert!(!old, "the 2.0 entry reads a panic as no");
    let e = mapped.unwrap_err();
    assert_eq!(e.kind, MapErrorKind::ComponentFailed, "{e}");
    // The map's own entry: its accepts panicked first, inside map's guard.
    assert!(
        e.message
            .starts_with("the fickle mapper panicked: 'fickle "),
        "{e}"
    );
    // Nothing is poisoned: the next calls work.
    assert_eq!(h.accepts(&policy("slot")), Ok(true));
    assert_eq!(h.map(&request("slot", 1)).unwrap().size(), 1);
}

#[test]
fn an_answer_that_is_not_a_mapping_error_is_a_component_failure() {
    extern "C" fn garbage(_: RStr<'_>) -> RResult<RString, RString> {
        RResult::RErr("not json".into())
    }
    extern "C" fn not_a_map(_: RStr<'_>) -> RResult<RString, RString> {
        RResult::ROk("{\"nodes\": 3}".into())
    }
    extern "C" fn accepts_garbage(_: RStr<'_>) -> RResult<bool, RString> {
        RResult::RErr("\u{1}".into())
    }
    extern "C" fn yes(_: RStr<'_>) -> bool {
        true
    }
    for (map, accepts_checked, what) in [
        (
            garbage as extern "C" fn(RStr<'_>) -> RResult<RString, RString>,
            accepts_garbage as extern "C" fn(RStr<'_>) -> RResult<bool, RString>,
            "an error that is not JSON",
        ),
        (not_a_map, accepts_garbage, "a map that is not a map"),
    ] {
        let table: &'static WithMetadata<RmapsModule> =
            Box::leak(Box::new(WithMetadata::new(RmapsModule {
                accepts: yes,
                map,
                policies: RSlice::from_slice(&[]),
                accepts_checked,
            })));
        let h = RmapsHandle::new(RmapsModuleRef(table.static_as_prefix()));
        let e = h.map(&request("slot", 1)).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::ComponentFailed, "{what}: {e}");
        let e = h.accepts(&policy("slot")).unwrap_err();
        assert_eq!(e.kind, MapErrorKind::ComponentFailed, "{what}: {e}");
        assert!(
            e.message.starts_with(
                "the mapper's accepts failed with an answer that is not a mapping error"
            ),
            "{e}"
        );
    }
}

/// The module as interface 2.0 laid it out: no `accepts_checked`.
// Its accessors are generated; the test reads it through the 2.1 type.
#[allow(dead_code)]
mod v20 {
    use super::*;

    /// `RmapsModule` of interface 2.0 (abi_stable compares type names).
    #[repr(C)]
    #[derive(StableAbi)]
    #[sabi(kind(Prefix(prefix_ref = RmapsModuleRef)))]
    #[sabi(missing_field(option))]
    pub struct RmapsModule {
        pub accepts: extern "C" fn(policy_json: RStr<'_>) -> bool,
        #[sabi(last_prefix_field)]
        pub map: extern "C" fn(request_json: RStr<'_>) -> RResult<RString, RString>,
        pub policies: RSlice<'static, PolicyName>,
    }

    extern "C" fn accepts(policy_json: RStr<'_>) -> bool {
        serve_accepts(&Fickle, policy_json)
    }

    extern "C" fn map(request_json: RStr<'_>) -> RResult<RString, RString> {
        serve_map(&Fickle, &Params::default(), request_json)
    }

    pub const MODULE: &WithMetadata<RmapsModule> = &WithMetadata::new(RmapsModule {
        accepts,
        map,
        policies: RSlice::from_slice(&[]),
    });
}

#[test]
fn a_module_of_interface_2_0_loads_and_is_read_the_old_way() {
    let _l = lock();
    // abi_stable's check takes the expected layout first and lets the
    // found one have more appended fields, not fewer: a 2.1 reader checks
    // a 2.0 module the other way round (the module's layout is a prefix of
    // the reader's), which is what the core does for an older minor.
    let current = <RmapsModuleRef as StableAbi>::LAYOUT;
    let old_layout = <v20::RmapsModuleRef as StableAbi>::LAYOUT;
    assert!(check_layout_compatibility(current, old_layout).is_err());
    check_layout_compatibility(old_layout, current).expect("the 2.1 module extends the 2.0 one");
    check_layout_compatibility(current, current).expect("2.1 against itself, afterwards");
    check_layout_compatibility(old_layout, old_layout).expect("2.0 against itself, afterwards");
    let old: PrefixRef<v20::RmapsModule_Prefix> = v20::MODULE.static_as_prefix();
    // SAFETY: the two prefix types are `repr(C)` with the same fields up to
    // `policies` (the layout check above), which is all a 2.1 reader
    // touches of a module whose field accessibility (in the metadata
    // `v20::MODULE` carries) ends there, exactly as with a 2.0 library loaded by the
    // core.
    let module = RmapsModuleRef(unsafe { old.cast::<RmapsModule_Prefix>() });
    let h = RmapsHandle::new(module);
    assert!(!h.checks_accepts());
    assert!(h.policy_names().is_empty());
    assert_eq!(h.accepts(&policy("slot")), Ok(true));
    assert_eq!(h.accepts(&policy("node")), Ok(false));
    // Unreadable input and a panic read as "no", as they did.
    assert_eq!(h.accepts_json("{not json"), Ok(false));
    PANICS.store(true, Ordering::Relaxed);
    let answer = h.accepts(&policy("slot"));
    PANICS.store(false, Ordering::Relaxed);
    assert_eq!(answer, Ok(false));
    assert_eq!(h.map(&request("slot", 2)).unwrap().size(), 2);
}
