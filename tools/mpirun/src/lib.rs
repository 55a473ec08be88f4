//! `mpirun` / `mpiexec`: launches an oxmpi job on the local host.
//!
//! The program lives in this library so that both binary names
//! (`src/bin/mpirun.rs`, `src/bin/mpiexec.rs`) run the same code.

pub mod binding;
pub mod cli;
pub mod guardian;
pub mod job;
pub mod launch;
pub mod limits;
pub mod output;
pub mod report;
pub mod run;
pub mod supervisor;

use clap::Parser;
use cli::{AppCli, Cli, StdinTarget};
use oxmpi_mca::{Mca, McaInputs, Source};
use oxmpi_pmi::server::{JobInfo, PmiServer};
use std::process::ExitCode;

/// The `--mca NAME VALUE` pairs as text. Parameter names and values are
/// text, so bytes that are not UTF-8 are an error naming the option.
fn mca_arguments(words: &[std::ffi::OsString]) -> Result<Vec<(String, String)>, String> {
    words
        .chunks(2)
        .filter(|c| c.len() == 2)
        .map(|c| {
            let name = c[0].to_str().ok_or_else(|| {
                format!(
                    "--mca {}: the parameter name is not valid UTF-8 text",
                    c[0].to_string_lossy()
                )
            })?;
            let value = c[1].to_str().ok_or_else(|| {
                format!(
                    "--mca {name} {}: the value is not valid UTF-8 text (the bad bytes are shown as U+FFFD); parameter values must be text",
                    c[1].to_string_lossy()
                )
            })?;
            Ok((name.to_string(), value.to_string()))
        })
        .collect()
}

fn fail(message: &str) -> ExitCode {
    eprintln!("mpirun: error: {message}");
    ExitCode::from(1)
}

/// OXMPI_MCA_* variables for the ranks: the --mca and tune values in
/// effect (with OXMPI_MCA_SOURCE_* so ranks report their real source), and
/// where the install is, unless the user set it.
///
/// The component path is always forwarded as the directories mpirun
/// searched, with `SYSTEM_DEFAULT` and `USER_DEFAULT` expanded: a rank finds
/// its install from its own executable and the forwarded `OXMPI_PREFIX`
/// (which, for a dev tree, names the checkout, not `target/<profile>`), so
/// the words could name another directory there than in mpirun.
fn forwarded_env(mca: &Mca) -> Vec<(String, String)> {
    let mut env = Vec::new();
    for a in mca.assignments() {
        let marker = match &a.source {
            Source::CommandLine => "COMMAND_LINE".to_string(),
            Source::Tune { path, line } => format!("TUNE:{}:{line}", path.display()),
            _ => continue,
        };
        // Forward only the value in effect (the environment beats a tune file).
        if mca.value(&a.name).is_some_and(|r| r.source != a.source) {
            continue;
        }
        env.push((format!("OXMPI_MCA_{}", a.name), a.value.clone()));
        env.push((format!("OXMPI_MCA_SOURCE_{}", a.name), marker));
    }
    if std::env::var_os("OXMPI_PREFIX").is_none() {
        env.push((
            "OXMPI_PREFIX".into(),
            mca.paths().prefix.display().to_string(),
        ));
    }
    let path_var = "OXMPI_MCA_mca_base_component_path";
    let dirs: Vec<String> = mca
        .component_dirs()
        .iter()
        .map(|d| d.display().to_string())
        .collect();
    // A value forwarded from --mca or a tune file keeps its source marker;
    // one from the environment or a file is replaced in the ranks'
    // environment.
    match env.iter_mut().find(|(k, _)| k == path_var) {
        Some(entry) => entry.1 = dirs.join(":"),
        None => env.push((path_var.into(), dirs.join(":"))),
    }
    env
}

