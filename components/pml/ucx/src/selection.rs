//! How pml ucx rates itself: the transports and devices UCX finds here
//! (listed by [`crate::uct::resources`]) against `pml_ucx_tls` and
//! `pml_ucx_devices`.
//!
//! As Open MPI's pml ucx does, the component takes its own priority
//! (`pml_ucx_priority`, 51) only when UCX offers one of the transports
//! listed in `pml_ucx_tls` on a device matched by `pml_ucx_devices` — by
//! default the InfiniBand and RoCE transports on Mellanox devices. Without
//! such a transport it answers [`FALLBACK_PRIORITY`] (19), below ob1's 20,
//! so ob1 stays the default on a host with only TCP and shared memory
//! while `--mca pml ucx` still selects ucx.
//!
//! Matching: an entry `any` matches everything; any other entry is a
//! pattern where `*` stands for any run of characters and `?` for one
//! character (`mlx*`, `mlx5_0:1`, `rc_*`), compared with the whole name.
//! Transport names are UCT's (`rc_verbs`, `tcp`, `posix`, `self`, …),
//! device names UCT's too (`mlx5_0:1`, `eth0`, `memory`), as `ucx_info -d`
//! prints them.

use std::fmt;

/// The priority when no preferred transport is found: below ob1's 20.
pub const FALLBACK_PRIORITY: i32 = 19;

/// One transport on one device, as UCT lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resource {
    /// The transport (`tcp`, `rc_mlx5`, …).
    pub transport: String,
    /// The device (`eth0`, `mlx5_0:1`, `memory`, …).
    pub device: String,
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.transport, self.device)
    }
}

/// Whether `name` matches `pattern` (`*`: any run, `?`: one character).
pub fn glob(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    // The classic backtracking match: remember the last `*` and how much
    // of the name it has taken so far.
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|&c| c == '*')
}

/// Whether `name` matches one entry of `list` (`any` matches everything).
pub fn listed(list: &[String], name: &str) -> bool {
    list.iter().any(|entry| {
        let entry = entry.trim();
        entry == "any" || glob(entry, name)
    })
}

/// What the resources say about the priority.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rating {
    /// The priority to answer.
    pub priority: i32,
    /// The resources that matched both lists (empty: the fallback).
    pub preferred: Vec<Resource>,
}

/// Rates `found` against the transports `tls` and devices `devices`:
/// `priority` when one resource matches both, otherwise
/// [`FALLBACK_PRIORITY`] (or `priority` when that is lower still).
pub fn rate(found: &[Resource], tls: &[String], devices: &[String], priority: i32) -> Rating {
    let preferred: Vec<Resource> = found
        .iter()
        .filter(|r| listed(tls, &r.transport) && listed(devices, &r.device))
        .cloned()
        .collect();
    let priority = if preferred.is_empty() {
        FALLBACK_PRIORITY.min(priority)
    } else {
        priority
    };
    Rating {
        priority,
        preferred,
    }
}

