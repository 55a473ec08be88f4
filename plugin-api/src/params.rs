//! Parameter declarations (data) and resolved parameter values.
//!
//! A component declares its parameters once, on a typed struct with
//! `#[derive(Params)]` (see [`Params`] and `docs/components.md`), which
//! generates the table of [`ParamDecl`] exported in its root module, its
//! `Default` and its typed reader.
//! The core reads the table without running any component code, resolves a
//! value for every parameter from its sources, and hands values back through
//! [`crate::Services`]. Defaults are strings parsed by the same parser as
//! user input, so a default can never be of the wrong type unnoticed.

use crate::verbosity;
use abi_stable::std_types::{RSlice, RStr, RString, RVec};
use abi_stable::StableAbi;

mod check;
mod level;
mod typed;

pub use check::{check_decl, valid_name};
pub use level::{Level, Tier};
#[doc(hidden)]
pub use typed::{bad_enum_value, check_enum_decl, PLACEHOLDER};
pub use typed::{
    check_field, read_field, DeclaredDefaults, ParamEnum, ParamField, ParamGroup, ParamSource,
    Params,
};

/// Flags of a parameter declaration (bit set in [`ParamDecl::flags`]).
pub mod flags {
    /// Only the default (or the override file) may set it; other sources are
    /// ignored with a warning.
    pub const READ_ONLY: u32 = 0x1;
    /// The parameter is going away; setting it warns once.
    pub const DEPRECATED: u32 = 0x2;
    /// Hidden from the info tool unless asked for at level 9.
    pub const INTERNAL: u32 = 0x4;
}

/// Type of a parameter's value.
#[repr(u8)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum ParamType {
    /// Signed integer (range given by [`ParamDecl::range`], else 32-bit).
    /// Accepts decimal, `0x` hex, and `k`/`m`/`g` suffixes.
    Int,
    /// Unsigned 64-bit size; same syntax as `Int`, no sign.
    Size,
    /// Boolean: `1/0 true/false yes/no on/off enabled/disabled t/f y/n`.
    Bool,
    /// Floating point number.
    Double,
    /// Free text; a leading `~/` becomes the home directory.
    String,
    /// One of [`ParamDecl::enum_values`], by name (case-insensitive) or by
    /// number; numbers inside [`ParamDecl::range`] are accepted too.
    Enum,
    /// Comma-separated list of strings (blanks around items are trimmed).
    List,
}

/// One named value of an enum parameter.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct EnumValue {
    /// Numeric value.
    pub value: i64,
    /// Name (matched case-insensitively).
    pub name: RStr<'static>,
}

impl EnumValue {
    /// Builds an enum value.
    pub const fn new(value: i64, name: &'static str) -> Self {
        EnumValue {
            value,
            name: RStr::from_str(name),
        }
    }
}

/// Inclusive range of accepted integers.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct IntRange {
    /// Smallest accepted value.
    pub min: i64,
    /// Largest accepted value.
    pub max: i64,
}

/// Another name for a parameter.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug, PartialEq, Eq)]
pub struct Synonym {
    /// Full name of the synonym (`btl_tcp_old_name`).
    pub name: RStr<'static>,
    /// Setting a deprecated synonym warns once and names the new parameter.
    pub deprecated: bool,
}

impl Synonym {
    /// A deprecated old name.
    pub const fn deprecated(name: &'static str) -> Self {
        Synonym {
            name: RStr::from_str(name),
            deprecated: true,
        }
    }

    /// A plain alias.
    pub const fn alias(name: &'static str) -> Self {
        Synonym {
            name: RStr::from_str(name),
            deprecated: false,
        }
    }
}

/// Declaration of one parameter.
#[repr(C)]
#[derive(StableAbi, Copy, Clone, Debug)]
pub struct ParamDecl {
    /// Name within its owner: the full name is `<framework>_<component>_<name>`
    /// (`eager_limit` of btl tcp is `btl_tcp_eager_limit`).
    pub name: RStr<'static>,
    /// Value type.
    pub ty: ParamType,
    /// Default, written as a user would write it.
    pub default: RStr<'static>,
    /// 1–9: 1–3 end user, 4–6 application tuner, 7–9 developer.
    pub level: u8,
    /// Help text (mandatory, one or more sentences).
    pub help: RStr<'static>,
    /// Named values (for `Enum`; empty otherwise).
    pub enum_values: RSlice<'static, EnumValue>,
    /// Accepted integer range for `Int` and `Enum`, if any.
    pub range: abi_stable::std_types::ROption<IntRange>,
    /// Bit set of [`flags`].
    pub flags: u32,
    /// Other names for this parameter.
    pub synonyms: RSlice<'static, Synonym>,
}

impl ParamDecl {
    /// A parameter with no enum values, range, flags or synonyms.
    pub const fn new(
        name: &'static str,
        ty: ParamType,
        default: &'static str,
        level: u8,
        help: &'static str,
    ) -> Self {
        ParamDecl {
            name: RStr::from_str(name),
            ty,
            default: RStr::from_str(default),
            level,
            help: RStr::from_str(help),
            enum_values: RSlice::from_slice(&[]),
            range: abi_stable::std_types::ROption::RNone,
            flags: 0,
            synonyms: RSlice::from_slice(&[]),
        }
    }

    /// Sets the enum values.
    pub const fn with_enum(mut self, values: &'static [EnumValue]) -> Self {
        self.enum_values = RSlice::from_slice(values);
        self
    }

    /// Sets the accepted integer range.
    pub const fn with_range(mut self, min: i64, max: i64) -> Self {
        self.range = abi_stable::std_types::ROption::RSome(IntRange { min, max });
        self
    }

    /// Sets the flags.
    pub const fn with_flags(mut self, flags: u32) -> Self {
        self.flags = flags;
        self
    }

    /// Sets the synonyms.
    pub const fn with_synonyms(mut self, synonyms: &'static [Synonym]) -> Self {
        self.synonyms = RSlice::from_slice(synonyms);
        self
    }
}

/// Named verbosity levels shared by every `<framework>_base_verbose`
/// parameter; any number from 0 to 100 is accepted as well.
pub const VERBOSITY_VALUES: &[EnumValue] = &[
    EnumValue::new(-1, "none"),
    EnumValue::new(verbosity::ERROR as i64, "error"),
    EnumValue::new(verbosity::COMPONENT as i64, "component"),
    EnumValue::new(verbosity::WARN as i64, "warn"),
    EnumValue::new(verbosity::INFO as i64, "info"),
    EnumValue::new(verbosity::TRACE as i64, "trace"),
    EnumValue::new(verbosity::DEBUG as i64, "debug"),
    EnumValue::new(verbosity::MAX as i64, "max"),
];

/// A resolved parameter value as the core hands it to a component.
#[repr(u8)]
#[derive(StableAbi, Clone, Debug, PartialEq)]
pub enum ParamValue {
    /// `Int` and `Enum` parameters.
    Int(i64),
    /// `Size` parameters.
    Size(u64),
    /// `Bool` parameters.
    Bool(bool),
    /// `Double` parameters.
    Double(f64),
    /// `String` parameters (empty when unset).
    Str(RString),
    /// `List` parameters.
    List(RVec<RString>),
}
