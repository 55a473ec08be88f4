//! Forwarding the ranks' standard output and error, whole lines at a time,
//! so lines of different ranks never interleave mid-line. With
//! `--tag-output` each line gets `[1,RANK]<stdout>:`; with
//! `--output-filename DIR` lines go to `DIR/1/rank.RANK/stdout|stderr`.

use std::fs::File;
use std::io::{self, Write};
use std::path::PathBuf;

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
    dir: Option<PathBuf>,
    files: Vec<[Option<File>; 2]>,
    out: Vec<u8>,
    err: Vec<u8>,
    stdout_broken: bool,
}

impl Sink {
    /// A sink for `ranks` ranks.
    pub fn new(ranks: usize, tag: bool, dir: Option<PathBuf>) -> Sink {
        Sink {
            tag,
            dir,
            files: (0..ranks).map(|_| [None, None]).collect(),
            out: Vec::with_capacity(64 * 1024),
            err: Vec::new(),
            stdout_broken: false,
        }
    }

    fn file(&mut self, rank: u32, stream: Stream) -> io::Result<&mut File> {
        let slot = &mut self.files[rank as usize][stream as usize];
        if slot.is_none() {
            let dir = self
                .dir
                .as_ref()
                .expect("files only with a directory")
                .join("1")
                .join(format!("rank.{rank}"));
            std::fs::create_dir_all(&dir)?;
            let name = if stream == Stream::Stdout {
                "stdout"
            } else {
                "stderr"
            };
            *slot = Some(File::create(dir.join(name))?);
        }
        Ok(slot.as_mut().expect("just set"))
    }

    /// Emits complete text (whole lines, or a final partial line).
    fn emit(&mut self, rank: u32, stream: Stream, text: &[u8]) {
        if text.is_empty() {
            return;
        }
        if self.dir.is_some() {
            let result = self.file(rank, stream).and_then(|f| f.write_all(text));
            if let Err(e) = result {
                eprintln!("mpirun: cannot write the output of rank {rank}: {e}");
                self.dir = None;
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

    /// Writes what was collected to mpirun's stdout and stderr.
    pub fn flush(&mut self) {
        if !self.out.is_empty() {
            if !self.stdout_broken && io::stdout().lock().write_all(&self.out).is_err() {
                // Reader gone (mpirun ... | head): drop further output.
                self.stdout_broken = true;
            }
            self.out.clear();
        }
        if !self.err.is_empty() {
            let _ = io::stderr().lock().write_all(&self.err);
            self.err.clear();
        }
    }
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
        let mut sink = Sink::new(2, true, None);
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
        let mut sink = Sink::new(1, false, None);
        let mut b = LineBuffer::default();
        b.push(&mut sink, 0, Stream::Stderr, b"a\nb\nc");
        b.finish(&mut sink, 0, Stream::Stderr);
        assert_eq!(sink.err, b"a\nb\nc");
    }
}
