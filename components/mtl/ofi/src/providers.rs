//! Provider discovery: which libfabric providers offer tagged messages on
//! reliable-datagram endpoints here (`fi_getinfo`, best first as
//! libfabric orders them), which of them `mtl_ofi_provider_include` /
//! `mtl_ofi_provider_exclude` allow, and whether a provider offers what
//! the `ofi_tag_full` layout needs.

use crate::fabric::InfoList;

/// The default of `mtl_ofi_provider_exclude`: providers that work
/// everywhere but are slower than the btls over the same hardware (shared
/// memory, TCP, UDP, sockets, …), so the MTL stays out of the way unless a
/// real fabric is there or the user asks for one.
pub const DEFAULT_EXCLUDE: &str = "shm,sockets,tcp,udp,rstream,usnic,net";

/// Where a host shows the fabric devices the providers left after the
/// default exclude list need: RDMA devices (verbs, psm3, efa, usnic),
/// Omni-Path and older PSM adapters, Slingshot (cxi), Aries (gni).
const DEVICE_PLACES: &[(&str, &str)] = &[
    ("sys/class/infiniband", ""),
    ("dev", "hfi1"),
    ("dev", "ipath"),
    ("dev", "qib"),
    ("dev", "cxi"),
    ("dev", "kgni"),
];

/// The fabric devices under `root` (`/` on a host): the entries of
/// `DEVICE_PLACES` found, as paths.
pub fn fabric_devices(root: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    for (dir, prefix) in DEVICE_PLACES {
        let Ok(entries) = std::fs::read_dir(root.join(dir)) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(prefix) {
                found.push(format!("/{dir}/{name}"));
            }
        }
    }
    found.sort();
    found
}

/// Why listing the providers would find nothing usable, when that is
/// known without asking libfabric (which loads and starts every provider,
/// a noticeable part of a job's start): the default exclude list leaves
/// only providers that need a fabric device, and the host has none.
pub fn nothing_to_find(choice: &Choice, devices: &[String]) -> Option<String> {
    match choice {
        Choice::Exclude { default: true, .. } if devices.is_empty() => Some(
            "this host has no fabric device (none in /sys/class/infiniband, no /dev/hfi1*, \
             /dev/cxi*, …), and mtl_ofi_provider_exclude's default leaves out the providers \
             that run without one (use one with --mca mtl_ofi_provider_include tcp)"
                .to_string(),
        ),
        _ => None,
    }
}

/// A provider list parameter, split (empty items dropped, spaces trimmed).
pub fn split_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether provider `name` is named by list item `item`: the item is the
/// provider's whole name (`tcp;ofi_rxm`) or one of the `;`-separated
/// names of a layered provider (`tcp`, `ofi_rxm`), compared without case.
pub fn names(item: &str, name: &str) -> bool {
    name.eq_ignore_ascii_case(item) || name.split(';').any(|part| part.eq_ignore_ascii_case(item))
}

/// How the include and exclude lists choose providers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Choice {
    /// Only the providers named here (`mtl_ofi_provider_include`).
    Include(Vec<String>),
    /// Every provider but those named here (`mtl_ofi_provider_exclude`).
    Exclude {
        /// The names.
        items: Vec<String>,
        /// Whether the list is the default one (for the reasons).
        default: bool,
    },
}

impl Choice {
    /// The choice the two parameters make.
    ///
    /// # Errors
    ///
    /// Both are set: the include list is not empty and the exclude list is
    /// not its default.
    pub fn from_params(include: &str, exclude: &str) -> Result<Choice, String> {
        let inc = split_list(include);
        let exc = split_list(exclude);
        let default = exc == split_list(DEFAULT_EXCLUDE);
        if !inc.is_empty() && !default {
            return Err(format!(
                "mtl_ofi_provider_include (\"{include}\") and mtl_ofi_provider_exclude \
                 (\"{exclude}\") are both set; they are mutually exclusive: set only one"
            ));
        }
        Ok(if inc.is_empty() {
            Choice::Exclude {
                items: exc,
                default,
            }
        } else {
            Choice::Include(inc)
        })
    }

