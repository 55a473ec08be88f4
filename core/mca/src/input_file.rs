//! Reading the text files a user names: parameter files (system, user,
//! override, `mca_base_param_files`), tune files (`--tune FILE`) and
//! hostfiles (`--hostfile FILE`).
//!
//! Such a path may name anything: `/dev/zero` (endless), a FIFO (an open
//! for reading waits for a writer, for ever), a directory, a socket, a log
//! file of several gigabytes, a binary. [`read_input_file`] reads it only if
//! it is a regular file of at most [`MAX_INPUT_FILE_LEN`] bytes of UTF-8
//! text, and otherwise returns an [`InputFileError`] whose message names
//! the file, says what is wrong and what to do:
//!
//! 1. `stat` the path (following symbolic links) and refuse anything but a
//!    regular file, and a regular file larger than the limit, before
//!    opening it;
//! 2. open it with `O_NONBLOCK` (and `O_NOCTTY`), so that a path swapped
//!    for a FIFO between the `stat` and the `open` cannot make the open
//!    wait, then check the opened file again (`fstat`): regular, within
//!    the limit;
//! 3. read at most limit + 1 bytes, so that a file that grows while it is
//!    read (or whose size `stat` does not tell, as in `/proc`) is refused
//!    instead of read without end;
//! 4. check that the bytes are UTF-8, naming the line and column of the
//!    first byte that is not.
//!
//! A file that does not exist is [`InputFileError::Unreadable`] with
//! [`InputFileError::is_not_found`] true, so that callers keep their own
//! rules for missing files (a missing default parameter file is normal).

use std::fmt;
use std::fs::{File, FileType};
use std::io::{self, Read};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// The largest parameter file, tune file or hostfile read: 1 MiB. Real
/// ones are a few kilobytes (a hostfile of 10,000 nodes is about 300 KB);
/// the limit stops a wrong path (a log, a core dump, a device) from
/// filling the memory.
pub const MAX_INPUT_FILE_LEN: u64 = 1024 * 1024;

/// Why a user-given file was not read. The `Display` form is one
/// paragraph: the kind of file and its path, what is wrong, what to do.
#[derive(Debug)]
pub enum InputFileError {
    /// The path could not be examined, opened or read (it does not exist,
    /// permission denied, an I/O error).
    Unreadable {
        /// What the file is for (`tune file`, `hostfile`, ...).
        kind: &'static str,
        /// The path as given.
        path: PathBuf,
        /// The system's reason.
        source: io::Error,
    },
    /// The path names something other than a regular file.
    NotRegular {
        /// What the file is for.
        kind: &'static str,
        /// The path as given.
        path: PathBuf,
        /// What it is instead (`a FIFO (named pipe)`, `a directory`, ...).
        what: &'static str,
    },
    /// The file is larger than the limit.
    TooLarge {
        /// What the file is for.
        kind: &'static str,
        /// The path as given.
        path: PathBuf,
        /// Its size, when the system told it; `None` when the file turned
        /// out larger than the limit only while it was read.
        size: Option<u64>,
        /// The limit in bytes.
        limit: u64,
    },
    /// The file is not UTF-8 text.
    NotUtf8 {
        /// What the file is for.
        kind: &'static str,
        /// The path as given.
        path: PathBuf,
        /// 1-based line of the first byte that is not UTF-8.
        line: usize,
        /// 1-based column (in bytes) of that byte within its line.
        column: usize,
    },
}

