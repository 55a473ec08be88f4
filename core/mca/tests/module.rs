//! The layout-checked framework module handoff.

mod common;

use common::{Fixture, World};

/// Same field name, another signature: a different layout.
#[repr(C)]
#[derive(abi_stable::StableAbi)]
struct OtherModule {
    answer: extern "C" fn(u8) -> u64,
}

#[test]
fn module_of_the_right_layout_is_handed_over_and_another_is_refused() {
    let world = World::new();
    world.install(Fixture::Good, "libmca_btl_fixture.so");
    world.install(Fixture::Twin, "libmca_btl_twin.so");
    let (mca, _) = world.init();
    let repo = mca.repository();
    let fixture = repo
        .components
        .iter()
        .find(|c| c.name == "fixture")
        .unwrap();
    let module = fixture
        .module::<oxmpi_fixture_good::FixtureModule>()
        .expect("same layout");
    assert_eq!((module.answer)(), 42);

    let err = fixture
        .module::<OtherModule>()
        .err()
        .expect("another layout is refused");
    assert!(err.contains("has a btl module of another layout"), "{err}");
    assert!(err.contains("libmca_btl_fixture.so"), "{err}");

    let twin = repo.components.iter().find(|c| c.name == "twin").unwrap();
    let err = twin
        .module::<oxmpi_fixture_good::FixtureModule>()
        .err()
        .expect("twin has no module");
    assert!(err.contains("provides no btl module"), "{err}");
}
