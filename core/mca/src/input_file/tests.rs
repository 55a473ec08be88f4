use super::*;
use proptest::prelude::*;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixListener;
use std::sync::mpsc;
use std::time::Duration;

fn mkfifo(path: &Path) {
    let c = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `c` is a NUL-terminated path that lives across the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo {}", path.display());
}

/// Runs `read_input_file` on another thread and fails the test if it does
/// not return within 10 seconds (a FIFO open without O_NONBLOCK waits for
/// a writer for ever).
fn read_without_blocking(path: &Path) -> Result<String, InputFileError> {
    let (tx, rx) = mpsc::channel();
    let owned = path.to_path_buf();
    std::thread::spawn(move || {
        let _ = tx.send(read_input_file(&owned, "test file"));
    });
    rx.recv_timeout(Duration::from_secs(10))
        .unwrap_or_else(|_| panic!("reading {} blocked", path.display()))
}

#[test]
fn reads_a_regular_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.conf");
    std::fs::write(&path, "btl = tcp\n# é\n").unwrap();
    assert_eq!(
        read_input_file(&path, "parameter file").unwrap(),
        "btl = tcp\n# é\n"
    );
    // Through a symbolic link too.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&path, &link).unwrap();
    assert_eq!(
        read_input_file(&link, "parameter file").unwrap(),
        "btl = tcp\n# é\n"
    );
}

#[test]
fn a_missing_file_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nope");
    let e = read_input_file(&path, "tune file").unwrap_err();
    assert!(e.is_not_found(), "{e:?}");
    assert_eq!(e.path(), path);
    assert_eq!(
        e.to_string(),
        format!(
            "cannot read tune file {}: No such file or directory (os error 2); check the path and the file's permissions",
            path.display()
        )
    );
}

#[test]
fn dev_zero_is_refused_without_reading() {
    let e = read_without_blocking(Path::new("/dev/zero")).unwrap_err();
    assert!(!e.is_not_found());
    assert_eq!(
        e.to_string(),
        "test file /dev/zero is a character device, not a regular file, and was not read (reading a device or a pipe may block or never end); give the path of a regular text file"
    );
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    mkfifo(&fifo);
    let e = read_without_blocking(&fifo).unwrap_err();
    assert!(
        matches!(
            e,
            InputFileError::NotRegular {
                what: "a FIFO (named pipe)",
                ..
            }
        ),
        "{e:?}"
    );
    assert!(e.to_string().starts_with(&format!(
        "test file {} is a FIFO (named pipe), not a regular file",
        fifo.display()
    )));
    // A link to it as well.
    let link = dir.path().join("link");
    std::os::unix::fs::symlink(&fifo, &link).unwrap();
    assert!(matches!(
        read_without_blocking(&link),
        Err(InputFileError::NotRegular { .. })
    ));
}

#[test]
fn directories_and_sockets_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let e = read_without_blocking(dir.path()).unwrap_err();
    assert!(
        e.to_string().contains("is a directory, not a regular file"),
        "{e}"
    );
    let sock = dir.path().join("sock");
    let _listener = UnixListener::bind(&sock).unwrap();
    let e = read_without_blocking(&sock).unwrap_err();
    assert!(
        e.to_string().contains("is a socket, not a regular file"),
        "{e}"
    );
}

#[test]
fn a_block_device_is_refused() {
    // A block device node made for the test (root may, as CI runs), else
    // any block device of this machine.
    let dir = tempfile::tempdir().unwrap();
    let made = dir.path().join("blockdev");
    let c_path = std::ffi::CString::new(made.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mknod with a valid NUL-terminated path; loop device numbers.
    let device = if unsafe {
        libc::mknod(c_path.as_ptr(), libc::S_IFBLK | 0o600, libc::makedev(7, 0))
    } == 0
    {
        made
    } else {
        std::fs::read_dir("/dev")
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|p| std::fs::metadata(p).is_ok_and(|m| m.file_type().is_block_device()))
            .expect("no block device to test with: run as root (the test makes one) or on a machine with one in /dev")
    };
    let e = read_without_blocking(&device).unwrap_err();
    assert!(
        e.to_string()
            .contains("is a block device, not a regular file"),
        "{e}"
    );
}

#[test]
fn size_limit_is_inclusive_and_named_in_the_message() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hosts");
    std::fs::write(&path, "a".repeat(100)).unwrap();
    assert_eq!(
        read_input_file_within(&path, "hostfile", 100)
            .unwrap()
            .len(),
        100
    );
    let e = read_input_file_within(&path, "hostfile", 99).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "hostfile {} is 100 bytes, more than such a file may hold (99 bytes), and was not read; check that the path names the right file",
            path.display()
        )
    );
}

