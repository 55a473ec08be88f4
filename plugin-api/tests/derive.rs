//! `#[derive(Params)]` and `#[derive(ParamEnum)]`: the generated table,
//! `Default` and reader agree; bad declarations are caught by
//! `check_declarations`; ranges and enum values are enforced by the value
//! parser the core resolves user input with, and the reader hands the
//! resolved values to typed fields.

use std::collections::HashMap;

use oxmpi_plugin_api::params::{DeclaredDefaults, ParamGroup, ParamSource, PLACEHOLDER};
use oxmpi_plugin_api::value::{parse, Value};
use oxmpi_plugin_api::{flags, ParamDecl, ParamEnum, ParamType, ParamValue, Params};

#[derive(ParamEnum, Copy, Clone, Debug, PartialEq, Eq)]
enum Family {
    None = 0,
    Ipv4 = 4,
    #[param(name = "inet6")]
    Ipv6 = 6,
}

/// A group declared by a "framework": its settings give each component's
/// defaults.
#[derive(Clone, Debug, PartialEq)]
struct Limits {
    eager: u64,
    weight: u32,
}

struct LimitsSpec {
    eager: &'static str,
    weight: &'static str,
}

impl Limits {
    const fn declarations(spec: &LimitsSpec) -> [ParamDecl; 2] {
        [
            ParamDecl::new("eager", ParamType::Size, spec.eager, 4, "Eager limit."),
            ParamDecl::new("weight", ParamType::Int, spec.weight, 5, "Weight.").with_range(0, 100),
        ]
    }
}

impl ParamGroup for Limits {
    const LEN: usize = 2;

    fn read_group(source: &dyn ParamSource, decls: &[ParamDecl]) -> Result<Self, String> {
        Ok(Limits {
            eager: oxmpi_plugin_api::params::read_field(source, &decls[0])?,
            weight: oxmpi_plugin_api::params::read_field(source, &decls[1])?,
        })
    }

    fn check_group(decls: &[ParamDecl]) -> Result<(), String> {
        oxmpi_plugin_api::params::check_field::<u64>(&decls[0])?;
        oxmpi_plugin_api::params::check_field::<u32>(&decls[1])
    }
}

const MINE: LimitsSpec = LimitsSpec {
    eager: "4k",
    weight: "7",
};

const LINKS_MAX: u32 = 64;

#[derive(Params, Clone, Debug, PartialEq)]
struct Config {
    /// Interfaces to use,
    /// comma-separated.
    #[param(default = "", level = User(Basic))]
    if_include: String,
    #[param(
        default = "1",
        level = Tuner(Basic),
        range = 1..=LINKS_MAX,
        help = "Links per interface."
    )]
    links: u32,
    /// Largest eager message.
    #[param(default = "64k", level = Tuner(Basic), size, deprecated_synonym = "test_x_old_eager")]
    eager_limit: usize,
    /// Whether to be fast.
    #[param(name = "fast", default = "yes", level = Developer(All), read_only, synonym = "test_x_quick")]
    use_fast: bool,
    /// A ratio.
    #[param(default = "0.25", level = Tuner(Detailed))]
    ratio: f64,
    /// Some names.
    #[param(default = "a, b", level = User(All), internal, deprecated)]
    names: Vec<String>,
    /// A family not to use.
    #[param(default = "ipv4", level = User(Detailed))]
    family: Family,
    /// A signed number.
    #[param(default = "-5", level = Developer(Basic))]
    offset: i64,
    #[param(group = MINE)]
    limits: Limits,
    #[param(skip = 42)]
    not_a_parameter: u8,
}

/// A source with some values set, as the core's services would hand them.
struct Fake(HashMap<&'static str, ParamValue>);

impl ParamSource for Fake {
    fn value(&self, name: &str) -> Option<ParamValue> {
        self.0.get(name).cloned()
    }

    fn full_name(&self, name: &str) -> String {
        format!("test_x_{name}")
    }
}

fn decl(name: &str) -> &'static ParamDecl {
    Config::DECLS
        .iter()
        .find(|d| d.name.as_str() == name)
        .unwrap_or_else(|| panic!("{name} is not declared"))
}

