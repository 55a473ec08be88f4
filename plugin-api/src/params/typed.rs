//! Typed parameters: what `#[derive(Params)]` and `#[derive(ParamEnum)]`
//! generate code against.
//!
//! A component declares its parameters once, as the fields of one struct:
//!
//! ```
//! use oxmpi_plugin_api::Params;
//!
//! #[derive(Params, Clone, Debug, PartialEq)]
//! pub struct Config {
//!     /// Number of links per interface.
//!     #[param(default = "1", level = Tuner(Basic), range = 1..=64)]
//!     pub links: u32,
//!     /// Largest message sent eagerly.
//!     #[param(default = "64k", level = Tuner(Basic), size)]
//!     pub eager_limit: usize,
//! }
//!
//! // The table for the root module, `Default` and the reader agree:
//! assert_eq!(Config::DECLS[0].name.as_str(), "links");
//! assert_eq!(Config::default().eager_limit, 65536);
//! Config::check_declarations().unwrap();
//! ```
//!
//! See `docs/components.md` for every attribute.

use crate::value;
use crate::{ComponentContext, EnumValue, ParamDecl, ParamType, ParamValue};
use std::collections::HashSet;

/// Where a parameter struct reads its values from.
pub trait ParamSource {
    /// The value of the parameter `name` (relative to the owner's prefix,
    /// `links` for `btl_tcp_links`), or `None` when the source has none: the
    /// declared default applies then.
    fn value(&self, name: &str) -> Option<ParamValue>;
    /// The name of parameter `name` as messages should show it.
    fn full_name(&self, name: &str) -> String;
}

/// The core's resolved values, through the services table: a parameter the
/// core does not know (only possible with a fake services table in tests)
/// takes its declared default.
impl ParamSource for ComponentContext {
    fn value(&self, name: &str) -> Option<ParamValue> {
        self.param(name)
    }

    fn full_name(&self, name: &str) -> String {
        format!("{}_{}_{}", self.framework, self.component, name)
    }
}

/// No values at all: every parameter takes its declared default (parsed by
/// [`crate::value::parse`], with a leading `~/` left as it is). The
/// generated `Default` reads from this source.
#[derive(Copy, Clone, Debug, Default)]
pub struct DeclaredDefaults;

impl ParamSource for DeclaredDefaults {
    fn value(&self, _name: &str) -> Option<ParamValue> {
        None
    }

    fn full_name(&self, name: &str) -> String {
        name.to_string()
    }
}

/// A Rust type a parameter can be read into.
///
/// Implemented for `i64`, `i32`, `i16`, `u64`, `u32`, `u16`, `u8`, `usize`
/// (`int` parameters, or `size` ones with the `size` attribute), `bool`,
/// `f64` (`double`), `String` (`string`), `Vec<String>` (`list`), and by
/// `#[derive(ParamEnum)]` for enums (`enum`).
pub trait ParamField: Sized {
    /// The parameter type a field of this type declares by default.
    const TYPE: ParamType;
    /// The named values of an enum type (empty for every other type).
    const ENUM_VALUES: &'static [EnumValue] = &[];

    /// Converts a resolved value.
    ///
    /// # Errors
    ///
    /// The value is of another type, or does not fit this type.
    fn from_param(value: ParamValue) -> Result<Self, String>;

    /// Checks that every value `decl` accepts fits this type: the type
    /// matches and, for integers, the declared range (by default that of a
    /// 32-bit `int`) lies within the type's range.
    ///
    /// # Errors
    ///
    /// What does not match, naming the parameter.
    fn check_decl(decl: &ParamDecl) -> Result<(), String>;
}

/// A group of parameters declared once by a framework and registered by
/// each of its components with the component's own defaults (the btl
/// framework's exclusivity, limits, latency and bandwidth).
///
/// A group type has, besides this trait, an inherent
/// `pub const fn declarations(spec: &Spec) -> [ParamDecl; Self::LEN]` that
/// builds its declarations from a component's settings (trait methods
/// cannot be `const`); `#[param(group = SPEC)]` on a field of the group's
/// type calls it.
pub trait ParamGroup: Sized {
    /// Number of parameters in the group.
    const LEN: usize;

    /// Reads the group from `source`; `decls` are the group's
    /// [`Self::LEN`] declarations as the component registered them.
    ///
    /// # Errors
    ///
    /// As [`read_field`].
    fn read_group(source: &dyn ParamSource, decls: &[ParamDecl]) -> Result<Self, String>;

    /// Checks the group's declarations against its field types, as
    /// [`check_field`].
    ///
    /// # Errors
    ///
    /// As [`check_field`].
    fn check_group(decls: &[ParamDecl]) -> Result<(), String>;
}