#[test]
fn the_default_limit_is_one_mebibyte() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.conf");
    std::fs::write(&path, vec![b'#'; MAX_INPUT_FILE_LEN as usize]).unwrap();
    assert!(read_input_file(&path, "parameter file").is_ok());
    std::fs::write(&path, vec![b'#'; MAX_INPUT_FILE_LEN as usize + 1]).unwrap();
    let e = read_input_file(&path, "parameter file").unwrap_err();
    assert!(
        e.to_string()
            .contains("is 1048577 bytes, more than such a file may hold (1048576 bytes (1 MiB))"),
        "{e}"
    );
}

#[test]
fn a_file_larger_than_its_stat_size_is_cut_off() {
    // /proc files report size 0 and hold more: only the bytes read count.
    let e = read_input_file_within(Path::new("/proc/self/maps"), "tune file", 16).unwrap_err();
    assert!(
        matches!(e, InputFileError::TooLarge { size: None, .. }),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "tune file /proc/self/maps grew beyond the limit while it was read, more than such a file may hold (16 bytes), and was not read; check that the path names the right file"
    );
}

#[test]
fn invalid_utf8_names_line_and_column() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bin");
    std::fs::write(&path, b"ok = 1\n\nx = ab\xff\xfe\n").unwrap();
    let e = read_input_file(&path, "parameter file").unwrap_err();
    assert!(
        matches!(
            e,
            InputFileError::NotUtf8 {
                line: 3,
                column: 7,
                ..
            }
        ),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        format!(
            "parameter file {}:3: the text is not UTF-8 (an invalid byte at column 7), and the file was not read; save it as UTF-8 text or check that the path names the right file",
            path.display()
        )
    );
    std::fs::write(&path, b"\x80").unwrap();
    assert!(matches!(
        read_input_file(&path, "x"),
        Err(InputFileError::NotUtf8 {
            line: 1,
            column: 1,
            ..
        })
    ));
}

#[test]
fn an_unreadable_file_is_reported() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("secret");
    std::fs::write(&path, "x = 1\n").unwrap();
    // A path through a regular file cannot be read, even by root.
    let through = path.join("inside");
    let e = read_input_file(&through, "tune file").unwrap_err();
    assert!(!e.is_not_found());
    assert!(
        e.to_string()
            .starts_with(&format!("cannot read tune file {}: ", through.display())),
        "{e}"
    );
    // A file without read permission, for users other than root (root
    // reads files whatever their mode).
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        let e = read_input_file(&path, "tune file").unwrap_err();
        assert!(!e.is_not_found());
        assert!(
            e.to_string()
                .starts_with(&format!("cannot read tune file {}: ", path.display())),
            "{e}"
        );
    }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Fifo,
    Directory,
    Socket,
    DevZero,
    DevNull,
    DevUrandom,
}

fn make(kind: Kind, at: &Path) -> Option<UnixListener> {
    match kind {
        Kind::Fifo => mkfifo(at),
        Kind::Directory => std::fs::create_dir(at).unwrap(),
        Kind::Socket => return Some(UnixListener::bind(at).unwrap()),
        Kind::DevZero => std::os::unix::fs::symlink("/dev/zero", at).unwrap(),
        Kind::DevNull => std::os::unix::fs::symlink("/dev/null", at).unwrap(),
        Kind::DevUrandom => std::os::unix::fs::symlink("/dev/urandom", at).unwrap(),
    }
    None
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_non_regular_kind_is_refused(
        kind in prop::sample::select(vec![
            Kind::Fifo, Kind::Directory, Kind::Socket, Kind::DevZero, Kind::DevNull, Kind::DevUrandom,
        ]),
        name in "[a-z][a-z0-9._-]{0,20}",
        links in 0usize..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join(&name);
        let _keep = make(kind, &target);
        let mut path = target;
        for i in 0..links {
            let link = dir.path().join(format!("link{i}"));
            std::os::unix::fs::symlink(&path, &link).unwrap();
            path = link;
        }
        let r = read_without_blocking(&path);
        prop_assert!(matches!(r, Err(InputFileError::NotRegular { .. })), "{kind:?}: {r:?}");
    }

    #[test]
    fn regular_files_read_back_or_fail_cleanly(
        content in prop::collection::vec(any::<u8>(), 0..300),
        limit in 0u64..400,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &content).unwrap();
        match read_input_file_within(&path, "test file", limit) {
            Ok(text) => {
                prop_assert!(content.len() as u64 <= limit);
                prop_assert_eq!(text.as_bytes(), &content[..]);
            }
            Err(InputFileError::TooLarge { size, .. }) => {
                prop_assert!(content.len() as u64 > limit);
                prop_assert_eq!(size, Some(content.len() as u64));
            }
            Err(InputFileError::NotUtf8 { line, .. }) => {
                prop_assert!(content.len() as u64 <= limit);
                prop_assert!(std::str::from_utf8(&content).is_err());
                prop_assert!(line <= content.iter().filter(|&&b| b == b'\n').count() + 1);
            }
            Err(e) => prop_assert!(false, "unexpected {e:?}"),
        }
    }
}
