//! mpirun at the edges of its input and of the machine: bytes that are not
//! UTF-8, absurd values, output that cannot be delivered, descriptor and
//! process limits, and processes that try to outlive the job.

mod common;

use common::*;
use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::time::{Duration, Instant};

fn bytes(b: &[u8]) -> &OsStr {
    OsStr::from_bytes(b)
}

/// Runs mpirun with `args` (any bytes) and extra environment.
fn mpirun_os(args: &[&OsStr], env: &[(&str, &OsStr)]) -> Run {
    mpirun_in(args, &[], env)
}

fn assert_no_panic(run: &Run) {
    assert!(
        !run.stderr.contains("panicked") && !run.stderr.contains("RUST_BACKTRACE"),
        "{}",
        run.stderr
    );
}

#[test]
fn bytes_that_are_not_utf8_pass_through_or_get_a_clear_message() {
    let ff = bytes(b"\xff");
    // An environment variable: passed to the ranks as it is.
    let run = mpirun_os(
        &[
            "-n".as_ref(),
            "1".as_ref(),
            "sh".as_ref(),
            "-c".as_ref(),
            "test \"$FOO\" = \"$(printf '\\377')\"".as_ref(),
        ],
        &[("FOO", ff)],
    );
    assert_no_panic(&run);
    assert_eq!(
        run.code(),
        0,
        "the variable arrived changed: {}",
        run.stderr
    );
    // An argument of the program.
    let run = mpirun_os(
        &[
            "-n".as_ref(),
            "1".as_ref(),
            "sh".as_ref(),
            "-c".as_ref(),
            "test \"$1\" = \"$(printf '\\377')\"".as_ref(),
            "x".as_ref(),
            ff,
        ],
        &[],
    );
    assert_no_panic(&run);
    assert_eq!(
        run.code(),
        0,
        "the argument arrived changed: {}",
        run.stderr
    );
    // HOME and PATH (an entry that is not UTF-8 among good ones).
    let run = mpirun_os(
        &["-n".as_ref(), "1".as_ref(), "true".as_ref()],
        &[
            ("HOME", bytes(b"/nonexistent/\xff")),
            ("PATH", bytes(b"/x\xff:/usr/bin:/bin")),
        ],
    );
    assert_no_panic(&run);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    // A program name: not found, said so.
    let run = mpirun_os(&["-n".as_ref(), "1".as_ref(), bytes(b"no-such-\xff")], &[]);
    assert_no_panic(&run);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("was not found in PATH"),
        "{}",
        run.stderr
    );
    // A --mca value: parameter values are text.
    let run = mpirun_os(
        &[
            "--mca".as_ref(),
            "btl".as_ref(),
            ff,
            "-n".as_ref(),
            "1".as_ref(),
            "true".as_ref(),
        ],
        &[],
    );
    assert_no_panic(&run);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("--mca btl") && run.stderr.contains("not valid UTF-8"),
        "{}",
        run.stderr
    );
    // A parameter variable whose value is not text.
    let run = mpirun_os(
        &["-n".as_ref(), "1".as_ref(), "true".as_ref()],
        &[("OXMPI_MCA_btl", ff)],
    );
    assert_no_panic(&run);
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(
        run.stderr
            .contains("environment variable OXMPI_MCA_btl: its value is not valid UTF-8"),
        "{}",
        run.stderr
    );
    // --wdir and --hostfile naming paths that do not exist.
    let run = mpirun_os(
        &[
            "--wdir".as_ref(),
            bytes(b"/nonexistent/\xff"),
            "-n".as_ref(),
            "1".as_ref(),
            "true".as_ref(),
        ],
        &[],
    );
    assert_no_panic(&run);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("--wdir /nonexistent/\u{fffd}"),
        "{}",
        run.stderr
    );
    let run = mpirun_os(
        &[
            "--hostfile".as_ref(),
            bytes(b"/nonexistent/\xff"),
            "-n".as_ref(),
            "1".as_ref(),
            "true".as_ref(),
        ],
        &[],
    );
    assert_no_panic(&run);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("/nonexistent/\u{fffd}"),
        "{}",
        run.stderr
    );
    // A working directory whose name is not UTF-8 works.
    let dir = tempfile::tempdir().unwrap();
    let odd = dir.path().join(bytes(b"d\xff"));
    std::fs::create_dir(&odd).unwrap();
    let run = mpirun_os(
        &[
            "--wdir".as_ref(),
            odd.as_os_str(),
            "-n".as_ref(),
            "1".as_ref(),
            "sh".as_ref(),
            "-c".as_ref(),
            "test \"$(basename \"$(pwd)\")\" = \"d$(printf '\\377')\"".as_ref(),
        ],
        &[],
    );
    assert_eq!(
        run.code(),
        0,
        "not started in the directory: {}",
        run.stderr
    );
    // -x with a value that is not UTF-8.
    let run = mpirun_os(
        &[
            "-x".as_ref(),
            bytes(b"V=\xfe"),
            "-n".as_ref(),
            "1".as_ref(),
            "sh".as_ref(),
            "-c".as_ref(),
            "test \"$V\" = \"$(printf '\\376')\"".as_ref(),
        ],
        &[],
    );
    assert_eq!(run.code(), 0, "{}", run.stderr);
}