#[test]
fn the_table_has_one_declaration_per_parameter_in_field_order() {
    let names: Vec<&str> = Config::DECLS.iter().map(|d| d.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "if_include",
            "links",
            "eager_limit",
            "fast",
            "ratio",
            "names",
            "family",
            "offset",
            "eager",
            "weight"
        ]
    );
    let d = decl("if_include");
    assert_eq!(
        (d.ty, d.default.as_str(), d.level, d.help.as_str()),
        (
            ParamType::String,
            "",
            1,
            "Interfaces to use, comma-separated."
        )
    );
    let d = decl("links");
    assert_eq!(
        (d.ty, d.level, d.help.as_str()),
        (ParamType::Int, 4, "Links per interface.")
    );
    assert_eq!(d.range.into_option().map(|r| (r.min, r.max)), Some((1, 64)));
    let d = decl("eager_limit");
    assert_eq!((d.ty, d.default.as_str()), (ParamType::Size, "64k"));
    assert_eq!(d.synonyms.len(), 1);
    assert_eq!(d.synonyms[0].name.as_str(), "test_x_old_eager");
    assert!(d.synonyms[0].deprecated);
    let d = decl("fast");
    assert_eq!(
        (d.ty, d.level, d.flags),
        (ParamType::Bool, 9, flags::READ_ONLY)
    );
    assert!(!d.synonyms[0].deprecated);
    assert_eq!(decl("ratio").ty, ParamType::Double);
    let d = decl("names");
    assert_eq!(
        (d.ty, d.flags),
        (ParamType::List, flags::INTERNAL | flags::DEPRECATED)
    );
    let d = decl("family");
    assert_eq!(d.ty, ParamType::Enum);
    let values: Vec<(i64, &str)> = d
        .enum_values
        .iter()
        .map(|v| (v.value, v.name.as_str()))
        .collect();
    assert_eq!(values, [(0, "none"), (4, "ipv4"), (6, "inet6")]);
    assert_eq!(d.range.into_option(), None);
    let d = decl("weight");
    assert_eq!((d.default.as_str(), d.level), ("7", 5));
    assert_eq!(decl("eager").default.as_str(), "4k");
    Config::check_declarations().unwrap();
}

#[test]
fn default_is_the_parsed_declared_defaults() {
    assert_eq!(
        Config::default(),
        Config {
            if_include: String::new(),
            links: 1,
            eager_limit: 65536,
            use_fast: true,
            ratio: 0.25,
            names: vec!["a".into(), "b".into()],
            family: Family::Ipv4,
            offset: -5,
            limits: Limits {
                eager: 4096,
                weight: 7
            },
            not_a_parameter: 42,
        }
    );
    assert_eq!(Config::read_from(&DeclaredDefaults), Ok(Config::default()));
}

#[test]
fn the_reader_takes_each_value_from_the_source_and_defaults_for_the_rest() {
    let source = Fake(HashMap::from([
        ("if_include", ParamValue::Str("eth0".into())),
        ("links", ParamValue::Int(3)),
        ("eager_limit", ParamValue::Size(100)),
        ("family", ParamValue::Int(6)),
        ("weight", ParamValue::Int(99)),
    ]));
    let c = Config::read_from(&source).unwrap();
    assert_eq!(
        c,
        Config {
            if_include: "eth0".into(),
            links: 3,
            eager_limit: 100,
            family: Family::Ipv6,
            limits: Limits {
                eager: 4096,
                weight: 99
            },
            ..Config::default()
        }
    );
    assert_eq!(Family::Ipv6.name(), "inet6");
    assert_eq!(Family::Ipv6.number(), 6);
}

#[test]
fn values_that_do_not_fit_their_field_are_errors_naming_the_parameter() {
    let read = |name: &'static str, v: ParamValue| {
        Config::read_from(&Fake(HashMap::from([(name, v)]))).unwrap_err()
    };
    let e = read("links", ParamValue::Int(-1));
    assert_eq!(e, "parameter test_x_links: -1 does not fit in u32");
    let e = read("links", ParamValue::Bool(true));
    assert!(
        e.starts_with("parameter test_x_links: expected an integer, got a boolean"),
        "{e}"
    );
    let e = read("family", ParamValue::Int(5));
    assert_eq!(e, "parameter test_x_family: 5 is not a value of Family");
    let e = read("fast", ParamValue::Str("yes".into()));
    assert!(e.contains("expected a boolean"), "{e}");
}