/// Runs mpirun with the process's arguments; returns its exit status.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let segments = cli::normalize(&args);
    {
        use clap::CommandFactory;
        let command = Cli::command();
        if let Some(word) = segments
            .iter()
            .find_map(|s| cli::unknown_option(s, &command))
        {
            return fail(&format!(
                "unknown option {word}; `mpirun --help` lists the options (a program whose name starts with - must follow --)"
            ));
        }
    }
    let first =
        std::iter::once(std::ffi::OsString::from("mpirun")).chain(segments[0].iter().cloned());
    let cli = match Cli::try_parse_from(first) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    if cli.version {
        println!("mpirun (oxmpi) {}", oxmpi_mca::VERSION);
        return ExitCode::SUCCESS;
    }
    let mut extra = Vec::new();
    for segment in &segments[1..] {
        match AppCli::try_parse_from(segment) {
            Ok(app) => extra.push(app.app),
            Err(e) => e.exit(),
        }
    }
    let stdin_target = match StdinTarget::parse(&cli.stdin) {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let timeout = match cli.timeout.map(run::timeout_from_seconds).transpose() {
        Ok(t) => t,
        Err(e) => return fail(&e),
    };
    let mca_pairs = match mca_arguments(&cli.mca) {
        Ok(pairs) => pairs,
        Err(e) => return fail(&e),
    };

    // Reading the topology takes milliseconds: do it while the parameters
    // are resolved. The thread is joined before mapping, so mpirun is
    // single-threaded again before it forks anything.
    let topology_thread = std::thread::spawn(oxmpi_topology::Topology::local);
    oxmpi_mca::log::init_stderr_logging();
    let mut inputs = McaInputs::from_process("mpirun");
    inputs.command_line = mca_pairs;
    inputs.tune_files = cli.tune.clone();
    // mpirun loads only the rmaps framework (not btl, pml, …, which only
    // the ranks use); its modules' layout is checked when they load.
    inputs.frameworks = vec![&oxmpi_framework_rmaps::FRAMEWORK];
    // The ranks' frameworks: their framework-level parameters (`btl`,
    // `btl_base_verbose`, …) are checked here, before launch; their
    // components' parameters by the ranks, which load them.
    inputs.base_frameworks = vec![
        &oxmpi_framework_btl::FRAMEWORK,
        &oxmpi_framework_coll::FRAMEWORK,
        &oxmpi_framework_mtl::FRAMEWORK,
        &oxmpi_framework_pml::FRAMEWORK,
    ];
    inputs.module_layouts = vec![oxmpi_mca::repository::ModuleLayout::of::<
        oxmpi_framework_rmaps::module::RmapsModuleRef,
    >("rmaps")];
    let mca = Mca::init(inputs);
    if mca.print_diagnostics() {
        return fail("the job was not started because of the parameter errors above");
    }
    let tune_exports = match job::resolve_exports(
        &mca.exports()
            .iter()
            .map(|(k, v)| match v {
                Some(v) => format!("{k}={v}"),
                None => k.clone(),
            })
            .collect::<Vec<_>>(),
    ) {
        Ok(e) => e,
        Err(e) => return fail(&format!("in a tune file: {e}")),
    };

    // A job that cannot fit is refused before mapping (mapping millions of
    // ranks takes a while); the mapped job is checked again below.
    let descriptor_limit = limits::raise_descriptor_limit();
    let asked: u64 = std::iter::once(&cli.app)
        .chain(&extra)
        .filter_map(|a| a.np)
        .map(u64::from)
        .sum();
    let per_rank = limits::descriptors_per_rank(
        stdin_target != StdinTarget::None,
        cli.output_filename.is_some(),
    );
    let processes = limits::ProcessLimits::read();
    if !cli.do_not_launch {
        if let Err(e) = limits::check_capacity(asked, per_rank, descriptor_limit, processes) {
            return fail(&e);
        }
    }
    let topology = match topology_thread.join() {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => {
            return fail(&format!(
                "cannot read this machine's processor topology (hwloc): {e}"
            ))
        }
        Err(_) => return fail("reading this machine's processor topology failed"),
    };
    let job = job::build(
        &cli,
        &extra,
        &tune_exports,
        &mca,
        job::topology_summary(topology),
    );
    // rmaps components that failed or panicked in register, open or query
    // while the job was mapped.
    mca.print_diagnostics();
    let mut job = match job {
        Ok(job) => job,
        Err(e) => return fail(&e),
    };
    if let StdinTarget::Rank(r) = stdin_target {
        if r >= job.size() {
            return fail(&format!(
                "--stdin {r}: the job has no rank {r} (its ranks are 0 to {}); give a rank of the job, all or none",
                job.size().saturating_sub(1)
            ));
        }
    }
    // Bindings of the ranks on this machine (shown in the map, applied at
    // launch).
    let plan = match binding::plan(
        &job,
        topology,
        cli.bind_to.as_deref(),
        cli.cpu_set.as_deref(),
    ) {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    binding::annotate(&mut job, topology, &plan);
    if let Some(format) = &cli.display_map {
        match format.as_str() {
            "json" => println!(
                "{}",
                oxmpi_framework_rmaps::display::json(&job.map).trim_end()
            ),
            "text" => print!("{}", oxmpi_framework_rmaps::display::text(&job.map)),
            other => return fail(&format!("--display-map={other}: expected text or json")),
        }
    }
    if cli.do_not_launch {
        return ExitCode::SUCCESS;
    }
    if let Some(remote) = job
        .nodes
        .iter()
        .find(|n| !n.local && job.procs.iter().any(|p| job.nodes[p.node].name == n.name))
    {
        return fail(&format!(
            "host {} is not this machine, and launching on other hosts is not available yet; use --do-not-launch to check a map for other hosts",
            remote.name
        ));
    }
    if let Err(e) =
        limits::check_capacity(u64::from(job.size()), per_rank, descriptor_limit, processes)
    {
        return fail(&e);
    }
    ExitCode::from(launch_and_run(&cli, &mca, &job, stdin_target, timeout, topology, plan) as u8)
}

/// Test-only: the exact path of the job directory, instead of one named
/// after the user, mpirun's pid and the job id (so a test can place
/// something at it beforehand). The same checks apply.
const TEST_JOB_DIR_VAR: &str = "OXMPI_TEST_JOB_DIR";

fn launch_and_run(
    cli: &Cli,
    mca: &Mca,
    job: &job::Job,
    stdin_target: StdinTarget,
    timeout: Option<f64>,
    topology: &oxmpi_topology::Topology,
    plan: binding::Plan,
) -> i32 {
    let host = gethostname::gethostname().to_string_lossy().into_owned();
    if cli.report_bindings {
        for p in &job.procs {
            eprintln!(
                "{}",
                binding::report(topology, &host, p.rank, &plan.cpus[p.rank as usize])
            );
        }
    }
    let sink = match &cli.output_filename {
        Some(dir) => match output::Sink::files(job.size() as usize, dir) {
            Ok(sink) => sink,
            Err(message) => {
                eprintln!("mpirun: error: {message}");
                return 1;
            }
        },
        None => output::Sink::terminal(cli.tag_output),
    };
    // Every job gets its own id and secret (transports authenticate peers
    // with it) and its own private directory, removed when the job ends.
    let identity = match oxmpi_pmi::identity::JobIdentity::generate() {
        Ok(identity) => identity,
        Err(message) => {
            eprintln!("mpirun: error: {message}");
            return 1;
        }
    };
    let job_dir_path = match std::env::var_os(TEST_JOB_DIR_VAR) {
        Some(path) if !path.is_empty() => std::path::PathBuf::from(path),
        _ => oxmpi_pmi::jobdir::default_path(identity.job_id),
    };
    let Some(job_dir_text) = job_dir_path.to_str().map(str::to_owned) else {
        eprintln!(
            "mpirun: error: the job directory {} is not valid UTF-8; set TMPDIR to a directory whose path is",
            job_dir_path.display()
        );
        return 1;
    };
    let job_dir = match oxmpi_pmi::jobdir::JobDir::create(&job_dir_path) {
        Ok(dir) => dir,
        Err(message) => {
            eprintln!("mpirun: error: {message}");
            return 1;
        }
    };
    let guardian = match guardian::start(Some(job_dir_path.clone())) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("mpirun: warning: {e}; if mpirun is killed, ranks may be left running");
            None
        }
    };
    let signals = match run::block_signals() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("mpirun: error: {e}");
            return 1;
        }
    };
    let size = job.size();
    let server = PmiServer::new(JobInfo {
        size,
        kvsname: format!("oxmpi_{}_0", std::process::id()),
        universe_size: size,
        appnum_of_rank: job.procs.iter().map(|p| p.app).collect(),
        process_mapping: oxmpi_pmi::mapping::process_mapping(
            &job.procs.iter().map(|p| p.node as u32).collect::<Vec<_>>(),
        ),
    });
    let forward_stdin = job.procs.iter().any(|p| stdin_target.includes(p.rank));
    let guardian_fd = guardian.as_ref().map(guardian::Guardian::raw_fd);
    let mut runner = run::Runner::new(
        server,
        sink,
        signals,
        guardian,
        Some(job_dir),
        host,
        timeout,
        forward_stdin,
    );
    let mut env = forwarded_env(mca);
    env.extend(identity.to_env());
    env.push((oxmpi_pmi::jobdir::JOB_DIR_VAR.to_string(), job_dir_text));
    // Every supervisor is forked before any report is awaited, so ranks
    // exec in parallel; the reports are then taken in rank order.
    let mut pending = Vec::with_capacity(job.procs.len());
    let mut failure = None;
    for p in &job.procs {
        let mask = plan.masks[p.rank as usize].clone();
        match launch::start(
            job,
            p,
            &env,
            stdin_target.includes(p.rank),
            mask,
            guardian_fd,
        ) {
            Ok(rank) => pending.push(rank),
            Err(message) => {
                failure = Some(message);
                break;
            }
        }
    }
    let mut pending = pending.into_iter();
    for (rank, waiting) in job.procs.iter().zip(pending.by_ref()) {
        match waiting.wait() {
            Ok(started) => runner.add(run::Rank::new(rank.rank, started)),
            Err(message) => {
                failure = Some(message);
                break;
            }
        }
    }
    // Ranks after one that failed to start are never run.
    pending.for_each(launch::Pending::abandon);
    if let Some(message) = failure {
        runner.fail(report::Failure::Launch { message });
    }
    // Directories of earlier jobs whose mpirun and guardian were both
    // killed, while the ranks start.
    oxmpi_pmi::jobdir::sweep_stale(
        job_dir_path.parent().unwrap_or(std::path::Path::new("/")),
        Some(&job_dir_path),
    );
    runner.run()
}
