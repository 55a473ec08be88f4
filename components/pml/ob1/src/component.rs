//! The component: [`Ob1`], one [`Engine`] over the real btls and the MPI
//! layer's core, as the [`Pml`] the framework adapter exports (the
//! `extern "C"` table, the process-global state with its exclusive-entry
//! check, the panic guard and the btl receivers are the adapter's; see
//! `oxmpi_framework_pml::adapter`).

use oxmpi_framework_btl::handle::{BtlHandle, BtlStart};
use oxmpi_framework_btl::module::{JobIdentity, RdmaOutcome, RdmaStatus, SendOutcome};
use oxmpi_framework_pml::adapter::{CandidateBtl, Core, MtlHandle, Pml, Requests};
use oxmpi_framework_pml::module::{RecvArgs, RequestError, RequestStatus, SendArgs};
use oxmpi_plugin_api::{verbosity, ComponentContext, Params as _};

use crate::engine::{BtlDesc, Config, Engine, Transport};
use crate::Ob1Params;

/// One btl component as ob1 uses it.
struct AbiBtl {
    name: &'static str,
    handle: BtlHandle,
    /// Its `init` succeeded (so `finalize` is due).
    initialized: bool,
}

/// The [`Transport`] over the real btls and the MPI layer's core.
pub(crate) struct AbiTransport {
    core: Core,
    btls: Vec<AbiBtl>,
    log: ComponentContext,
}

impl Transport for AbiTransport {
    fn modex_get(&mut self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        self.core.modex_get(rank, name)
    }

    fn add_peer(&mut self, btl: usize, module: u32, peer: u32, card: &[u8]) -> Result<u64, String> {
        self.btls[btl].handle.add_peer(module, peer, card)
    }

    #[inline]
    fn send(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        header: &[u8],
        payload: *const u8,
        payload_len: usize,
        cookie: u64,
    ) -> SendOutcome {
        // SAFETY: the engine passes the payload of a live request (or a
        // dangling pointer for 0 bytes) and keeps that request, with its
        // buffer, until the btl answers other than `Queued` or calls
        // `on_send_done` with the cookie (`Transport::send`'s contract).
        unsafe {
            self.btls[btl]
                .handle
                .send(module, endpoint, header, payload, payload_len, cookie)
        }
    }

    #[inline]
    fn get(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        local: *mut u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome {
        // SAFETY: the engine passes a live receive's buffer and keeps it
        // until the btl answers other than `Queued` or calls `on_rdma_done`
        // with the cookie (`Transport::get`'s contract).
        unsafe {
            self.btls[btl]
                .handle
                .get(module, endpoint, local, remote, len, cookie)
        }
    }

    #[inline]
    fn put(
        &mut self,
        btl: usize,
        module: u32,
        endpoint: u64,
        local: *const u8,
        remote: u64,
        len: usize,
        cookie: u64,
    ) -> RdmaOutcome {
        // SAFETY: as in `get`, for a live send's buffer.
        unsafe {
            self.btls[btl]
                .handle
                .put(module, endpoint, local, remote, len, cookie)
        }
    }

    fn log(&self, level: i32, message: &str) {
        self.log.log(level, message);
    }
}

/// The pml ob1 of this process (see the crate docs).
pub struct Ob1 {
    engine: Engine<AbiTransport>,
}

// SAFETY: the engine's raw pointers are the MPI layer's buffers and
// completion slots, which it promises to keep valid on whichever thread it
// calls the pml from; the adapter admits one entry at a time, so the
// state is never used by two threads at once.
unsafe impl Send for Ob1 {}

/// Starts one btl: its description for the engine, and whether its
/// `init` succeeded.
fn start_btl(cand: &CandidateBtl, identity: &JobIdentity, core: &Core) -> (BtlDesc, bool) {
    let name = cand.name();
    let context = cand.handle().context();
    let mut desc = BtlDesc {
        name: name.to_string(),
        modules: Vec::new(),
        unusable: None,
    };
    let initialized = match cand.init(identity) {
        Err(why) => {
            context.log(
                verbosity::COMPONENT,
                &format!("not used by pml ob1: init failed: {why}"),
            );
            desc.unusable = Some(format!("init failed here: {why}"));
            false
        }
        Ok(BtlStart::NothingUsable(why)) => {
            context.log(
                verbosity::COMPONENT,
                &format!("not used by pml ob1: no module: {why}"),
            );
            desc.unusable = Some(format!("no module here: {why}"));
            true
        }
        Ok(BtlStart::Modules(modules)) => {
            // Published even when empty: a peer tells "runs there and
            // needs no card" from "does not run there".
            let key = format!("btl_{name}");
            match core.modex_put(&key, &cand.handle().contact_card()) {
                Ok(()) => {
                    core.register_progress(cand.handle().progress_fn());
                    desc.modules = modules;
                }
                Err(perr) => {
                    let why = format!("publishing its contact card {key} failed: {perr}");
                    context.log(verbosity::COMPONENT, &format!("not used by pml ob1: {why}"));
                    desc.unusable = Some(why);
                }
            }
            true
        }
    };
    (desc, initialized)
}

impl Requests for Ob1 {
    #[inline]
    unsafe fn isend(&mut self, args: &SendArgs) -> Result<u64, (RequestError, String)> {
        // SAFETY: the buffer's promise is this method's own requirement.
        unsafe { self.engine.isend(args) }
    }

