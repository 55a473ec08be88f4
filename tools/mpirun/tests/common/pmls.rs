//! Running the same jobs over several pmls and their transports: a
//! [`Transport`] is the mpirun options that select one (`--mca pml ucx -x
//! UCX_TLS=tcp`, `--mca pml cm --mca mtl_ofi_provider_include tcp`), and
//! the helpers run a program or a `p2p_check` scenario over each.

use super::{built, mpirun, Run};

/// A pml and its transport, as mpirun options.
#[derive(Clone, Copy, Debug)]
pub struct Transport {
    /// What the failure messages call it.
    pub name: &'static str,
    /// The mpirun options that select it.
    pub options: &'static [&'static str],
}

/// Runs `program` with `args` on `n` ranks over `t`.
pub fn run_over(t: &Transport, n: usize, program: &str, args: &[&str]) -> Run {
    let n = n.to_string();
    let mut all: Vec<&str> = vec!["-n", &n, "--oversubscribe"];
    all.extend(t.options);
    all.push(program);
    all.extend(args);
    mpirun(&all)
}

/// Checks that a job succeeded, with its output in the message.
pub fn assert_ok(run: &Run, what: &str) {
    assert_eq!(
        run.code(),
        0,
        "{what} failed\nstdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
}

/// Runs a `p2p_check` scenario on `n` ranks over each of `transports`;
/// checks that it succeeded and printed `expect` `times` times.
pub fn scenario(transports: &[Transport], n: usize, args: &[&str], expect: &str, times: usize) {
    program_prints(transports, "p2p_check", n, args, expect, times);
}

/// Runs the built program `name` on `n` ranks over each of `transports`;
/// checks that it succeeded and printed `expect` `times` times.
pub fn program_prints(
    transports: &[Transport],
    name: &str,
    n: usize,
    args: &[&str],
    expect: &str,
    times: usize,
) {
    let program = built(name).display().to_string();
    for t in transports {
        let run = run_over(t, n, &program, args);
        let what = format!("{name} {} on {n} ranks over {}", args.join(" "), t.name);
        assert_ok(&run, &what);
        assert_eq!(
            run.stdout.matches(expect).count(),
            times,
            "{what}: expected {times} × {expect:?}\nstdout:\n{}",
            run.stdout
        );
    }
}

/// The job's output and errors together (the components' log lines go to
/// standard error).
pub fn all_output(run: &Run) -> String {
    format!("{}{}", run.stdout, run.stderr)
}
