//! Forwarding the ranks' standard output and error, whole lines at a time,
//! so lines of different ranks never interleave mid-line. With
//! `--tag-output` each line gets `[1,RANK]<stdout>:`; with
//! `--output-filename DIR` lines go to `DIR/1/rank.RANK/stdout|stderr`.
//!
//! Output is never lost without a word: output files are created before
//! any rank starts (a directory that cannot be made stops the job before
//! launch), and a failed write, or a reader of mpirun's standard output
//! that went away, is reported to the run loop, which stops the job.

use std::fs::File;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A partial line longer than this is written out without waiting for its
/// end, so a rank printing without newlines cannot exhaust memory.
const MAX_PARTIAL: usize = 1 << 20;

/// Which stream.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// Where output goes.
pub struct Sink {
    tag: bool,
    /// `DIR/1` with `--output-filename DIR`; `None` for the terminal.
    job_dir: Option<PathBuf>,
    files: Vec<[Option<File>; 2]>,
    out: Vec<u8>,
    err: Vec<u8>,
    trouble: Option<Trouble>,
}

/// Output that could not be delivered; the job cannot go on without
/// losing it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Trouble {
    /// mpirun's standard output was closed by its reader (`| head`).
    StdoutClosed,
    /// A rank's output file could not be written.
    FileWrite {
        /// The file.
        path: PathBuf,
        /// The system's reason.
        reason: String,
    },
}

impl Sink {
    /// A sink that forwards to mpirun's standard output and error.
    pub fn terminal(tag: bool) -> Sink {
        Sink {
            tag,
            job_dir: None,
            files: Vec::new(),
            out: Vec::with_capacity(64 * 1024),
            err: Vec::new(),
            trouble: None,
        }
    }

    /// A sink that writes each rank's output to `dir/1/rank.RANK/stdout`
    /// and `.../stderr`, creating (and truncating) every file now.
    ///
    /// Directories mpirun creates are private (mode 0700) and files are
    /// created with mode 0600. An existing `1` or `rank.RANK` below `dir`
    /// must be a real directory (not a symbolic link) owned by this user and
    /// not writable by others, and an existing output file must be a
    /// regular file owned by this user; anything else is an error, so output
    /// never lands in a place another user prepared.
    ///
    /// # Errors
    /// A message naming the path that could not be used and why.
    pub fn files(ranks: usize, dir: &Path) -> Result<Sink, String> {
        let job_dir = dir.join("1");
        std::fs::create_dir_all(dir).map_err(|e| {
            format!(
                "--output-filename {}: cannot create the directory: {e}",
                dir.display()
            )
        })?;
        private_dir(&job_dir)?;
        let mut files = Vec::with_capacity(ranks);
        for rank in 0..ranks {
            private_dir(&job_dir.join(format!("rank.{rank}")))?;
            files.push([
                Some(private_file(&Self::file_path(
                    &job_dir,
                    rank as u32,
                    Stream::Stdout,
                ))?),
                Some(private_file(&Self::file_path(
                    &job_dir,
                    rank as u32,
                    Stream::Stderr,
                ))?),
            ]);
        }
        Ok(Sink {
            tag: false,
            job_dir: Some(job_dir),
            files,
            out: Vec::new(),
            err: Vec::new(),
            trouble: None,
        })
    }

    /// Why output can no longer be delivered, once; `None` while all is well.
    pub fn take_trouble(&mut self) -> Option<Trouble> {
        self.trouble.take()
    }

    /// The output file of `rank`'s `stream` (`DIR/1/rank.RANK/stdout`).
    fn file_path(job_dir: &Path, rank: u32, stream: Stream) -> PathBuf {
        let name = if stream == Stream::Stdout {
            "stdout"
        } else {
            "stderr"
        };
        job_dir.join(format!("rank.{rank}")).join(name)
    }

    /// Emits complete text (whole lines, or a final partial line).
    fn emit(&mut self, rank: u32, stream: Stream, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        if let Some(job_dir) = &self.job_dir {
            let Some(file) = self.files[rank as usize][stream as usize].as_mut() else {
                return;
            };
            if let Err(e) = file.write_all(text) {
                // Writing to this file again would fail the same way.
                self.files[rank as usize][stream as usize] = None;
                if self.trouble.is_none() {
                    self.trouble = Some(Trouble::FileWrite {
                        path: Self::file_path(job_dir, rank, stream),
                        reason: e.to_string(),
                    });
                }
            }
            return;
        }
        let buffer = if stream == Stream::Stdout {
            &mut self.out
        } else {
            &mut self.err
        };
        if !self.tag {
            buffer.extend_from_slice(text);
            return;
        }
        let label = if stream == Stream::Stdout {
            "stdout"
        } else {
            "stderr"
        };
        for line in text.split_inclusive(|&b| b == b'\n') {
            buffer.extend_from_slice(format!("[1,{rank}]<{label}>:").as_bytes());
            buffer.extend_from_slice(line);
            if !line.ends_with(b"\n") {
                buffer.push(b'\n');
            }
        }
    }

