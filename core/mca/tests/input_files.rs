//! Parameter, tune and override files that are not small regular UTF-8
//! text files, through `Mca::init`: each is refused with one error naming
//! the file, and `Mca::init` neither blocks (FIFO) nor reads without end
//! (`/dev/zero`, a huge file).

mod common;

use common::{Diagnostics, World};
use oxmpi_mca::input_file::MAX_INPUT_FILE_LEN;
use oxmpi_mca::{Mca, Severity};
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

fn mkfifo(path: &Path) -> PathBuf {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
    path.to_path_buf()
}

/// `Mca::init` on another thread; fails the test if it takes more than 20
/// seconds. Returns the diagnostics and the text of `btl_base_verbose`.
fn init_within_time(w: &World) -> (Diagnostics, String) {
    let inputs = w.inputs();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mca = Mca::init(inputs);
        let verbose = mca.value("btl_base_verbose").unwrap().text.clone();
        let _ = tx.send((Diagnostics(mca.take_diagnostics()), verbose));
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("Mca::init blocked or read for ever")
}

#[test]
fn tune_file_dev_zero_is_refused() {
    let mut w = World::new();
    w.tune_files.push("/dev/zero".into());
    let (d, _) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &["/dev/zero"]);
    assert_eq!(
        e,
        "tune file /dev/zero is a character device, not a regular file, and was not read (reading a device or a pipe may block or never end); give the path of a regular text file; the path was given with --tune"
    );
    assert_eq!(d.0.len(), 1, "{d}");
}

#[test]
fn tune_file_fifo_is_refused_without_blocking() {
    let mut w = World::new();
    let fifo = mkfifo(&w.root.path().join("tune.fifo"));
    w.tune_files.push(fifo.clone());
    w.add_tune_file("ok.tune", "--mca btl_base_verbose 33\n");
    let (d, verbose) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &[&fifo.display().to_string()]);
    assert!(
        e.contains("is a FIFO (named pipe), not a regular file"),
        "{e}"
    );
    // The other tune file still counts.
    assert_eq!(verbose, "33");
}

#[test]
fn param_files_dev_zero_from_the_environment_is_refused() {
    let mut w = World::new();
    w.set_param_env("mca_base_param_files", "/dev/zero");
    let (d, _) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &["/dev/zero"]);
    assert_eq!(
        e,
        "parameter file /dev/zero is a character device, not a regular file, and was not read (reading a device or a pipe may block or never end); give the path of a regular text file. It is read because mca_base_param_files lists it (set by environment); fix the file, or set mca_base_param_files without it"
    );
}

#[test]
fn param_file_fifo_and_directory_are_refused() {
    let mut w = World::new();
    let fifo = mkfifo(&w.root.path().join("params.fifo"));
    let dir = w.dir("params.d");
    let good = w.write_file("good.conf", "btl_base_verbose = 7\n");
    w.set_mca(
        "mca_base_param_files",
        &format!("{},{},{}", fifo.display(), dir.display(), good.display()),
    );
    let (d, verbose) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &[&fifo.display().to_string()]);
    assert!(e.contains("FIFO"), "{e}");
    assert!(e.contains("(set by command line)"), "{e}");
    let e = d.expect_one(Severity::Error, &[&dir.display().to_string()]);
    assert!(e.contains("is a directory"), "{e}");
    assert_eq!(verbose, "7");
}

#[test]
fn a_default_user_file_that_is_a_directory_is_an_error() {
    let w = World::new();
    std::fs::create_dir_all(w.user_file()).unwrap();
    let (d, _) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &[&w.user_file().display().to_string()]);
    assert!(e.contains("is a directory"), "{e}");
    assert!(
        e.contains("mca_base_param_files lists it (by default)"),
        "{e}"
    );
}

#[test]
fn an_oversized_parameter_file_is_refused() {
    let w = World::new();
    let mut text = String::from("btl_base_verbose = 22\n");
    text.push_str(&"#".repeat(MAX_INPUT_FILE_LEN as usize));
    let path = w.write_user_file(&text);
    let (d, verbose) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &[&path.display().to_string()]);
    assert!(
        e.contains(&format!(
            "is {} bytes, more than such a file may hold (1048576 bytes (1 MiB))",
            text.len()
        )),
        "{e}"
    );
    // Nothing of it counts.
    assert_eq!(verbose, "0");
}

#[test]
fn a_tune_file_that_is_not_utf8_names_the_line() {
    let mut w = World::new();
    let path = w.root.path().join("bin.tune");
    std::fs::write(&path, b"--mca btl_base_verbose 5\n# \xff\n").unwrap();
    w.tune_files.push(path.clone());
    let (d, _) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &[&path.display().to_string()]);
    assert!(
        e.starts_with(&format!(
            "tune file {}:2: the text is not UTF-8 (an invalid byte at column 3)",
            path.display()
        )),
        "{e}"
    );
}

#[test]
fn an_override_file_that_cannot_be_read_is_an_error() {
    let w = World::new();
    std::fs::create_dir_all(w.override_file()).unwrap();
    let (d, _) = init_within_time(&w);
    let e = d.expect_one(Severity::Error, &[&w.override_file().display().to_string()]);
    assert!(
        e.starts_with("override parameter file ") && e.contains("is a directory"),
        "{e}"
    );
    assert!(e.contains("ask the administrator"), "{e}");
}

#[test]
fn an_override_fifo_does_not_block() {
    let w = World::new();
    mkfifo(&w.override_file());
    let (d, _) = init_within_time(&w);
    d.expect_one(Severity::Error, &["FIFO"]);
}

#[test]
fn a_missing_override_file_is_still_fine() {
    let w = World::new();
    let (d, _) = init_within_time(&w);
    assert!(d.is_empty(), "{d}");
}