/// The sentence the component logs about its rating.
pub fn explain(found: &[Resource], tls: &[String], devices: &[String], rating: &Rating) -> String {
    let all: Vec<String> = found.iter().map(Resource::to_string).collect();
    let found_text = if all.is_empty() {
        "UCX lists no transport here".to_string()
    } else {
        format!("UCX lists the transports {}", all.join(", "))
    };
    if rating.preferred.is_empty() {
        format!(
            "{found_text}; none is one of pml_ucx_tls ({}) on a device matching pml_ucx_devices ({}), \
             so pml ucx asks for priority {} (below ob1's 20: ob1 is chosen unless --mca pml ucx asks for ucx)",
            tls.join(","),
            devices.join(","),
            rating.priority
        )
    } else {
        let chosen: Vec<String> = rating.preferred.iter().map(Resource::to_string).collect();
        format!(
            "{found_text}; {} match pml_ucx_tls and pml_ucx_devices, so pml ucx asks for priority {} (pml_ucx_priority)",
            chosen.join(", "),
            rating.priority
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &str) -> Vec<String> {
        s.split(',').map(str::to_string).collect()
    }

    fn res(t: &str, d: &str) -> Resource {
        Resource {
            transport: t.to_string(),
            device: d.to_string(),
        }
    }

    /// Open MPI 4.1's defaults, which are ours.
    fn defaults() -> (Vec<String>, Vec<String>) {
        (
            list("rc_verbs,ud_verbs,rc_mlx5,dc_mlx5,ud_mlx5,cuda_ipc,rocm_ipc"),
            list("mlx*"),
        )
    }

    #[test]
    fn glob_patterns() {
        assert!(glob("mlx*", "mlx5_0:1"));
        assert!(glob("mlx*", "mlx"));
        assert!(!glob("mlx*", "eth0"));
        assert!(!glob("mlx*", "xmlx5"));
        assert!(glob("*", ""));
        assert!(glob("*", "anything"));
        assert!(glob("mlx5_?:1", "mlx5_0:1"));
        assert!(!glob("mlx5_?:1", "mlx5_10:1"));
        assert!(glob("*_mlx5", "dc_mlx5"));
        assert!(glob("a*b*c", "aXXbYYc"));
        assert!(!glob("a*b*c", "aXXbYY"));
        assert!(glob("tcp", "tcp"));
        assert!(!glob("tcp", "tcpx"));
        assert!(!glob("", "x"));
        assert!(glob("", ""));
    }

    #[test]
    fn any_matches_every_name_and_entries_are_trimmed() {
        assert!(listed(&list("any"), "tcp"));
        assert!(listed(&list("tcp,any"), "posix"));
        assert!(listed(&list("posix, tcp"), "tcp"));
        assert!(!listed(&list("posix,self"), "tcp"));
        assert!(!listed(&[], "tcp"));
    }

    #[test]
    fn tcp_and_shared_memory_only_fall_back_below_ob1() {
        let (tls, devices) = defaults();
        let found = [
            res("self", "memory"),
            res("tcp", "lo"),
            res("tcp", "eth0"),
            res("posix", "memory"),
            res("sysv", "memory"),
            res("cma", "memory"),
        ];
        let r = rate(&found, &tls, &devices, 51);
        assert_eq!(r.priority, FALLBACK_PRIORITY);
        assert!(r.priority < 20, "below ob1's priority");
        assert!(r.preferred.is_empty());
        let text = explain(&found, &tls, &devices, &r);
        assert!(text.contains("tcp/eth0"), "{text}");
        assert!(text.contains("priority 19"), "{text}");
        assert!(text.contains("pml_ucx_tls (rc_verbs,"), "{text}");
    }

    #[test]
    fn a_mellanox_transport_takes_the_configured_priority() {
        let (tls, devices) = defaults();
        let found = [
            res("tcp", "ib0"),
            res("rc_mlx5", "mlx5_0:1"),
            res("ud_verbs", "mlx5_0:1"),
        ];
        let r = rate(&found, &tls, &devices, 51);
        assert_eq!(r.priority, 51);
        assert_eq!(
            r.preferred,
            vec![res("rc_mlx5", "mlx5_0:1"), res("ud_verbs", "mlx5_0:1")]
        );
        let text = explain(&found, &tls, &devices, &r);
        assert!(
            text.contains("rc_mlx5/mlx5_0:1, ud_verbs/mlx5_0:1 match"),
            "{text}"
        );
        assert!(text.contains("priority 51"), "{text}");
    }

    #[test]
    fn a_listed_transport_on_an_unlisted_device_does_not_count() {
        let (tls, devices) = defaults();
        let r = rate(&[res("rc_verbs", "qib0:1")], &tls, &devices, 51);
        assert_eq!(r.priority, FALLBACK_PRIORITY);
    }

    #[test]
    fn the_lists_can_name_tcp_and_any_device() {
        let found = [res("tcp", "lo"), res("self", "memory")];
        let r = rate(&found, &list("tcp"), &list("any"), 51);
        assert_eq!(r.priority, 51);
        assert_eq!(r.preferred, vec![res("tcp", "lo")]);
        let r = rate(&found, &list("any"), &list("any"), 70);
        assert_eq!(r.priority, 70);
        assert_eq!(r.preferred.len(), 2);
    }

    #[test]
    fn a_priority_below_the_fallback_stays_below_it() {
        let r = rate(&[res("tcp", "lo")], &list("rc_mlx5"), &list("mlx*"), 5);
        assert_eq!(r.priority, 5);
    }

    #[test]
    fn no_resource_at_all_is_explained() {
        let (tls, devices) = defaults();
        let r = rate(&[], &tls, &devices, 51);
        let text = explain(&[], &tls, &devices, &r);
        assert!(text.starts_with("UCX lists no transport here"), "{text}");
    }
}
