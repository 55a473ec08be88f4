//! Initialization: parameters, wire-up with the launcher, btl and pml
//! selection, the modex.

use super::{Error, ErrorClass, Runtime, State, ThreadLevel};
use crate::modex::Modex;
use oxmpi_framework_btl::module::{BtlComponentModule, JobIdentity};
use oxmpi_framework_pml::handle::{MpiCore, PmlHandle};
use oxmpi_framework_pml::module::{PmlModule, ProgressFn};
use oxmpi_mca::mca::{Mca, McaInputs, Severity};
use oxmpi_pmi::PmiClient;
use std::sync::Mutex;

/// What the pml reaches through its core services ([`MpiCore`]): the
/// modex, and the progress functions it registers during its `init`.
pub(crate) struct CoreShared {
    pub(crate) modex: Mutex<Modex>,
    pub(crate) progress: Mutex<Vec<ProgressFn>>,
}

fn init_error(message: impl Into<String>) -> Error {
    Error::new(ErrorClass::Init, message)
}

impl MpiCore for CoreShared {
    fn modex_put(&self, name: &str, card: &[u8]) -> Result<(), String> {
        let mut modex = self.modex.lock().unwrap_or_else(|e| e.into_inner());
        modex.put(name, card).map_err(|e| e.to_string())
    }

    fn modex_get(&self, rank: u32, name: &str) -> Result<Option<Vec<u8>>, String> {
        // Finalize holds the modex while it waits for the other ranks; a
        // peer first contacted then cannot be resolved any more.
        let mut modex = match self.modex.try_lock() {
            Ok(m) => m,
            Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => {
                return Err("the modex is closed: this process is finalizing".to_string())
            }
        };
        modex
            .get(rank, name)
            .map(|card| card.map(<[u8]>::to_vec))
            .map_err(|e| e.to_string())
    }

    fn register_progress(&self, poll: ProgressFn) {
        self.progress
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(poll);
    }
}

/// The program name for messages (`argv[0]`'s file name).
pub(crate) fn program_name() -> String {
    std::env::args_os()
        .next()
        .and_then(|a| {
            std::path::Path::new(&a)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "oxmpi".to_string())
}

/// The job identity: from mpirun's environment; made up for a singleton;
/// for another launcher, rank 0's, shared through PMI.
fn job_identity(modex: &mut Modex) -> Result<oxmpi_pmi::identity::JobIdentity, Error> {
    use oxmpi_pmi::identity::JobIdentity as Identity;
    if let Some(id) = Identity::from_env(|k| std::env::var(k).ok()).map_err(init_error)? {
        return Ok(id);
    }
    if modex.size() == 1 {
        return Identity::generate().map_err(init_error);
    }
    const KEY: &str = "job-identity";
    if modex.rank() == 0 {
        let id = Identity::generate().map_err(init_error)?;
        modex
            .put(KEY, &id.to_bytes())
            .map_err(|e| init_error(e.to_string()))?;
    }
    modex.fence().map_err(|e| init_error(e.to_string()))?;
    let bytes: [u8; 24] = modex
        .get(0, KEY)
        .map_err(|e| init_error(e.to_string()))?
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| {
            init_error("rank 0 published no job identity; are all ranks running oxmpi?")
        })?;
    Ok(Identity::from_bytes(bytes))
}

/// The frameworks a rank loads (mpirun loads none of them; it declares
/// only their framework-level parameters).
fn rank_frameworks() -> [&'static oxmpi_plugin_api::FrameworkInfo; 4] {
    [
        &oxmpi_framework_btl::FRAMEWORK,
        &oxmpi_framework_mtl::FRAMEWORK,
        &oxmpi_framework_pml::FRAMEWORK,
        &oxmpi_framework_coll::FRAMEWORK,
    ]
}

/// Whether `name` is a component parameter of a framework only ranks load
/// (`btl_tcp_if_include`, not `btl` or `btl_base_verbose`): mpirun cannot
/// check such a name, so a rank reports what is wrong with it.
/// Whether `name` is a framework only ranks load.
fn is_rank_framework(name: &str) -> bool {
    rank_frameworks().iter().any(|fw| fw.name == name)
}

fn is_rank_component_param(name: &str) -> bool {
    rank_frameworks().iter().any(|fw| {
        name.strip_prefix(fw.name)
            .and_then(|rest| rest.strip_prefix('_'))
            .is_some_and(|rest| !rest.is_empty() && !rest.starts_with("base_"))
    })
}