impl InputFileError {
    /// Whether the file does not exist (a missing file is not always an
    /// error for the caller).
    pub fn is_not_found(&self) -> bool {
        matches!(self, InputFileError::Unreadable { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        match self {
            InputFileError::Unreadable { path, .. }
            | InputFileError::NotRegular { path, .. }
            | InputFileError::TooLarge { path, .. }
            | InputFileError::NotUtf8 { path, .. } => path,
        }
    }
}

/// `1048576 bytes (1 MiB)`, or just the bytes when not a whole number of
/// KiB.
fn bytes(n: u64) -> String {
    // checked_rem: u64::is_multiple_of is newer than the workspace's MSRV.
    if n >= 1024 * 1024 && n.checked_rem(1024 * 1024) == Some(0) {
        format!("{n} bytes ({} MiB)", n / (1024 * 1024))
    } else if n >= 1024 && n.checked_rem(1024) == Some(0) {
        format!("{n} bytes ({} KiB)", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

impl fmt::Display for InputFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputFileError::Unreadable { kind, path, source } => {
                write!(
                    f,
                    "cannot read {kind} {}: {source}; check the path and the file's permissions",
                    path.display()
                )
            }
            InputFileError::NotRegular { kind, path, what } => write!(
                f,
                "{kind} {} is {what}, not a regular file, and was not read (reading a device or a pipe may block or never end); give the path of a regular text file",
                path.display()
            ),
            InputFileError::TooLarge {
                kind,
                path,
                size,
                limit,
            } => {
                let size = match size {
                    Some(size) => format!("is {}", bytes(*size)),
                    None => "grew beyond the limit while it was read".to_string(),
                };
                write!(
                    f,
                    "{kind} {} {size}, more than such a file may hold ({}), and was not read; check that the path names the right file",
                    path.display(),
                    bytes(*limit)
                )
            }
            InputFileError::NotUtf8 {
                kind,
                path,
                line,
                column,
            } => write!(
                f,
                "{kind} {}:{line}: the text is not UTF-8 (an invalid byte at column {column}), and the file was not read; save it as UTF-8 text or check that the path names the right file",
                path.display()
            ),
        }
    }
}

impl std::error::Error for InputFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            InputFileError::Unreadable { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// What a file type is, for [`InputFileError::NotRegular`]; `None` for a
/// regular file.
fn not_regular(ty: FileType) -> Option<&'static str> {
    Some(if ty.is_file() {
        return None;
    } else if ty.is_dir() {
        "a directory"
    } else if ty.is_fifo() {
        "a FIFO (named pipe)"
    } else if ty.is_char_device() {
        "a character device"
    } else if ty.is_block_device() {
        "a block device"
    } else if ty.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    })
}

/// Reads the user-given file `path` as text, within
/// [`MAX_INPUT_FILE_LEN`]; `kind` names what the file is for in messages
/// (`"tune file"`, `"hostfile"`). See the module documentation for the
/// checks and [`InputFileError`] for the errors. Never blocks on a FIFO
/// or a device.
pub fn read_input_file(path: &Path, kind: &'static str) -> Result<String, InputFileError> {
    read_input_file_within(path, kind, MAX_INPUT_FILE_LEN)
}

/// [`read_input_file`] with another size limit, in bytes.
pub fn read_input_file_within(
    path: &Path,
    kind: &'static str,
    limit: u64,
) -> Result<String, InputFileError> {
    let unreadable = |source: io::Error| InputFileError::Unreadable {
        kind,
        path: path.to_path_buf(),
        source,
    };
    let check = |meta: &std::fs::Metadata| -> Result<(), InputFileError> {
        if let Some(what) = not_regular(meta.file_type()) {
            return Err(InputFileError::NotRegular {
                kind,
                path: path.to_path_buf(),
                what,
            });
        }
        if meta.len() > limit {
            return Err(InputFileError::TooLarge {
                kind,
                path: path.to_path_buf(),
                size: Some(meta.len()),
                limit,
            });
        }
        Ok(())
    };
    check(&std::fs::metadata(path).map_err(unreadable)?)?;
    // O_NONBLOCK: opening a FIFO that replaced the file since the stat
    // returns at once instead of waiting for a writer; it changes nothing
    // for reading a regular file.
    let file = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
        .map_err(unreadable)?;
    check(&file.metadata().map_err(unreadable)?)?;
    let mut buf = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut buf)
        .map_err(unreadable)?;
    if buf.len() as u64 > limit {
        return Err(InputFileError::TooLarge {
            kind,
            path: path.to_path_buf(),
            size: None,
            limit,
        });
    }
    String::from_utf8(buf).map_err(|e| {
        let bytes = e.as_bytes();
        let bad = e.utf8_error().valid_up_to();
        let line_start = bytes[..bad]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        InputFileError::NotUtf8 {
            kind,
            path: path.to_path_buf(),
            line: bytes[..bad].iter().filter(|&&b| b == b'\n').count() + 1,
            column: bad - line_start + 1,
        }
    })
}

#[cfg(test)]
mod tests;
