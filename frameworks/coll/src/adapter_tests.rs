//! The generated table end to end with a test component: a panic in
//! `run` stops only that communicator's module, a second collective on a
//! communicator while one runs is refused, and `init` and `comm_query`
//! answer their refusals.

use crate::adapter::{Coll, CommInfo, Core, Offer};
use crate::handle::CollHandle;
use crate::module::{CollCall, CollKind, CommDesc, OpSet};
use abi_stable::std_types::{RSlice, RStr};
use oxmpi_plugin_api::{testkit, ComponentContext, ComponentError, Lifecycle, QueryReply, Version};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Barrier;

struct Probe;

/// Whether the next barrier panics; the barrier `run` waits on.
static PANIC_NEXT: AtomicBool = AtomicBool::new(false);
static RENDEZVOUS: Barrier = Barrier::new(2);

impl Lifecycle for Probe {
    fn query(_: &ComponentContext) -> Result<QueryReply, ComponentError> {
        Ok(QueryReply::Usable { priority: 1 })
    }
}

impl Coll for Probe {
    type Comm = ();

    fn init(_: &ComponentContext, _: Core) -> Result<Self, String> {
        Ok(Probe)
    }

    fn comm_query(&self, comm: &CommInfo<'_>) -> Result<Offer<()>, String> {
        if comm.size() == 3 {
            return Err("three is a crowd".into());
        }
        Ok(Offer {
            priority: 5,
            ops: OpSet::NONE.with(CollKind::Barrier).with(CollKind::Bcast),
            comm: (),
        })
    }

    fn run(&self, _: &mut (), call: &CollCall<'_>) -> Result<(), String> {
        match call.kind {
            CollKind::Barrier if PANIC_NEXT.swap(false, Ordering::SeqCst) => panic!("test panic"),
            // Holds the communicator until the other thread has tried.
            CollKind::Bcast => {
                RENDEZVOUS.wait();
                RENDEZVOUS.wait();
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

crate::export_coll_component! {
    coll: Probe,
    lifecycle: Probe,
    component: "probe",
    version: Version::new(1, 0, 0),
    description: "A test component",
    params: &[],
}

fn desc<'a>(members: &'a [u32], name: &'a str) -> CommDesc<'a> {
    CommDesc {
        context: 9,
        rank: 0,
        members: RSlice::from_slice(members),
        name: RStr::from_str(name),
    }
}

#[test]
fn panics_stop_one_module_and_concurrent_calls_are_refused() {
    let _kit = testkit::lock();
    static CORE: crate::testkit::NoServices = crate::testkit::NoServices;
    let handle = CollHandle::new(&MODULE, testkit::context("coll", "probe"));
    assert_eq!(
        handle.comm_query(&desc(&[0, 1], "C")).unwrap_err(),
        "coll probe comm_query: the component is not initialized"
    );
    handle.init(&CORE).unwrap();
    assert_eq!(
        handle.comm_query(&desc(&[0, 1, 2], "T")).unwrap_err(),
        "three is a crowd"
    );
    let a = handle.comm_query(&desc(&[0, 1], "A")).unwrap();
    let b = handle.comm_query(&desc(&[0, 1], "B")).unwrap();
    assert_eq!(
        a.ops,
        OpSet::NONE.with(CollKind::Barrier).with(CollKind::Bcast)
    );
    let barrier = CollCall::new(CollKind::Barrier);
    // SAFETY: live handles; a barrier has no buffers.
    unsafe {
        PANIC_NEXT.store(true, Ordering::SeqCst);
        let err = handle.run(a.module, &barrier).unwrap_err();
        assert!(
            err.starts_with("coll probe barrier: internal error: barrier panicked: "),
            "{err}"
        );
        let err = handle.run(a.module, &barrier).unwrap_err();
        assert!(
            err.starts_with("coll probe barrier: its module for A stopped after an internal error (barrier panicked: "),
            "{err}"
        );
        // The other communicator goes on.
        handle.run(b.module, &barrier).unwrap();
    }
    // A second call on B while a bcast runs on it is refused.
    std::thread::scope(|s| {
        let busy = s.spawn(|| {
            // SAFETY: a live handle; the bcast has no buffers here.
            unsafe { handle.run(b.module, &CollCall::new(CollKind::Bcast)) }
        });
        RENDEZVOUS.wait();
        // SAFETY: as above.
        let err = unsafe { handle.run(b.module, &barrier) }.unwrap_err();
        assert_eq!(
            err,
            "coll probe barrier: another collective is running on B (two threads called collectives on one communicator at once, which MPI does not allow)"
        );
        RENDEZVOUS.wait();
        busy.join().unwrap().unwrap();
    });
    // SAFETY: live handles, no call in progress.
    unsafe {
        handle.comm_release(a.module);
        handle.comm_release(b.module);
    }
    handle.finalize();
}