#[test]
fn huge_timeouts_are_refused_not_overflowed() {
    for value in ["1e19", "18446744073709551616", "nan", "inf", "-1", "0"] {
        let run = mpirun(&["--timeout", value, "-n", "1", "true"]);
        assert_no_panic(&run);
        assert_eq!(run.code(), 1, "{value}: {}", run.stderr);
        assert!(
            run.stderr.contains("--timeout") && run.stderr.contains("at most 1e9"),
            "{value}: {}",
            run.stderr
        );
    }
    let run = mpirun(&["--timeout", "1e9", "-n", "1", "true"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
}

#[test]
fn a_reader_that_goes_away_ends_the_job() {
    let (mut cmd, marker) = command(&["-n", "2", "yes"]);
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut reader = BufReader::new(stdout);
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    assert_eq!(line, "y\n");
    drop(reader); // as `| head -1` does
    let start = Instant::now();
    let run = wait_with_timeout(child, Duration::from_secs(20), &marker);
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(run.code(), 128 + libc::SIGPIPE, "{}", run.stderr);
    assert!(run.stderr.contains("broken pipe"), "{}", run.stderr);
    assert_no_survivors(&marker);
}

#[test]
fn output_files_that_cannot_be_made_stop_the_job_before_it_starts() {
    let run = mpirun(&["--output-filename", "/proc/nope", "-n", "1", "echo", "lost"]);
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("--output-filename /proc/nope"),
        "{}",
        run.stderr
    );
    assert!(!run.stdout.contains("lost"));
}

#[test]
fn output_files_are_private_and_never_follow_planted_links() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    let victim = dir.path().join("victim");
    std::fs::write(&victim, "precious").unwrap();
    let d = out.display().to_string();
    // A planted link where mpirun creates the job directory.
    std::fs::create_dir(&out).unwrap();
    std::os::unix::fs::symlink(dir.path(), out.join("1")).unwrap();
    let run = mpirun(&["--output-filename", &d, "-n", "1", "echo", "x"]);
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("is a symbolic link"), "{}", run.stderr);
    std::fs::remove_file(out.join("1")).unwrap();
    // A planted link where an output file goes.
    std::fs::create_dir_all(out.join("1/rank.0")).unwrap();
    std::fs::set_permissions(out.join("1"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::fs::set_permissions(out.join("1/rank.0"), std::fs::Permissions::from_mode(0o700)).unwrap();
    std::os::unix::fs::symlink(&victim, out.join("1/rank.0/stdout")).unwrap();
    let run = mpirun(&["--output-filename", &d, "-n", "1", "echo", "x"]);
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "precious");
    std::fs::remove_file(out.join("1/rank.0/stdout")).unwrap();
    // A directory others may write to.
    std::fs::set_permissions(out.join("1"), std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = mpirun(&["--output-filename", &d, "-n", "1", "echo", "x"]);
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("writable by other users"),
        "{}",
        run.stderr
    );
    std::fs::remove_dir_all(&out).unwrap();
    // The normal case: private directories and files.
    let run = mpirun(&["--output-filename", &d, "-n", "2", "echo", "x"]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    use std::os::unix::fs::MetadataExt;
    for path in ["1", "1/rank.0", "1/rank.1"] {
        let mode = std::fs::metadata(out.join(path)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o700, "{path}");
    }
    for path in ["1/rank.0/stdout", "1/rank.1/stderr"] {
        let mode = std::fs::metadata(out.join(path)).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600, "{path}");
    }
    assert_eq!(
        std::fs::read_to_string(out.join("1/rank.1/stdout")).unwrap(),
        "x\n"
    );
}

