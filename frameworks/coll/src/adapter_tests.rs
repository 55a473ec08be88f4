//! The generated table end to end with a test component: a panic in
//! `run` stops only that communicator's module, collectives on two
//! communicators run at once from two threads, and `init` and `comm_query`
//! answer their refusals; a call passed on says so; a started operation
//! is polled to its end and released, and one that panics fails alone.

use crate::adapter::{Coll, CommInfo, Core, Offer, Operation, Served};
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
            ops: OpSet::NONE
                .with(CollKind::Barrier)
                .with(CollKind::Bcast)
                .with(CollKind::Gather),
            nb_ops: OpSet::NONE.with(CollKind::Barrier),
            comm: (),
        })
    }

    fn run(&self, _: &mut (), call: &CollCall<'_>) -> Result<Served, String> {
        match call.kind {
            CollKind::Barrier if PANIC_NEXT.swap(false, Ordering::SeqCst) => panic!("test panic"),
            // Holds the communicator until the other thread has tried.
            CollKind::Bcast => {
                RENDEZVOUS.wait();
                RENDEZVOUS.wait();
                Ok(Served::Done)
            }
            CollKind::Gather => Ok(Served::PassedOn),
            _ => Ok(Served::Done),
        }
    }

    /// A barrier that is pending for `root` polls (then done), or panics
    /// at its second poll with `root` 99.
    fn start(&self, _: &mut (), call: &CollCall<'_>, tag: i32) -> Result<Operation, String> {
        assert_eq!(tag, -70);
        if call.kind != CollKind::Barrier {
            return Err(format!(
                "probe starts barriers only, not {}",
                call.kind.name()
            ));
        }
        let polls = call.root;
        let future = async move {
            for i in 0..polls {
                assert!(!(polls == 99 && i == 1), "poll panic");
                std::future::poll_fn(|cx| {
                    // Pending once, then ready.
                    static FLIP: AtomicBool = AtomicBool::new(false);
                    if FLIP.swap(false, Ordering::SeqCst) {
                        std::task::Poll::Ready(())
                    } else {
                        FLIP.store(true, Ordering::SeqCst);
                        cx.waker().wake_by_ref();
                        std::task::Poll::Pending
                    }
                })
                .await;
            }
            Ok(())
        };
        // SAFETY: the future holds only a count.
        Ok(unsafe { Operation::new(future) })
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
fn panics_stop_one_module_and_two_communicators_run_at_once() {
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
        OpSet::NONE
            .with(CollKind::Barrier)
            .with(CollKind::Bcast)
            .with(CollKind::Gather)
    );
    assert_eq!(a.nb_ops, OpSet::NONE.with(CollKind::Barrier));
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
        assert!(handle.run(b.module, &barrier).unwrap());
    }
    // A barrier on D runs while a bcast on B is in progress in another
    // thread.
    let d = handle.comm_query(&desc(&[0, 1], "D")).unwrap();
    std::thread::scope(|s| {
        let holding = s.spawn(|| {
            // SAFETY: a live handle; the bcast has no buffers here.
            unsafe { handle.run(b.module, &CollCall::new(CollKind::Bcast)) }
        });
        RENDEZVOUS.wait();
        // SAFETY: a live handle with no call in progress.
        assert_eq!(unsafe { handle.run(d.module, &barrier) }, Ok(true));
        RENDEZVOUS.wait();
        assert_eq!(holding.join().unwrap(), Ok(true));
    });
    // SAFETY: live handles, no call in progress.
    unsafe {
        // Passed on.
        assert_eq!(
            handle.run(b.module, &CollCall::new(CollKind::Gather)),
            Ok(false)
        );
        // Started: pending for three polls, then done (and released).
        let mut nb = CollCall::new(CollKind::Barrier);
        nb.root = 3;
        let op = handle.start(b.module, &nb, -70).unwrap();
        assert_eq!(
            (0..3).map(|_| handle.poll(op)).collect::<Vec<_>>(),
            vec![None, None, None]
        );
        assert_eq!(handle.poll(op), Some(Ok(())));
        // One that panics fails alone; the module goes on.
        nb.root = 99;
        let op = handle.start(b.module, &nb, -70).unwrap();
        assert_eq!(handle.poll(op), None);
        let err = handle.poll(op).unwrap().unwrap_err();
        assert!(
            err.starts_with("coll probe barrier: internal error: non-blocking barrier panicked: "),
            "{err}"
        );
        handle.run(b.module, &barrier).unwrap();
        // A refusal to start reaches the caller.
        assert_eq!(
            handle
                .start(b.module, &CollCall::new(CollKind::Bcast), -70)
                .unwrap_err(),
            "probe starts barriers only, not bcast"
        );
        handle.comm_release(a.module);
        handle.comm_release(b.module);
        handle.comm_release(d.module);
    }
    handle.finalize();
}
