//! Both sides of [`MpiServices`]: the MPI layer implements [`MpiCore`]
//! and hands the component the table [`core_table`] makes; a component
//! calls it through [`Core`].

use crate::{sentence_or, ModexLookup, MpiServices, ProgressFn};
use abi_stable::std_types::{RSlice, RStr, RString, RVec};
use std::ffi::c_void;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What the MPI layer offers a pml (see [`MpiServices`]). Called under the MPI
/// layer's lock, from the pml's `init` and entry points.
pub trait MpiCore: Sync + 'static {
    /// Publishes this process's card under `name` (before the fence).
    ///
    /// # Errors
    ///
    /// Why it cannot be published (one sentence).
    fn modex_put(&self, name: &str, card: &[u8]) -> Result<(), String>;

    /// `rank`'s card published under `name`; `Ok(None)` when it published
    /// none.
    ///
    /// # Errors
    ///
    /// Why the lookup failed (one sentence).
    fn modex_get(&self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String>;

    /// Adds a progress function to the progress engine.
    fn register_progress(&self, poll: ProgressFn);
}

/// The sentence for a panic inside the MPI layer's code.
#[cold]
fn core_panicked(what: &str) -> String {
    format!("internal error in the MPI layer's {what} (it panicked; see the message above)")
}

/// The `ctx` of a generated [`MpiServices`] back to the MPI layer's value.
///
/// # Safety
///
/// `ctx` is the `&'static C` that [`core_table`] stored.
unsafe fn core_of<C: MpiCore>(ctx: *mut c_void) -> &'static C {
    // SAFETY: the caller's promise: a `&'static C` cast to a pointer.
    unsafe { &*(ctx as *const C) }
}

unsafe extern "C" fn core_modex_put<C: MpiCore>(
    ctx: *mut c_void,
    name: RStr<'_>,
    card: RSlice<'_, u8>,
    error: &mut RString,
) -> bool {
    // SAFETY: the pml passes back the context of the table `core_table`
    // made.
    let core = unsafe { core_of::<C>(ctx) };
    match catch_unwind(AssertUnwindSafe(|| {
        core.modex_put(name.as_str(), card.as_slice())
    })) {
        Ok(Ok(())) => true,
        Ok(Err(why)) => {
            *error = why.into();
            false
        }
        Err(_) => {
            *error = core_panicked("modex_put").into();
            false
        }
    }
}

unsafe extern "C" fn core_modex_get<C: MpiCore>(
    ctx: *mut c_void,
    rank: u32,
    name: RStr<'_>,
    card: &mut RVec<u8>,
    error: &mut RString,
) -> ModexLookup {
    // SAFETY: as in `core_modex_put`.
    let core = unsafe { core_of::<C>(ctx) };
    match catch_unwind(AssertUnwindSafe(|| core.modex_get(rank, name.as_str()))) {
        Ok(Ok(Some(bytes))) => {
            *card = bytes.into();
            ModexLookup::Found
        }
        Ok(Ok(None)) => ModexLookup::Missing,
        Ok(Err(why)) => {
            *error = why.into();
            ModexLookup::Failed
        }
        Err(_) => {
            *error = core_panicked("modex_get").into();
            ModexLookup::Failed
        }
    }
}

unsafe extern "C" fn core_register_progress<C: MpiCore>(ctx: *mut c_void, poll: ProgressFn) {
    // SAFETY: as in `core_modex_put`.
    let core = unsafe { core_of::<C>(ctx) };
    // A panic here has no failure value to answer; the progress function
    // is then not registered, which the pml cannot tell. The MPI layer's
    // implementation only pushes onto a list.
    let _ = catch_unwind(AssertUnwindSafe(|| core.register_progress(poll)));
}

/// The [`MpiServices`] table over `core` (what the handle's `init` hands the
/// pml).
pub fn core_table<C: MpiCore>(core: &'static C) -> MpiServices {
    MpiServices {
        ctx: core as *const C as *mut c_void,
        modex_put: core_modex_put::<C>,
        modex_get: core_modex_get::<C>,
        register_progress: core_register_progress::<C>,
    }
}

/// What the MPI layer offers the pml during and after `init`: the modex
/// and the progress engine. Copied freely; valid for the process's life.
#[derive(Clone, Copy)]
pub struct Core {
    raw: MpiServices,
}

// SAFETY: the MPI layer's functions and context pointer serve whichever
// thread calls them under its lock (the interface contract); the pml calls
// them only from its own entry points, which that lock serializes.
unsafe impl Send for Core {}

impl fmt::Debug for Core {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Core")
    }
}

impl Core {
    /// Wraps the MPI layer's table (the adapter does this for `init`).
    pub fn new(raw: MpiServices) -> Self {
        Core { raw }
    }

    /// The MPI layer's table itself, to hand on to a component this one
    /// starts itself.
    pub fn raw(&self) -> MpiServices {
        self.raw
    }

    /// Publishes this process's card under `name` (before the fence).
    ///
    /// # Errors
    ///
    /// The MPI layer's sentence (`"the modex gave no reason"` if none).
    pub fn modex_put(&self, name: &str, card: &[u8]) -> Result<(), String> {
        let mut error = RString::new();
        // SAFETY: the MPI layer's function with its own context; the
        // arguments are valid for the call.
        let ok = unsafe {
            (self.raw.modex_put)(
                self.raw.ctx,
                RStr::from_str(name),
                RSlice::from_slice(card),
                &mut error,
            )
        };
        if ok {
            Ok(())
        } else {
            Err(sentence_or(error, "the modex gave no reason"))
        }
    }

    /// `rank`'s card published under `name`: `Ok(None)` when it published
    /// none.
    ///
    /// # Errors
    ///
    /// Why the lookup failed (`"the modex gave no reason"` if it said
    /// nothing).
    pub fn modex_get(&self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        let mut card = RVec::new();
        let mut error = RString::new();
        // SAFETY: as in `modex_put`.
        let answer = unsafe {
            (self.raw.modex_get)(
                self.raw.ctx,
                rank,
                RStr::from_str(name),
                &mut card,
                &mut error,
            )
        };
        match answer {
            ModexLookup::Found => Ok(Some(card.into_vec())),
            ModexLookup::Missing => Ok(None),
            ModexLookup::Failed => Err(sentence_or(error, "the modex gave no reason")),
        }
    }

    /// Adds a progress function (a btl's, from
    /// `BtlHandle::progress_fn`) to the MPI layer's progress engine,
    /// which polls them in registration order before the pml's own
    /// `progress`.
    pub fn register_progress(&self, poll: unsafe extern "C" fn() -> usize) {
        // SAFETY: as in `modex_put`.
        unsafe { (self.raw.register_progress)(self.raw.ctx, ProgressFn { poll }) }
    }
}
