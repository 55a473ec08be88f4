//! The layout-checked framework module handoff, at use time
//! (`LoadedComponent::module`) and at load time (the layouts a program
//! hands the core in `McaInputs::module_layouts`).

mod common;

use common::{Fixture, World};
use oxmpi_framework_btl::module::BtlComponentModule;
use oxmpi_mca::repository::ModuleLayout;
use oxmpi_mca::Severity;

#[test]
fn module_of_the_right_layout_is_handed_over_and_another_is_refused() {
    let world = World::new();
    let odd = world.install(Fixture::WrongModule, "libmca_btl_oddmodule.so");
    world.install(Fixture::Twin, "libmca_btl_twin.so");
    // No layout handed in: the library loads, and its module is checked
    // when it is used.
    let (mca, d) = world.init();
    assert!(d.is_empty(), "{d}");
    let repo = mca.repository();
    let component = repo
        .components
        .iter()
        .find(|c| c.name == "oddmodule")
        .unwrap();
    let module = component
        .module::<oxmpi_fixture_wrong_module::BtlComponentModule>()
        .expect("same layout");
    assert_eq!((module.answer)(), 42);

    let err = component
        .module::<BtlComponentModule>()
        .err()
        .expect("another layout is refused");
    assert!(err.contains("has a btl module of another layout"), "{err}");
    assert!(err.contains(&odd.display().to_string()), "{err}");

    let twin = repo.components.iter().find(|c| c.name == "twin").unwrap();
    let err = twin
        .module::<BtlComponentModule>()
        .err()
        .expect("twin has no module");
    assert!(err.contains("provides no btl module"), "{err}");
}

#[test]
fn module_of_another_layout_is_refused_at_load_time() {
    let mut world = World::new();
    let odd = world.install(Fixture::WrongModule, "libmca_btl_oddmodule.so");
    world.install(Fixture::Twin, "libmca_btl_twin.so");
    world.module_layouts = vec![ModuleLayout::of::<BtlComponentModule>("btl")];
    let (mca, d) = world.init();
    let names: Vec<&str> = mca
        .repository()
        .components
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    // A component with no module table is not refused at load time.
    assert_eq!(names, ["twin"]);
    let failure = mca
        .failures()
        .into_iter()
        .find(|f| f.path == odd)
        .expect("oddmodule is listed as failed");
    assert!(
        failure
            .reason
            .starts_with("its btl module table has another layout than this oxmpi's ("),
        "{}",
        failure.reason
    );
    assert!(failure.detail.is_some());
    let warning = d.expect_one(Severity::Warning, &[&odd.display().to_string()]);
    assert!(
        warning.starts_with(&format!(
            "skipped component library {} (btl component oddmodule): its btl module table has another layout",
            odd.display()
        )),
        "{warning}"
    );
    assert!(
        warning.ends_with("or remove it from the component path."),
        "{warning}"
    );

    // A layout for another framework does not apply to btl components.
    let mut other = World::new();
    other.install(Fixture::WrongModule, "libmca_btl_oddmodule.so");
    other.module_layouts = vec![ModuleLayout::of::<BtlComponentModule>("pml")];
    let (mca, d) = other.init();
    assert!(d.is_empty(), "{d}");
    assert_eq!(mca.repository().components.len(), 1);
}
