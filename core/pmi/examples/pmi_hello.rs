//! A PMI client program for launcher tests: `pmi_hello [--barriers N]
//! [--abort CODE] [--no-finalize]`.
//!
//! It connects (or runs as a singleton), puts `hello-<rank>`, fences, reads
//! every other rank's value and checks it, prints `rank R of N: ok`,
//! finalizes and exits 0. On any error it prints the error and exits 1.
//!
//! - `--barriers N`: fence N times after the put (default 1; 0 reads
//!   without fencing, which only a lenient server allows).
//! - `--abort CODE`: right after connecting, ask the launcher to abort the
//!   job with CODE; exit with CODE if the launcher has not ended the
//!   process within the grace period.
//! - `--no-finalize`: exit 0 without finalizing.

#![forbid(unsafe_code)]

use std::process::ExitCode;

use oxmpi_pmi::mapping::parse_process_mapping;
use oxmpi_pmi::PmiClient;

struct Options {
    barriers: u32,
    abort: Option<i32>,
    finalize: bool,
}

fn parse_args() -> Result<Options, String> {
    let mut opts = Options {
        barriers: 1,
        abort: None,
        finalize: true,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--barriers" => {
                let v = value("--barriers")?;
                opts.barriers = v
                    .parse()
                    .map_err(|_| format!("--barriers {v:?}: not a count"))?;
            }
            "--abort" => {
                let v = value("--abort")?;
                opts.abort = Some(
                    v.parse()
                        .map_err(|_| format!("--abort {v:?}: not an exit code"))?,
                );
            }
            "--no-finalize" => opts.finalize = false,
            other => {
                return Err(format!(
                    "unknown argument {other:?}; usage: pmi_hello [--barriers N] [--abort CODE] [--no-finalize]"
                ))
            }
        }
    }
    Ok(opts)
}

fn value_of(rank: u32) -> String {
    format!("greetings-from-rank-{rank}")
}

fn run(opts: &Options) -> Result<(), String> {
    let mut pmi = PmiClient::from_env().map_err(|e| e.to_string())?;
    let (rank, size) = (pmi.rank(), pmi.size());
    let at = |what: &str, e: oxmpi_pmi::PmiError| format!("rank {rank}: {what}: {e}");
    if let Some(code) = opts.abort {
        pmi.abort(
            code,
            &format!("pmi_hello rank {rank} was asked to abort with {code}"),
        )
        .map_err(|e| at("abort", e))?;
        // The launcher did not end this process: do it.
        std::process::exit(code);
    }
    pmi.put(&format!("hello-{rank}"), &value_of(rank))
        .map_err(|e| at("put", e))?;
    for _ in 0..opts.barriers {
        pmi.barrier().map_err(|e| at("barrier", e))?;
    }
    for other in (0..size).filter(|&r| r != rank) {
        let key = format!("hello-{other}");
        match pmi.get(&key).map_err(|e| at("get", e))? {
            Some(v) if v == value_of(other) => {}
            Some(v) => {
                return Err(format!(
                    "rank {rank}: {key} is {v:?}, expected {:?}",
                    value_of(other)
                ))
            }
            None => return Err(format!("rank {rank}: {key} was not found")),
        }
    }
    if let Some(mapping) = pmi
        .get("PMI_process_mapping")
        .map_err(|e| at("get PMI_process_mapping", e))?
    {
        parse_process_mapping(&mapping, size as usize).map_err(|e| format!("rank {rank}: {e}"))?;
    }
    println!("rank {rank} of {size}: ok");
    if opts.finalize {
        pmi.finalize().map_err(|e| at("finalize", e))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let opts = match parse_args() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pmi_hello: {e}");
            return ExitCode::from(1);
        }
    };
    match run(&opts) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("pmi_hello: {e}");
            ExitCode::from(1)
        }
    }
}
