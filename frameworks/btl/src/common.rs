//! The parameters every btl has, declared once here and registered by each
//! btl with its own defaults (as Open MPI's btl base registers
//! `btl_<name>_exclusivity`, `_eager_limit`, … for every component from the
//! component's preset values).
//!
//! A btl adds a [`CommonParams`] field to its `#[derive(Params)]` struct:
//!
//! ```
//! use oxmpi_framework_btl::common::{CommonParams, CommonSpec, Setting};
//! use oxmpi_plugin_api::Params;
//!
//! const COMMON: CommonSpec = CommonSpec {
//!     exclusivity: Setting::new("100"),
//!     eager_limit: Setting::new("64k"),
//!     rndv_eager_limit: Setting::new("64k"),
//!     max_send_size: Setting::new("128k"),
//!     latency: Setting::new("100"),
//!     bandwidth: Setting::new("0"),
//!     flags: Setting::new("1"),
//! };
//!
//! #[derive(Params, Clone, Debug, PartialEq)]
//! pub struct Config {
//!     /// Comma-separated interfaces to use.
//!     #[param(default = "", level = User(Basic))]
//!     pub if_include: String,
//!     /// The common btl parameters.
//!     #[param(group = COMMON)]
//!     pub btl: CommonParams,
//! }
//!
//! assert_eq!(Config::DECLS[1].name.as_str(), "exclusivity");
//! assert_eq!(Config::default().btl.max_send_size, 128 * 1024);
//! Config::check_declarations().unwrap();
//! ```

use oxmpi_plugin_api::params::{check_field, read_field, ParamGroup, ParamSource};
use oxmpi_plugin_api::{Level, ParamDecl, ParamType, Tier};

/// One common parameter as a btl registers it: its default and, if the
/// btl has something specific to say, its own help text.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    /// The default, written as a user would write it.
    pub default: &'static str,
    /// The btl's own help text; `None` uses the framework's.
    pub help: Option<&'static str>,
}

impl Setting {
    /// This default, with the framework's help text.
    pub const fn new(default: &'static str) -> Setting {
        Setting {
            default,
            help: None,
        }
    }

    /// This default, with the btl's own help text.
    pub const fn with_help(default: &'static str, help: &'static str) -> Setting {
        Setting {
            default,
            help: Some(help),
        }
    }
}

/// A btl's settings of the common parameters (`#[param(group = SPEC)]`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CommonSpec {
    /// `btl_<name>_exclusivity`.
    pub exclusivity: Setting,
    /// `btl_<name>_eager_limit`.
    pub eager_limit: Setting,
    /// `btl_<name>_rndv_eager_limit`.
    pub rndv_eager_limit: Setting,
    /// `btl_<name>_max_send_size`.
    pub max_send_size: Setting,
    /// `btl_<name>_latency`.
    pub latency: Setting,
    /// `btl_<name>_bandwidth`.
    pub bandwidth: Setting,
    /// `btl_<name>_flags`.
    pub flags: Setting,
}

/// The values of the common btl parameters (what a btl's
/// [`crate::module::BtlModuleInfo`] is made of).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommonParams {
    /// `btl_<name>_exclusivity` (0 to 2^32-1): for each peer the pml uses
    /// only the btls of the highest exclusivity that reach it.
    pub exclusivity: u32,
    /// `btl_<name>_eager_limit` (bytes).
    pub eager_limit: usize,
    /// `btl_<name>_rndv_eager_limit` (bytes).
    pub rndv_eager_limit: usize,
    /// `btl_<name>_max_send_size` (bytes).
    pub max_send_size: usize,
    /// `btl_<name>_latency` (0 to 2^32-1; lower is faster).
    pub latency: u32,
    /// `btl_<name>_bandwidth` (Mbit/s, 0 to 2^32-1).
    pub bandwidth: u32,
    /// `btl_<name>_flags` ([`crate::module::flags`] bits).
    pub flags: u32,
}

