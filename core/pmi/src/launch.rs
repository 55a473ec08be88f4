//! How a rank finds its PMI server: the environment its launcher set.
//!
//! | variables | set by | meaning |
//! |---|---|---|
//! | `PMI_FD`, `PMI_RANK`, `PMI_SIZE` | hydra's `mpiexec` (default), oxmpi's `mpirun`, Slurm | an inherited, connected socket (hydra: `socketpair(AF_UNIX, SOCK_STREAM)`), this rank, the job size |
//! | `PMI_PORT=host:port`, `PMI_ID` | hydra's `mpiexec -pmi-port` | connect over TCP, then `cmd=initack pmiid=<PMI_ID>`; the server tells rank and size |
//! | none of them | — | a singleton: rank 0 of 1 |
//!
//! Observed with `mpiexec.mpich -n 2 env` (MPICH 4.0.2): hydra also sets
//! `MPI_LOCALNRANKS`, `MPI_LOCALRANKID` and
//! `MPIR_CVAR_CH3_INTERFACE_HOSTNAME`, which PMI does not use (MPICH 4.0
//! programs run without them); in `-pmi-port` mode it sets `PMI_PORT` and
//! `PMI_ID` but neither `PMI_RANK` nor `PMI_SIZE`. Like MPICH, a missing `PMI_RANK` means 0 and a missing
//! `PMI_SIZE` means 1; `PMI_FD` wins over `PMI_PORT`; an empty variable
//! counts as unset.

use crate::error::PmiError;

/// The way this process reaches its PMI server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Launch {
    /// No launcher: rank 0 of 1, with a key-value space of its own.
    Singleton,
    /// An inherited descriptor (`PMI_FD`).
    Fd {
        /// The descriptor number.
        fd: i32,
        /// `PMI_RANK` (0 when unset).
        rank: u32,
        /// `PMI_SIZE` (1 when unset).
        size: u32,
    },
    /// A TCP address (`PMI_PORT`).
    Port {
        /// The host part.
        host: String,
        /// The port.
        port: u16,
        /// `PMI_ID`: when set, rank and size come from the `initack`
        /// handshake instead of `rank` and `size`.
        id: Option<u32>,
        /// `PMI_RANK` (0 when unset).
        rank: u32,
        /// `PMI_SIZE` (1 when unset).
        size: u32,
    },
}

/// Reads the launch variables of this process's environment; see
/// [`launch_from`].
pub fn launch_from_env() -> Result<Launch, PmiError> {
    launch_from(|var| std::env::var(var).ok())
}

/// Reads the launch variables through `lookup` (a variable's value, or
/// `None` when unset).
///
/// Errors ([`PmiError::BadEnv`], naming the variable and its value): a
/// `PMI_FD`, `PMI_RANK`, `PMI_SIZE` or `PMI_ID` that is not a number, a
/// size of 0, a rank not below the size, a `PMI_PORT` that is not
/// `host:port`, and a `PMI_SIZE` above 1 without `PMI_FD` or `PMI_PORT`
/// (a launcher that forgot the connection; running as a singleton would
/// silently split the job into independent processes).
pub fn launch_from(lookup: impl Fn(&str) -> Option<String>) -> Result<Launch, PmiError> {
    let get = |var: &str| lookup(var).filter(|v| !v.is_empty());
    let rank_size = || -> Result<(u32, u32), PmiError> {
        let size = match get("PMI_SIZE") {
            Some(v) => number::<u32>("PMI_SIZE", &v)?,
            None => 1,
        };
        if size == 0 {
            return Err(bad("PMI_SIZE", "0", "a job has at least one rank"));
        }
        let rank = match get("PMI_RANK") {
            Some(v) => number::<u32>("PMI_RANK", &v)?,
            None => 0,
        };
        if rank >= size {
            return Err(bad(
                "PMI_RANK",
                &rank.to_string(),
                &format!("it is not below PMI_SIZE={size}"),
            ));
        }
        Ok((rank, size))
    };
    if let Some(v) = get("PMI_FD") {
        let fd = number::<i32>("PMI_FD", &v)?;
        if fd < 0 {
            return Err(bad("PMI_FD", &v, "a descriptor number is not negative"));
        }
        let (rank, size) = rank_size()?;
        return Ok(Launch::Fd { fd, rank, size });
    }
    if let Some(v) = get("PMI_PORT") {
        let (host, port) = host_port(&v)?;
        let id = match get("PMI_ID") {
            Some(id) => Some(number::<u32>("PMI_ID", &id)?),
            None => None,
        };
        let (rank, size) = rank_size()?;
        return Ok(Launch::Port {
            host,
            port,
            id,
            rank,
            size,
        });
    }
    if let Some(v) = get("PMI_SIZE") {
        if number::<u32>("PMI_SIZE", &v).is_ok_and(|n| n > 1) {
            return Err(bad(
                "PMI_SIZE",
                &v,
                "it announces a job of several ranks, but neither PMI_FD nor PMI_PORT says how \
                 to reach the launcher",
            ));
        }
    }
    Ok(Launch::Singleton)
}