/// The core resolves every user value with `value::parse` against the
/// declaration; the reader then gets the resolved value.
#[test]
fn ranges_and_enum_values_are_enforced_by_the_parser_the_core_uses() {
    let resolve = |name: &str, text: &str| -> Result<Config, String> {
        let d = decl(name);
        let v = parse(d, text, None).map_err(|e| e.0)?;
        let name: &'static str = d.name.as_str();
        Config::read_from(&Fake(HashMap::from([(name, v.to_abi())])))
    };
    assert_eq!(resolve("links", "64").unwrap().links, 64);
    assert!(resolve("links", "65").unwrap_err().contains("out of range"));
    assert!(resolve("links", "0").unwrap_err().contains("out of range"));
    assert_eq!(resolve("family", "IPV4").unwrap().family, Family::Ipv4);
    assert_eq!(resolve("family", "6").unwrap().family, Family::Ipv6);
    assert!(resolve("family", "5")
        .unwrap_err()
        .contains("not a valid choice"));
    assert!(resolve("family", "ipv6")
        .unwrap_err()
        .contains("not a valid choice"));
    assert_eq!(resolve("eager_limit", "2m").unwrap().eager_limit, 2 << 20);
    assert!(resolve("eager_limit", "-1").is_err());
    assert!(resolve("weight", "101")
        .unwrap_err()
        .contains("out of range"));
    assert_eq!(resolve("weight", "100").unwrap().limits.weight, 100);
    assert_eq!(
        parse(decl("names"), " x ,y", None),
        Ok(Value::List(vec!["x".into(), "y".into()]))
    );
}

// Only the generated checks are used.
#[allow(dead_code)]
#[derive(Params, Debug)]
struct BadDefault {
    /// An integer whose default is not one.
    #[param(default = "4x", level = User(Basic))]
    n: i32,
}

// Only the generated checks are used.
#[allow(dead_code)]
#[derive(Params, Debug)]
struct WrongRange {
    /// Declared from -1, but the field is unsigned.
    #[param(default = "1", level = User(Basic), range = -1..=10)]
    n: u32,
}

// Only the generated checks are used.
#[allow(dead_code)]
#[derive(Params, Debug)]
struct NoRange {
    /// An unsigned field without a range: `int` accepts negative numbers.
    #[param(default = "1", level = User(Basic))]
    n: u16,
}

// Only the generated checks are used.
#[allow(dead_code)]
#[derive(Params, Debug)]
struct SmallSize {
    /// A size in a field too small for every size.
    #[param(default = "1", level = User(Basic), size)]
    n: u32,
}

// Only the generated checks are used.
#[allow(dead_code)]
#[derive(Params, Debug)]
struct Twice {
    /// One.
    #[param(default = "1", level = User(Basic))]
    a: i32,
    /// The same name again.
    #[param(name = "a", default = "1", level = User(Basic))]
    b: i32,
}

#[test]
fn bad_declarations_are_caught_by_check_declarations() {
    let e = BadDefault::check_declarations().unwrap_err();
    assert!(e.contains("invalid default \"4x\""), "{e}");
    let e = WrongRange::check_declarations().unwrap_err();
    assert!(
        e.contains("accepts -1 to 10, which does not fit its u32 field"),
        "{e}"
    );
    let e = NoRange::check_declarations().unwrap_err();
    assert!(
        e.contains("does not fit its u16 field; declare a range"),
        "{e}"
    );
    let e = SmallSize::check_declarations().unwrap_err();
    assert!(e.contains("use u64 or usize"), "{e}");
    let e = Twice::check_declarations().unwrap_err();
    assert_eq!(e, "parameter a is declared twice");
    let panic = std::panic::catch_unwind(BadDefault::default).unwrap_err();
    let message = panic.downcast_ref::<String>().unwrap();
    assert!(
        message.starts_with("BadDefault: the default \"4x\" of parameter n is not valid"),
        "{message}"
    );
}

#[test]
fn the_placeholder_is_never_left_in_a_table() {
    for d in Config::DECLS {
        assert_ne!(d.level, PLACEHOLDER.level, "{}", d.name);
    }
}