    #[inline]
    unsafe fn irecv(&mut self, args: &RecvArgs, status: &mut RequestStatus) -> Result<u64, String> {
        // SAFETY: as in `isend`.
        unsafe { self.engine.irecv_or_complete(args, status) }
    }

    #[inline]
    fn test(&mut self, request: u64) -> Option<RequestStatus> {
        self.engine.test(request)
    }

    fn request_error(&mut self, request: u64) -> String {
        self.engine.request_error(request)
    }

    #[inline]
    fn free(&mut self, request: u64) {
        self.engine.free(request)
    }

    #[inline]
    fn take(&mut self, request: u64) -> Option<RequestStatus> {
        self.engine.take(request)
    }

    fn cancel(&mut self, request: u64) -> bool {
        self.engine.cancel(request)
    }

    fn iprobe(&mut self, context: u32, source: i32, tag: i32) -> Option<RequestStatus> {
        self.engine.iprobe(context, source, tag)
    }

    fn improbe(&mut self, context: u32, source: i32, tag: i32) -> Option<(u64, RequestStatus)> {
        self.engine.improbe(context, source, tag)
    }

    unsafe fn imrecv(
        &mut self,
        message: u64,
        args: &RecvArgs,
        status: &mut RequestStatus,
    ) -> Result<u64, String> {
        // SAFETY: as in `isend`.
        unsafe { self.engine.imrecv(message, args, status) }
    }

    #[inline]
    fn progress(&mut self) -> usize {
        self.engine.progress()
    }

    fn has_work(&self) -> bool {
        self.engine.has_work()
    }

    /// Finalizes the btls ob1 initialized (a later `init` starts afresh).
    fn finalize(self) {
        let live = self.engine.stats().live_requests;
        let transport = self.engine.transport();
        if live > 0 {
            transport.log(
                verbosity::COMPONENT,
                &format!("finalize with {live} request(s) not freed; they are dropped"),
            );
        }
        for btl in transport.btls.iter().filter(|b| b.initialized) {
            transport.log(verbosity::TRACE, &format!("finalizing btl {}", btl.name));
            btl.handle.finalize();
        }
    }
}

impl Pml for Ob1 {
    fn init(
        context: &ComponentContext,
        identity: &JobIdentity,
        core: Core,
        btls: &[CandidateBtl],
        _mtl: Option<MtlHandle>,
    ) -> Result<Self, String> {
        let params = Ob1Params::read(context)?;
        if btls.is_empty() {
            return Err(
                "pml ob1 has no btl to use: none was selected (check the btl parameter)"
                    .to_string(),
            );
        }
        let mut used = Vec::with_capacity(btls.len());
        let mut descs = Vec::with_capacity(btls.len());
        for cand in btls {
            let (desc, initialized) = start_btl(cand, identity, &core);
            used.push(AbiBtl {
                name: cand.name(),
                handle: *cand.handle(),
                initialized,
            });
            descs.push(desc);
        }
        if descs.iter().all(|d| d.modules.is_empty()) {
            let reasons: Vec<String> = descs
                .iter()
                .map(|d| {
                    format!(
                        "{}: {}",
                        d.name,
                        d.unusable.as_deref().unwrap_or("unusable")
                    )
                })
                .collect();
            for btl in used.iter().filter(|b| b.initialized) {
                btl.handle.finalize();
            }
            return Err(format!("pml ob1 has no usable btl: {}", reasons.join("; ")));
        }
        let names: Vec<&str> = descs
            .iter()
            .filter(|d| !d.modules.is_empty())
            .map(|d| d.name.as_str())
            .collect();
        context.log(
            verbosity::COMPONENT,
            &format!(
                "rank {} of {} uses btl {}",
                identity.rank,
                identity.size,
                names.join(", ")
            ),
        );
        let transport = AbiTransport {
            core,
            btls: used,
            log: *context,
        };
        let config = Config {
            send_pipeline_depth: params.send_pipeline_depth,
            use_rdma: params.use_rdma,
        };
        Ok(Ob1 {
            engine: Engine::new(config, identity.rank, identity.size, descs, transport),
        })
    }

    #[inline]
    fn on_header(
        &mut self,
        _btl: usize,
        _module: u32,
        peer: u32,
        header: &[u8],
        payload_len: usize,
    ) -> *mut u8 {
        self.engine.on_header(peer, header, payload_len)
    }

    #[inline(always)]
    fn on_fragment(&mut self, btl: usize, module: u32, peer: u32, header: &[u8], payload: &[u8]) {
        self.engine.on_fragment(btl, module, peer, header, payload)
    }

    #[inline]
    fn on_send_done(&mut self, _btl: usize, cookie: u64) {
        self.engine.on_send_done(cookie)
    }

    fn on_peer_failed(&mut self, btl: usize, module: u32, peer: u32, reason: &str) {
        self.engine.on_peer_failed(btl, module, peer, reason)
    }

    #[inline]
    fn on_rdma_done(&mut self, _btl: usize, cookie: u64, status: RdmaStatus) {
        self.engine.on_rdma_done(cookie, status)
    }
}