#[test]
fn a_low_soft_descriptor_limit_is_raised_for_mpirun_only() {
    let (mut cmd, marker) = command(&[
        "-n",
        "400",
        "--oversubscribe",
        "sh",
        "-c",
        "test $OXMPI_COMM_WORLD_RANK != 0 || ulimit -Sn",
    ]);
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes one rlimit into `limit`, a local it may
    // write.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    assert_eq!(rc, 0, "getrlimit(RLIMIT_NOFILE) failed");
    assert!(
        limit.rlim_max >= 4096,
        "the hard descriptor limit ({}) is below 4096, which this test needs",
        limit.rlim_max
    );
    limit.rlim_cur = 256;
    // SAFETY: between fork and exec the closure only calls setrlimit, which
    // is async-signal-safe and reads `limit`, a copy the closure owns; it
    // allocates nothing.
    unsafe {
        cmd.pre_exec(move || {
            if libc::setrlimit(libc::RLIMIT_NOFILE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn().unwrap();
    let run = wait_with_timeout(child, Duration::from_secs(120), &marker);
    assert_no_survivors(&marker);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    // The ranks keep the limit they were given.
    assert_eq!(run.stdout.trim(), "256");
}

#[test]
fn a_job_too_big_for_the_machine_is_refused_before_anything_starts() {
    let start = Instant::now();
    let run = mpirun(&["-n", "10000000", "true"]);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("-n 10000000")
            && (run.stderr.contains("open files") || run.stderr.contains("processes")),
        "{}",
        run.stderr
    );
}

#[test]
fn values_that_cannot_apply_are_refused() {
    let run = mpirun(&["--stdin", "5", "-n", "2", "true"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("--stdin 5: the job has no rank 5"),
        "{}",
        run.stderr
    );
    let run = mpirun(&["--map-by", "slot:PE=100000", "-n", "2", "true"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("PE=100000") && run.stderr.contains("no host of the job has that many"),
        "{}",
        run.stderr
    );
    let run = mpirun(&["--wdir", "/etc/passwd", "-n", "2", "true"]);
    assert_eq!(run.code(), 1);
    assert!(
        run.stderr.contains("--wdir /etc/passwd: not a directory"),
        "{}",
        run.stderr
    );
}

/// Pids of the marked processes whose name (`comm`) is `name`.
fn named(marker: &str, name: &str) -> Vec<i32> {
    marked_pids(marker)
        .into_iter()
        .filter(|p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == name)
        })
        .collect()
}

#[test]
fn killing_mpirun_and_its_guardian_together_leaves_nothing_behind() {
    // Each rank starts a child in its own session, one in its process
    // group, and waits.
    let (mut cmd, marker) = command(&["-n", "2", "sh", "-c", "setsid sleep 30 & sleep 30 & wait"]);
    let mut child = cmd.spawn().unwrap();
    // mpirun, its guardian, 2 x (supervisor, sh, 2 sleeps)
    wait_for_ranks(&marker, 10);
    let guardian = named(&marker, "oxmpi-guardian");
    assert_eq!(guardian.len(), 1, "{guardian:?}");
    assert_eq!(named(&marker, "oxmpi-rank").len(), 2);
    kill(Pid::from_raw(child.id() as i32), Signal::SIGKILL).expect("killing the mpirun under test");
    kill(Pid::from_raw(guardian[0]), Signal::SIGKILL).expect("killing its guardian");
    child.wait().unwrap();
    assert_no_survivors(&marker);
}

#[test]
fn processes_a_rank_leaves_running_end_with_the_job() {
    let start = Instant::now();
    let run = mpirun(&[
        "-n",
        "2",
        "sh",
        "-c",
        "setsid sleep 30 </dev/null >/dev/null 2>&1 & echo started",
    ]);
    assert_eq!(run.code(), 0, "{}", run.stderr);
    assert_eq!(run.stdout, "started\nstarted\n");
    // `mpirun` checked that nothing survived; the leftovers had a short
    // grace, not their 30 seconds.
    assert!(
        start.elapsed() < Duration::from_secs(10),
        "took {:?}",
        start.elapsed()
    );
}

#[test]
fn the_supervisor_reports_the_programs_own_status() {
    let run = mpirun(&["-n", "1", "sh", "-c", "exit 7"]);
    assert_eq!(run.code(), 7);
    let run = mpirun(&["-n", "1", "sh", "-c", "kill -SEGV $$"]);
    assert_eq!(run.code(), 128 + libc::SIGSEGV, "{}", run.stderr);
    assert!(run.stderr.contains("SIGSEGV"), "{}", run.stderr);
    // The pid in the report is the program's.
    let run = mpirun(&["-n", "1", "sh", "-c", "echo $$; exit 3"]);
    let pid = run.stdout.trim();
    assert!(
        run.stderr.contains(&format!("(pid {pid})")),
        "{pid}: {}",
        run.stderr
    );
}

#[test]
fn a_rank_that_never_reads_its_pmi_replies_cannot_stall_mpirun() {
    let start = Instant::now();
    let run = mpirun(&[
        "-n",
        "2",
        "sh",
        "-c",
        "test $OXMPI_COMM_WORLD_RANK = 1 && exec sleep 30; yes 'cmd=get kvsname=k key=a' >&$PMI_FD",
    ]);
    assert!(
        start.elapsed() < Duration::from_secs(20),
        "took {:?}",
        start.elapsed()
    );
    assert_eq!(run.code(), 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("rank 0 (pid")
            && run
                .stderr
                .contains("kept sending PMI requests without reading the replies"),
        "{}",
        run.stderr
    );
}