    /// `Ok` when provider `name` may be used, or why not.
    pub fn allows(&self, name: &str) -> Result<(), String> {
        match self {
            Choice::Include(items) => {
                if items.iter().any(|i| names(i, name)) {
                    Ok(())
                } else {
                    Err(format!(
                        "not in mtl_ofi_provider_include (\"{}\")",
                        items.join(",")
                    ))
                }
            }
            Choice::Exclude { items, default } => match items.iter().find(|i| names(i, name)) {
                Some(item) => Err(format!(
                    "excluded by mtl_ofi_provider_exclude{} (\"{item}\"){}",
                    if *default { "'s default" } else { "" },
                    if *default {
                        format!("; use it with --mca mtl_ofi_provider_include {item}")
                    } else {
                        String::new()
                    }
                )),
                None => Ok(()),
            },
        }
    }
}

/// Why provider `name` of libfabric `version` (`fi_version()`) cannot
/// carry MPI's matching, when a known defect of that release stops it.
///
/// libfabric 1.17's shm provider matches a message that arrived before
/// its receive only when the tags are equal: the receive's ignore bits
/// are not applied to it, so `MPI_ANY_SOURCE`, `MPI_ANY_TAG` and the
/// synchronous-send bit miss every such message; and it treats `FI_PEEK`
/// as an ordinary receive (probes would consume messages).
pub fn known_defect(name: &str, version: u32) -> Option<String> {
    let (major, minor) = (version >> 16, version & 0xffff);
    (name.eq_ignore_ascii_case("shm") && (major, minor) < (1, 18)).then(|| {
        format!(
            "libfabric {major}.{minor}'s shm provider cannot carry MPI's matching: it ignores a \
             receive's ignore bits for messages that arrived before the receive (wildcard \
             receives and synchronous sends would miss them) and has no FI_PEEK (probes); use \
             the sm btl for shared memory (the default pml ob1)"
        )
    })
}

/// One provider `fi_getinfo` offered, and whether the lists allow it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offered {
    /// The provider's name (`tcp;ofi_rxm`, `shm`, …).
    pub name: String,
    /// `Ok` when it may be used, or why not.
    pub allowed: Result<(), String>,
}

/// The providers of `list` in libfabric's order, each once (a provider
/// may appear once per domain), with the choice's verdict (and a known
/// defect of libfabric `version`'s provider).
pub fn offered(list: &InfoList, choice: &Choice, version: u32) -> Vec<Offered> {
    let mut seen: Vec<Offered> = Vec::new();
    for entry in list.iter() {
        let name = entry.provider();
        if seen.iter().any(|o| o.name == name) {
            continue;
        }
        let allowed = choice
            .allows(&name)
            .and_then(|()| match known_defect(&name, version) {
                Some(why) => Err(why),
                None => Ok(()),
            });
        seen.push(Offered { name, allowed });
    }
    seen
}