/// An enum parameter type (`#[derive(ParamEnum)]`).
pub trait ParamEnum: ParamField + Copy {
    /// The variant's number.
    fn number(self) -> i64;
    /// The variant's name, as users write it.
    fn name(self) -> &'static str;
}

/// A component's parameters, declared once on a typed struct with
/// `#[derive(Params)]`.
pub trait Params: Sized {
    /// The declarations, in field order: the table the component exports in
    /// its root module (`params: Config::DECLS`).
    const DECLS: &'static [ParamDecl];

    /// Reads every parameter from `source`; one it has no value for takes
    /// its declared default.
    ///
    /// # Errors
    ///
    /// A value of the wrong type or one that does not fit its field (the
    /// core never hands out such values; a fake services table can), or a
    /// default that does not parse, naming the parameter.
    fn read_from(source: &dyn ParamSource) -> Result<Self, String>;

    /// Reads every parameter through the core's services.
    ///
    /// # Errors
    ///
    /// As [`Params::read_from`].
    fn read(ctx: &ComponentContext) -> Result<Self, String> {
        Self::read_from(ctx)
    }

    /// Checks each field's type against its declaration (generated).
    ///
    /// # Errors
    ///
    /// As [`check_field`].
    fn check_fields() -> Result<(), String>;

    /// Checks the whole table the way the core checks it when it registers
    /// the component ([`crate::params::check_decl`]: level, help, name,
    /// default), that no name is declared twice, and that every field's type
    /// holds every value its declaration accepts, its default included. A
    /// component's tests call it, so a default that does not parse fails
    /// there rather than when the core refuses the component.
    ///
    /// # Errors
    ///
    /// The first problem found.
    fn check_declarations() -> Result<(), String> {
        let mut seen = HashSet::new();
        for decl in Self::DECLS {
            if let Some(problem) = crate::params::check_decl(decl.name.as_str(), decl) {
                return Err(problem);
            }
            if !seen.insert(decl.name.as_str()) {
                return Err(format!("parameter {} is declared twice", decl.name));
            }
        }
        Self::check_fields()
    }
}

/// Reads one field: the source's value, else the declared default parsed
/// by [`crate::value::parse`], converted to `T`.
///
/// # Errors
///
/// A default that does not parse, a value of the wrong type or one that does
/// not fit `T`, naming the parameter.
pub fn read_field<T: ParamField>(source: &dyn ParamSource, decl: &ParamDecl) -> Result<T, String> {
    let name = decl.name.as_str();
    let value = match source.value(name) {
        Some(v) => v,
        None => value::parse(decl, decl.default.as_str(), None)
            .map(|v| v.to_abi())
            .map_err(|e| {
                format!(
                    "the default \"{}\" of parameter {} is not valid: {}",
                    decl.default,
                    source.full_name(name),
                    e.0
                )
            })?,
    };
    T::from_param(value).map_err(|e| format!("parameter {}: {e}", source.full_name(name)))
}

/// Checks one field: `T` holds every value `decl` accepts
/// ([`ParamField::check_decl`]), and its default reads into `T`.
///
/// # Errors
///
/// What does not match, naming the parameter.
pub fn check_field<T: ParamField>(decl: &ParamDecl) -> Result<(), String> {
    T::check_decl(decl)?;
    read_field::<T>(&DeclaredDefaults, decl).map(|_| ())
}

fn kind(value: &ParamValue) -> &'static str {
    match value {
        ParamValue::Int(_) => "an integer",
        ParamValue::Size(_) => "a size",
        ParamValue::Bool(_) => "a boolean",
        ParamValue::Double(_) => "a number",
        ParamValue::Str(_) => "a string",
        ParamValue::List(_) => "a list",
    }
}

fn wrong_type<T>(expected: &str, value: &ParamValue) -> Result<T, String> {
    Err(format!(
        "expected {expected}, got {} ({value:?})",
        kind(value)
    ))
}

fn check_type(decl: &ParamDecl, expected: ParamType, rust: &str) -> Result<(), String> {
    if decl.ty == expected {
        Ok(())
    } else {
        Err(format!(
            "parameter {} is declared {:?} but its field is {rust}",
            decl.name, decl.ty
        ))
    }
}

const DEFAULT_INT_RANGE: (i64, i64) = (i32::MIN as i64, i32::MAX as i64);