fn bad(var: &'static str, value: &str, reason: &str) -> PmiError {
    PmiError::BadEnv {
        var,
        value: value.to_owned(),
        reason: reason.to_owned(),
    }
}

fn number<T: std::str::FromStr>(var: &'static str, value: &str) -> Result<T, PmiError> {
    value
        .trim()
        .parse()
        .map_err(|_| bad(var, value, "it is not a number in range"))
}

/// Splits `host:port` at its last colon (`[v6addr]:port` accepted).
fn host_port(value: &str) -> Result<(String, u16), PmiError> {
    let Some((host, port)) = value.rsplit_once(':') else {
        return Err(bad("PMI_PORT", value, "it is not of the form host:port"));
    };
    let host = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if host.is_empty() {
        return Err(bad("PMI_PORT", value, "the host part is empty"));
    }
    let port: u16 = port
        .trim()
        .parse()
        .ok()
        .filter(|&p| p != 0)
        .ok_or_else(|| {
            bad(
                "PMI_PORT",
                value,
                "the port is not a number from 1 to 65535",
            )
        })?;
    Ok((host.to_owned(), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn launch(vars: &[(&str, &str)]) -> Result<Launch, PmiError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        launch_from(|k| map.get(k).cloned())
    }

    #[test]
    fn what_hydra_sets_by_default() {
        assert_eq!(
            launch(&[("PMI_FD", "6"), ("PMI_RANK", "1"), ("PMI_SIZE", "2")]).unwrap(),
            Launch::Fd {
                fd: 6,
                rank: 1,
                size: 2
            }
        );
    }

    #[test]
    fn what_hydra_sets_with_pmi_port() {
        assert_eq!(
            launch(&[("PMI_PORT", "vm:45685"), ("PMI_ID", "1")]).unwrap(),
            Launch::Port {
                host: "vm".into(),
                port: 45685,
                id: Some(1),
                rank: 0,
                size: 1
            }
        );
        assert_eq!(
            launch(&[
                ("PMI_PORT", "[::1]:7"),
                ("PMI_RANK", "2"),
                ("PMI_SIZE", "3")
            ])
            .unwrap(),
            Launch::Port {
                host: "::1".into(),
                port: 7,
                id: None,
                rank: 2,
                size: 3
            }
        );
    }

    #[test]
    fn nothing_set_is_a_singleton() {
        assert_eq!(launch(&[]).unwrap(), Launch::Singleton);
        assert_eq!(launch(&[("PMI_FD", "")]).unwrap(), Launch::Singleton);
        assert_eq!(launch(&[("PMI_SIZE", "1")]).unwrap(), Launch::Singleton);
    }

    #[test]
    fn defaults_like_mpich() {
        assert_eq!(
            launch(&[("PMI_FD", "3")]).unwrap(),
            Launch::Fd {
                fd: 3,
                rank: 0,
                size: 1
            }
        );
    }

    #[test]
    fn bad_values_name_the_variable() {
        for (vars, var) in [
            (&[("PMI_FD", "x")][..], "PMI_FD"),
            (&[("PMI_FD", "-1")][..], "PMI_FD"),
            (
                &[("PMI_FD", "3"), ("PMI_RANK", "2"), ("PMI_SIZE", "2")][..],
                "PMI_RANK",
            ),
            (&[("PMI_FD", "3"), ("PMI_SIZE", "0")][..], "PMI_SIZE"),
            (&[("PMI_FD", "3"), ("PMI_SIZE", "many")][..], "PMI_SIZE"),
            (&[("PMI_PORT", "host")][..], "PMI_PORT"),
            (&[("PMI_PORT", ":5")][..], "PMI_PORT"),
            (&[("PMI_PORT", "h:0")][..], "PMI_PORT"),
            (&[("PMI_PORT", "h:99999")][..], "PMI_PORT"),
            (&[("PMI_PORT", "h:1"), ("PMI_ID", "one")][..], "PMI_ID"),
            (&[("PMI_SIZE", "4")][..], "PMI_SIZE"),
        ] {
            let e = launch(vars).unwrap_err();
            match &e {
                PmiError::BadEnv { var: v, .. } => assert_eq!(*v, var, "{e}"),
                other => panic!("{other}"),
            }
            let text = e.to_string();
            assert!(text.starts_with(var), "{text}");
            assert!(text.contains("singleton"), "{text}");
        }
    }
}