/// The reason the MTL cannot run when no offered provider is allowed:
/// every provider with its reason, or that libfabric offered none.
pub fn none_usable(offered: &[Offered]) -> String {
    if offered.is_empty() {
        return "libfabric offers no provider with tagged messages on reliable-datagram \
                endpoints here (see fi_info -c FI_TAGGED -t FI_EP_RDM)"
            .to_string();
    }
    // Providers the include list leaves out say nothing the list does not:
    // named only when no other reason is there.
    let reasons = |skip_unlisted: bool| -> Vec<String> {
        offered
            .iter()
            .filter_map(|o| o.allowed.as_ref().err().map(|why| (o, why)))
            .filter(|(_, why)| !(skip_unlisted && why.starts_with("not in ")))
            .map(|(o, why)| format!("{}: {why}", o.name))
            .collect()
    };
    let mut each = reasons(true);
    if each.is_empty() {
        each = reasons(false);
    }
    format!("no libfabric provider may be used ({})", each.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_items_name_whole_providers_or_their_layers() {
        assert!(names("tcp", "tcp;ofi_rxm"));
        assert!(names("ofi_rxm", "tcp;ofi_rxm"));
        assert!(names("TCP;ofi_rxm", "tcp;ofi_rxm"));
        assert!(names("shm", "shm"));
        assert!(!names("tc", "tcp;ofi_rxm"));
        assert!(!names("shm", "tcp;ofi_rxm"));
    }

    #[test]
    fn the_default_exclude_list_leaves_out_the_everywhere_providers() {
        let choice = Choice::from_params("", DEFAULT_EXCLUDE).unwrap();
        for p in ["shm", "tcp;ofi_rxm", "udp;ofi_rxd", "sockets", "net"] {
            let why = choice.allows(p).unwrap_err();
            assert!(why.contains("default"), "{p}: {why}");
            assert!(why.contains("mtl_ofi_provider_include"), "{why}");
        }
        for p in ["psm2", "psm3", "efa", "verbs;ofi_rxm", "cxi"] {
            assert_eq!(choice.allows(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn include_keeps_only_the_named_providers() {
        let choice = Choice::from_params("shm, tcp", DEFAULT_EXCLUDE).unwrap();
        assert_eq!(choice.allows("shm"), Ok(()));
        assert_eq!(choice.allows("tcp;ofi_rxm"), Ok(()));
        let why = choice.allows("psm2").unwrap_err();
        assert_eq!(why, "not in mtl_ofi_provider_include (\"shm,tcp\")");
    }

    #[test]
    fn a_set_exclude_list_replaces_the_default() {
        let choice = Choice::from_params("", "psm2").unwrap();
        assert_eq!(choice.allows("tcp;ofi_rxm"), Ok(()));
        assert_eq!(
            choice.allows("psm2").unwrap_err(),
            "excluded by mtl_ofi_provider_exclude (\"psm2\")"
        );
        // An empty exclude list allows everything.
        let all = Choice::from_params("", "").unwrap();
        assert_eq!(all.allows("shm"), Ok(()));
    }

    #[test]
    fn include_and_exclude_both_set_is_an_error_naming_both() {
        let e = Choice::from_params("tcp", "shm").unwrap_err();
        assert!(e.contains("mtl_ofi_provider_include (\"tcp\")"), "{e}");
        assert!(e.contains("mtl_ofi_provider_exclude (\"shm\")"), "{e}");
        assert!(e.contains("mutually exclusive"), "{e}");
    }

    #[test]
    fn libfabric_1_17s_shm_is_refused_with_the_reason_and_later_ones_are_not() {
        let v = |major: u32, minor: u32| (major << 16) | minor;
        let why = known_defect("shm", v(1, 17)).unwrap();
        assert!(why.contains("libfabric 1.17's shm"), "{why}");
        assert!(why.contains("ignore bits"), "{why}");
        assert!(why.contains("sm btl"), "{why}");
        assert_eq!(known_defect("shm", v(1, 18)), None);
        assert_eq!(known_defect("shm", v(2, 0)), None);
        assert_eq!(known_defect("tcp;ofi_rxm", v(1, 17)), None);
    }

    #[test]
    fn without_a_fabric_device_the_default_list_needs_no_listing() {
        let root = std::env::temp_dir().join(format!("ofi-devices-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("dev")).unwrap();
        std::fs::write(root.join("dev/null"), b"").unwrap();
        assert!(fabric_devices(&root).is_empty());
        let default = Choice::from_params("", DEFAULT_EXCLUDE).unwrap();
        let why = nothing_to_find(&default, &[]).unwrap();
        assert!(why.contains("no fabric device"), "{why}");
        // A device, an include list or another exclude list: ask libfabric.
        std::fs::create_dir_all(root.join("sys/class/infiniband/mlx5_0")).unwrap();
        std::fs::write(root.join("dev/hfi1_0"), b"").unwrap();
        let devices = fabric_devices(&root);
        assert_eq!(devices, ["/dev/hfi1_0", "/sys/class/infiniband/mlx5_0"]);
        assert_eq!(nothing_to_find(&default, &devices), None);
        let include = Choice::from_params("tcp", DEFAULT_EXCLUDE).unwrap();
        assert_eq!(nothing_to_find(&include, &[]), None);
        let exclude = Choice::from_params("", "psm2").unwrap();
        assert_eq!(nothing_to_find(&exclude, &[]), None);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn no_usable_provider_lists_each_with_its_reason() {
        let offered = vec![
            Offered {
                name: "tcp;ofi_rxm".into(),
                allowed: Err("excluded".into()),
            },
            Offered {
                name: "shm".into(),
                allowed: Err("excluded too".into()),
            },
        ];
        assert_eq!(
            none_usable(&offered),
            "no libfabric provider may be used (tcp;ofi_rxm: excluded; shm: excluded too)"
        );
        assert!(none_usable(&[]).contains("fi_info"));
        let listed = vec![
            Offered {
                name: "tcp;ofi_rxm".into(),
                allowed: Err("not in mtl_ofi_provider_include (\"shm\")".into()),
            },
            Offered {
                name: "shm".into(),
                allowed: Err("broken here".into()),
            },
        ];
        assert_eq!(
            none_usable(&listed),
            "no libfabric provider may be used (shm: broken here)"
        );
    }
}