macro_rules! integer_field {
    ($($t:ty),*) => {$(
        impl ParamField for $t {
            const TYPE: ParamType = ParamType::Int;

            fn from_param(value: ParamValue) -> Result<Self, String> {
                let fits = |v: Option<$t>, n: &dyn std::fmt::Display| {
                    v.ok_or_else(|| format!("{n} does not fit in {}", stringify!($t)))
                };
                match value {
                    ParamValue::Int(v) => fits(<$t>::try_from(v).ok(), &v),
                    ParamValue::Size(v) => fits(<$t>::try_from(v).ok(), &v),
                    other => wrong_type("an integer", &other),
                }
            }

            fn check_decl(decl: &ParamDecl) -> Result<(), String> {
                match decl.ty {
                    ParamType::Int => {
                        let (min, max) = decl
                            .range
                            .into_option()
                            .map_or(DEFAULT_INT_RANGE, |r| (r.min, r.max));
                        if <$t>::try_from(min).is_err() || <$t>::try_from(max).is_err() {
                            return Err(format!(
                                "parameter {} accepts {min} to {max}, which does not fit its {} field; declare a range",
                                decl.name,
                                stringify!($t)
                            ));
                        }
                        Ok(())
                    }
                    ParamType::Size => {
                        if <$t>::try_from(u64::MAX).is_err() {
                            return Err(format!(
                                "parameter {} is a size (up to 2^64-1) but its field is {}; use u64 or usize",
                                decl.name,
                                stringify!($t)
                            ));
                        }
                        Ok(())
                    }
                    _ => check_type(decl, ParamType::Int, stringify!($t)),
                }
            }
        }
    )*};
}

integer_field!(i64, i32, i16, u64, u32, u16, u8, usize);

impl ParamField for bool {
    const TYPE: ParamType = ParamType::Bool;

    fn from_param(value: ParamValue) -> Result<Self, String> {
        match value {
            ParamValue::Bool(b) => Ok(b),
            other => wrong_type("a boolean", &other),
        }
    }

    fn check_decl(decl: &ParamDecl) -> Result<(), String> {
        check_type(decl, ParamType::Bool, "bool")
    }
}

impl ParamField for f64 {
    const TYPE: ParamType = ParamType::Double;

    fn from_param(value: ParamValue) -> Result<Self, String> {
        match value {
            ParamValue::Double(d) => Ok(d),
            other => wrong_type("a number", &other),
        }
    }

    fn check_decl(decl: &ParamDecl) -> Result<(), String> {
        check_type(decl, ParamType::Double, "f64")
    }
}

impl ParamField for String {
    const TYPE: ParamType = ParamType::String;

    fn from_param(value: ParamValue) -> Result<Self, String> {
        match value {
            ParamValue::Str(s) => Ok(s.into_string()),
            other => wrong_type("a string", &other),
        }
    }

    fn check_decl(decl: &ParamDecl) -> Result<(), String> {
        check_type(decl, ParamType::String, "String")
    }
}

impl ParamField for Vec<String> {
    const TYPE: ParamType = ParamType::List;

    fn from_param(value: ParamValue) -> Result<Self, String> {
        match value {
            ParamValue::List(items) => Ok(items.into_iter().map(|s| s.into_string()).collect()),
            other => wrong_type("a list", &other),
        }
    }

    fn check_decl(decl: &ParamDecl) -> Result<(), String> {
        check_type(decl, ParamType::List, "Vec<String>")
    }
}

/// Implementation detail of `#[derive(ParamEnum)]`: checks an enum
/// parameter's declaration against the type's values.
#[doc(hidden)]
pub fn check_enum_decl(decl: &ParamDecl, values: &[EnumValue], rust: &str) -> Result<(), String> {
    check_type(decl, ParamType::Enum, rust)?;
    if decl.enum_values.as_slice() != values {
        return Err(format!(
            "parameter {} declares other values than the enum {rust}",
            decl.name
        ));
    }
    if decl.range.is_some() {
        return Err(format!(
            "parameter {} has a range, but {rust} accepts only its named values",
            decl.name
        ));
    }
    Ok(())
}

/// Implementation detail of `#[derive(ParamEnum)]`: the error for a number
/// that names no variant.
#[doc(hidden)]
pub fn bad_enum_value<T>(value: ParamValue, rust: &str) -> Result<T, String> {
    match value {
        ParamValue::Int(v) => Err(format!("{v} is not a value of {rust}")),
        other => wrong_type("an enum value", &other),
    }
}

/// Implementation detail of `#[derive(Params)]`: a declaration that fills
/// the generated table before the real ones are copied in.
#[doc(hidden)]
pub const PLACEHOLDER: ParamDecl = ParamDecl::new("", ParamType::Int, "", 0, "");