    /// Writes what was collected to mpirun's stdout and stderr. A reader
    /// of standard output that went away is recorded as [`Trouble`].
    pub fn flush(&mut self) {
        if !self.out.is_empty() {
            let mut stdout = io::stdout().lock();
            if let Err(e) = stdout.write_all(&self.out).and_then(|()| stdout.flush()) {
                if self.trouble.is_none() {
                    self.trouble = Some(if e.kind() == io::ErrorKind::BrokenPipe {
                        Trouble::StdoutClosed
                    } else {
                        Trouble::FileWrite {
                            path: "mpirun's standard output".into(),
                            reason: e.to_string(),
                        }
                    });
                }
            }
            self.out.clear();
        }
        if !self.err.is_empty() {
            let _ = io::stderr().lock().write_all(&self.err);
            self.err.clear();
        }
    }
}

/// Makes `dir` (mode 0700) if it does not exist, or checks that the
/// existing one is a directory of this user that others cannot write to.
fn private_dir(dir: &Path) -> Result<(), String> {
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(format!(
                "--output-filename: cannot create the directory {}: {e}",
                dir.display()
            ))
        }
    }
    let meta = std::fs::symlink_metadata(dir)
        .map_err(|e| format!("--output-filename: cannot inspect {}: {e}", dir.display()))?;
    let me = nix::unistd::geteuid().as_raw();
    let problem = if meta.file_type().is_symlink() {
        Some("is a symbolic link")
    } else if !meta.is_dir() {
        Some("is not a directory")
    } else if meta.uid() != me {
        Some("belongs to another user")
    } else if meta.mode() & 0o022 != 0 {
        Some("is writable by other users")
    } else {
        None
    };
    match problem {
        Some(what) => Err(format!(
            "--output-filename: {} {what}; mpirun writes output only into directories it owns alone: remove it or choose another directory",
            dir.display()
        )),
        None => Ok(()),
    }
}

/// Creates or truncates an output file (mode 0600), refusing symbolic
/// links and files of other users.
fn private_file(path: &Path) -> Result<File, String> {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            let why = if e.raw_os_error() == Some(libc::ELOOP) {
                "it is a symbolic link".to_string()
            } else {
                e.to_string()
            };
            format!("--output-filename: cannot create {}: {why}", path.display())
        })?;
    let meta = file
        .metadata()
        .map_err(|e| format!("--output-filename: cannot inspect {}: {e}", path.display()))?;
    let me = nix::unistd::geteuid().as_raw();
    if !meta.is_file() || meta.uid() != me {
        return Err(format!(
            "--output-filename: {} exists and is not a regular file of this user; remove it or choose another directory",
            path.display()
        ));
    }
    file.set_len(0)
        .map_err(|e| format!("--output-filename: cannot truncate {}: {e}", path.display()))?;
    Ok(file)
}

/// Per-rank, per-stream buffer of a partial line.
#[derive(Default)]
pub struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    /// Adds bytes read from the rank; complete lines go to the sink.
    pub fn push(&mut self, sink: &mut Sink, rank: u32, stream: Stream, data: &[u8]) {
        match data.iter().rposition(|&b| b == b'\n') {
            Some(last) => {
                if self.pending.is_empty() {
                    sink.emit(rank, stream, &data[..=last]);
                } else {
                    self.pending.extend_from_slice(&data[..=last]);
                    sink.emit(rank, stream, &self.pending);
                    self.pending.clear();
                }
                self.pending.extend_from_slice(&data[last + 1..]);
            }
            None => self.pending.extend_from_slice(data),
        }
        if self.pending.len() > MAX_PARTIAL {
            let whole = std::mem::take(&mut self.pending);
            sink.emit(rank, stream, &whole);
        }
    }

    /// End of stream: emits the final partial line.
    pub fn finish(&mut self, sink: &mut Sink, rank: u32, stream: Stream) {
        let rest = std::mem::take(&mut self.pending);
        sink.emit(rank, stream, &rest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_whole_lines_are_emitted_until_the_end() {
        let mut sink = Sink::terminal(true);
        let mut b = LineBuffer::default();
        b.push(&mut sink, 1, Stream::Stdout, b"hel");
        assert!(sink.out.is_empty());
        b.push(&mut sink, 1, Stream::Stdout, b"lo\nwor");
        assert_eq!(sink.out, b"[1,1]<stdout>:hello\n");
        b.finish(&mut sink, 1, Stream::Stdout);
        assert_eq!(sink.out, b"[1,1]<stdout>:hello\n[1,1]<stdout>:wor\n");
    }

    #[test]
    fn untagged_output_passes_through_unchanged() {
        let mut sink = Sink::terminal(false);
        let mut b = LineBuffer::default();
        b.push(&mut sink, 0, Stream::Stderr, b"a\nb\nc");
        b.finish(&mut sink, 0, Stream::Stderr);
        assert_eq!(sink.err, b"a\nb\nc");
    }
}