const fn help(setting: Setting, framework: &'static str) -> &'static str {
    match setting.help {
        Some(h) => h,
        None => framework,
    }
}

const U32_MAX: i64 = u32::MAX as i64;

impl CommonParams {
    /// The seven declarations with `spec`'s defaults and help texts, in the
    /// order of the fields. Name, type, level and range are the framework's.
    pub const fn declarations(spec: &CommonSpec) -> [ParamDecl; 7] {
        let tuner_basic = Level::Tuner(Tier::Basic).number();
        let tuner_detailed = Level::Tuner(Tier::Detailed).number();
        [
            ParamDecl::new(
                "exclusivity",
                ParamType::Int,
                spec.exclusivity.default,
                Level::Developer(Tier::Basic).number(),
                help(
                    spec.exclusivity,
                    "Exclusivity of this btl: for each peer the pml uses only the btls of the \
                     highest exclusivity that reach it.",
                ),
            )
            .with_range(0, U32_MAX),
            ParamDecl::new(
                "eager_limit",
                ParamType::Size,
                spec.eager_limit.default,
                tuner_basic,
                help(
                    spec.eager_limit,
                    "Largest message (payload bytes) the pml sends eagerly over this btl.",
                ),
            ),
            ParamDecl::new(
                "rndv_eager_limit",
                ParamType::Size,
                spec.rndv_eager_limit.default,
                tuner_basic,
                help(
                    spec.rndv_eager_limit,
                    "Payload bytes the pml sends with the rendezvous header of a large message \
                     over this btl.",
                ),
            ),
            ParamDecl::new(
                "max_send_size",
                ParamType::Size,
                spec.max_send_size.default,
                tuner_basic,
                help(
                    spec.max_send_size,
                    "Largest payload of one fragment of a pipelined message over this btl.",
                ),
            ),
            ParamDecl::new(
                "latency",
                ParamType::Int,
                spec.latency.default,
                tuner_detailed,
                help(
                    spec.latency,
                    "Latency rating of this btl (lower is faster; eager sends use the lowest).",
                ),
            )
            .with_range(0, U32_MAX),
            ParamDecl::new(
                "bandwidth",
                ParamType::Int,
                spec.bandwidth.default,
                tuner_detailed,
                help(
                    spec.bandwidth,
                    "Bandwidth rating of this btl in Mbit/s (large messages are striped in \
                     proportion).",
                ),
            )
            .with_range(0, U32_MAX),
            ParamDecl::new(
                "flags",
                ParamType::Int,
                spec.flags.default,
                tuner_detailed,
                help(
                    spec.flags,
                    "Capability bits of this btl, as Open MPI's btl flags: 0x1 send, 0x2 put, \
                     0x4 get.",
                ),
            )
            .with_range(0, U32_MAX),
        ]
    }
}

impl ParamGroup for CommonParams {
    const LEN: usize = 7;

    fn read_group(source: &dyn ParamSource, decls: &[ParamDecl]) -> Result<Self, String> {
        Ok(CommonParams {
            exclusivity: read_field(source, &decls[0])?,
            eager_limit: read_field(source, &decls[1])?,
            rndv_eager_limit: read_field(source, &decls[2])?,
            max_send_size: read_field(source, &decls[3])?,
            latency: read_field(source, &decls[4])?,
            bandwidth: read_field(source, &decls[5])?,
            flags: read_field(source, &decls[6])?,
        })
    }

    fn check_group(decls: &[ParamDecl]) -> Result<(), String> {
        if decls.len() != Self::LEN {
            return Err(format!(
                "the common btl parameters are {} declarations, not {}",
                Self::LEN,
                decls.len()
            ));
        }
        check_field::<u32>(&decls[0])?;
        check_field::<usize>(&decls[1])?;
        check_field::<usize>(&decls[2])?;
        check_field::<usize>(&decls[3])?;
        check_field::<u32>(&decls[4])?;
        check_field::<u32>(&decls[5])?;
        check_field::<u32>(&decls[6])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oxmpi_plugin_api::params::DeclaredDefaults;
    use oxmpi_plugin_api::value::parse;
    use oxmpi_plugin_api::ParamValue;
    use std::collections::HashMap;

    const SPEC: CommonSpec = CommonSpec {
        exclusivity: Setting::new("7"),
        eager_limit: Setting::with_help("1k", "Own eager help."),
        rndv_eager_limit: Setting::new("2k"),
        max_send_size: Setting::new("3k"),
        latency: Setting::new("4"),
        bandwidth: Setting::new("5"),
        flags: Setting::new("1"),
    };

    const DECLS: [ParamDecl; 7] = CommonParams::declarations(&SPEC);

    #[test]
    fn each_btl_registers_the_same_parameters_with_its_own_defaults() {
        let names: Vec<&str> = DECLS.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "exclusivity",
                "eager_limit",
                "rndv_eager_limit",
                "max_send_size",
                "latency",
                "bandwidth",
                "flags"
            ]
        );
        let levels: Vec<u8> = DECLS.iter().map(|d| d.level).collect();
        assert_eq!(levels, [7, 4, 4, 4, 5, 5, 5]);
        assert_eq!(DECLS[1].help.as_str(), "Own eager help.");
        assert!(DECLS[0].help.starts_with("Exclusivity of this btl"));
        for d in &DECLS {
            assert_eq!(
                oxmpi_plugin_api::params::check_decl(&format!("btl_x_{}", d.name), d),
                None
            );
        }
        CommonParams::check_group(&DECLS).unwrap();
        assert_eq!(
            CommonParams::read_group(&DeclaredDefaults, &DECLS),
            Ok(CommonParams {
                exclusivity: 7,
                eager_limit: 1024,
                rndv_eager_limit: 2048,
                max_send_size: 3072,
                latency: 4,
                bandwidth: 5,
                flags: 1,
            })
        );
    }

    struct Fake(HashMap<&'static str, ParamValue>);

    impl ParamSource for Fake {
        fn value(&self, name: &str) -> Option<ParamValue> {
            self.0.get(name).cloned()
        }

        fn full_name(&self, name: &str) -> String {
            format!("btl_x_{name}")
        }
    }

    #[test]
    fn values_are_parsed_and_ranges_enforced_by_the_shared_parser() {
        assert!(parse(&DECLS[0], "-1", None).is_err());
        assert!(parse(&DECLS[5], "4294967296", None).is_err());
        let v = parse(&DECLS[5], "4294967295", None).unwrap();
        let read =
            CommonParams::read_group(&Fake(HashMap::from([("bandwidth", v.to_abi())])), &DECLS)
                .unwrap();
        assert_eq!(read.bandwidth, u32::MAX);
        let e = CommonParams::read_group(
            &Fake(HashMap::from([("latency", ParamValue::Int(-1))])),
            &DECLS,
        )
        .unwrap_err();
        assert_eq!(e, "parameter btl_x_latency: -1 does not fit in u32");
        assert!(CommonParams::check_group(&DECLS[..6]).is_err());
    }
}