pub(super) fn initialize(required: ThreadLevel) -> Result<Runtime, Error> {
    oxmpi_mca::log::init_stderr_logging();
    let program = program_name();
    let mut inputs = McaInputs::from_process(&program);
    // A rank loads the btl, mtl, pml and coll frameworks (rmaps is
    // mpirun's); their module layouts are checked when the component
    // libraries load.
    inputs.frameworks = rank_frameworks().to_vec();
    inputs.module_layouts = vec![
        oxmpi_mca::repository::ModuleLayout::of::<BtlComponentModule>("btl"),
        oxmpi_mca::repository::ModuleLayout::of::<oxmpi_framework_mtl::module::MtlModule>("mtl"),
        oxmpi_mca::repository::ModuleLayout::of::<PmlModule>("pml"),
        oxmpi_mca::repository::ModuleLayout::of::<oxmpi_framework_coll::module::CollModule>("coll"),
    ];
    let mca: &'static Mca = Box::leak(Box::new(Mca::init(inputs)));
    let under_mpirun = std::env::var_os(oxmpi_pmi::identity::JOB_ID_VAR).is_some();
    if under_mpirun {
        // mpirun resolved the same files and environment and already showed
        // the warnings, except about the frameworks only ranks load (mpirun
        // neither knows their component parameters nor opens their
        // libraries): rank 0 shows those once for the job. Errors still
        // stop every rank.
        let first_rank = std::env::var("PMI_RANK").map_or(true, |r| r.trim() == "0");
        let mut errors = Vec::new();
        for d in mca.take_diagnostics() {
            match d.severity {
                Severity::Error => errors.push(d.message),
                Severity::Warning
                    if first_rank
                        && (d.param.as_deref().is_some_and(is_rank_component_param)
                            || d.framework.as_deref().is_some_and(is_rank_framework)) =>
                {
                    eprintln!("{program}: warning: {}", d.message);
                }
                Severity::Warning => {}
            }
        }
        if !errors.is_empty() {
            return Err(init_error(errors.join("\n")));
        }
    } else if mca.print_diagnostics() {
        return Err(init_error(
            "the MCA parameters above are wrong; fix them and run again",
        ));
    }

    let client = PmiClient::from_env().map_err(|e| {
        init_error(format!(
            "cannot connect to the launcher: {e}. Start the program with mpirun, or alone (as a singleton)."
        ))
    })?;
    let mut modex = Modex::new(client);
    let (rank, size) = (modex.rank(), modex.size());
    let identity = job_identity(&mut modex)?;

    let chosen = super::select::choose(mca, &program)?;
    let pml_name = chosen.pml_name;
    let (pml, pml_fw_name, pml_comp) = chosen.pml;

    let shared: &'static CoreShared = Box::leak(Box::new(CoreShared {
        modex: Mutex::new(modex),
        progress: Mutex::new(Vec::new()),
    }));
    let job = JobIdentity {
        job_id: identity.job_id,
        secret: identity.secret,
        rank,
        size,
    };
    let pml = PmlHandle::new(pml, oxmpi_mca::services::context(pml_fw_name, pml_comp));
    // The network libraries a pml starts keep the program's crash-signal
    // handling too.
    let limits =
        oxmpi_mca::crash_signals::kept(|| pml.init_with(&job, shared, &chosen.btls, chosen.mtl))
            .map_err(|e| init_error(format!("the {pml_name} pml could not start: {e}")))?;
    {
        let mut modex = shared.modex.lock().unwrap_or_else(|e| e.into_inner());
        let wire_up = |e: crate::modex::ModexError| init_error(format!("wire-up failed: {e}"));
        modex.put("pml", pml_name.as_bytes()).map_err(wire_up)?;
        modex.fence().map_err(wire_up)?;
        if rank != 0 {
            let theirs = modex
                .get(0, "pml")
                .map_err(wire_up)?
                .map(|b| String::from_utf8_lossy(b).into_owned());
            if theirs.as_deref() != Some(pml_name.as_str()) {
                return Err(init_error(format!(
                    "rank 0 uses the {} pml and rank {rank} the {pml_name} pml; every rank of a job must use the same one: choose it with --mca pml <name>",
                    theirs.unwrap_or_else(|| "(none)".into())
                )));
            }
        }
    }
    let (colls, world_coll, self_coll) = super::coll::start(mca, rank, size)
        .map_err(|e| init_error(format!("the coll framework could not start: {e}")))?;
    let comm_entry = |context, rank, members: Vec<u32>, name: &str, coll: super::coll::CommColl| {
        let group = oxmpi_groups::Group::new(members)
            .map_err(|e| init_error(format!("internal error: {e}")))?;
        Ok::<_, Error>(super::comms::CommEntry::new(
            context,
            rank,
            group,
            name.to_string(),
            coll,
        ))
    };
    let comms = super::comms::Comms::new(
        comm_entry(0, rank, (0..size).collect(), "MPI_COMM_WORLD", world_coll)?,
        comm_entry(1, 0, vec![rank], "MPI_COMM_SELF", self_coll)?,
        limits.max_context,
    );
    mca.print_diagnostics();
    let progress = std::mem::take(&mut *shared.progress.lock().unwrap_or_else(|e| e.into_inner()));
    let state = State {
        pollers: super::pollers::Pollers::new(progress),
        ..State::default()
    };

    Ok(Runtime {
        rank,
        size,
        level: required,
        signals: pml.signals(),
        pml,
        pml_name,
        yield_when_idle: mca.bool_value("mpi_yield_when_idle").unwrap_or(false),
        lock: Mutex::new(()),
        state: std::cell::UnsafeCell::new(state),
        shared,
        self_hint: chosen.self_hint,
        unused_btls: chosen.unused_btls,
        limits,
        frameworks: Mutex::new(chosen.frameworks),
        colls: Mutex::new(colls),
        nb: Default::default(),
        comms,
        program,
        job_id: identity.job_id,
        job_dir: std::sync::OnceLock::new(),
    })
}
