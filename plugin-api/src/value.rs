//! Parsing and printing parameter values by type.
//!
//! One parser serves user input from every source (the core) and the
//! defaults in declarations (the core when it registers a component, and
//! the `Default` and readers that `#[derive(Params)]` generates inside
//! components), so a default means exactly what the same text would mean on
//! the command line. It lives here, in the plugin API, so that components
//! can use it without depending on the core. Unlike Open MPI, integers reject trailing garbage (`4x`),
//! a leading `0` is decimal (not octal), and out-of-range numbers are errors
//! rather than being clamped or wrapped.
//!
//! Errors quote at most an excerpt of the value ([`excerpt`]).

use crate::text::excerpt;
use crate::{ParamDecl, ParamType, ParamValue};
use std::fmt::Write as _;
use std::path::Path;

/// A parsed parameter value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `Int` and `Enum` parameters.
    Int(i64),
    /// `Size` parameters.
    Size(u64),
    /// `Bool` parameters.
    Bool(bool),
    /// `Double` parameters.
    Double(f64),
    /// `String` parameters.
    Str(String),
    /// `List` parameters.
    List(Vec<String>),
}

impl Value {
    /// Converts to the ABI-stable form handed to components.
    pub fn to_abi(&self) -> ParamValue {
        match self {
            Value::Int(v) => ParamValue::Int(*v),
            Value::Size(v) => ParamValue::Size(*v),
            Value::Bool(v) => ParamValue::Bool(*v),
            Value::Double(v) => ParamValue::Double(*v),
            Value::Str(s) => ParamValue::Str(s.as_str().into()),
            Value::List(items) => {
                ParamValue::List(items.iter().map(|s| s.as_str().into()).collect())
            }
        }
    }

    /// The value as an integer, for `Int`, `Enum` and `Size` values.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Value::Int(v) => Some(*v),
            Value::Size(v) => i64::try_from(*v).ok(),
            _ => None,
        }
    }

    /// The value as a boolean.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Value::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The value as a string slice, for `String` values.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    /// The items of a `List` value.
    pub fn as_list(&self) -> Option<&[String]> {
        match self {
            Value::List(items) => Some(items),
            _ => None,
        }
    }
}

/// Type name as the info tool prints it (Open MPI's names where one exists).
pub fn type_name(ty: ParamType) -> &'static str {
    match ty {
        ParamType::Int => "int",
        ParamType::Size => "size_t",
        ParamType::Bool => "bool",
        ParamType::Double => "double",
        ParamType::String => "string",
        ParamType::Enum => "enum",
        ParamType::List => "list",
    }
}

const DEFAULT_INT_RANGE: (i64, i64) = (i32::MIN as i64, i32::MAX as i64);

fn int_range(decl: &ParamDecl) -> (i64, i64) {
    decl.range
        .into_option()
        .map(|r| (r.min, r.max))
        .unwrap_or(DEFAULT_INT_RANGE)
}

/// What the parser accepts for this declaration, worded for error messages.
pub fn accepted_values(decl: &ParamDecl) -> String {
    match decl.ty {
        ParamType::Int => {
            let (min, max) = int_range(decl);
            format!("an integer from {min} to {max} (decimal or 0x hex, optional k/m/g suffix)")
        }
        ParamType::Size => match decl.range.into_option() {
            Some(r) => format!(
                "a size from {} to {} bytes (decimal or 0x hex, optional k/m/g suffix such as 64k)",
                r.min, r.max
            ),
            None => {
                "a non-negative size (decimal or 0x hex, optional k/m/g suffix such as 64k)".into()
            }
        },
        ParamType::Bool => {
            "a boolean: 1/0, true/false, yes/no, on/off, enabled/disabled, t/f or y/n".into()
        }
        ParamType::Double => "a number such as 0.5 or 1e-3".into(),
        ParamType::String => "any text".into(),
        ParamType::List => "a comma-separated list".into(),
        ParamType::Enum => {
            let mut out = String::from("one of ");
            for (i, v) in decl.enum_values.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{} \"{}\"", v.value, v.name);
            }
            if let Some(r) = decl.range.into_option() {
                let _ = write!(out, ", or a number from {} to {}", r.min, r.max);
            }
            out
        }
    }
}

/// Why a text is not a valid value (without naming the parameter: callers
/// add the name, the source and [`accepted_values`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError(pub String);

/// Parses an integer: optional sign, decimal or `0x` hex digits, an optional
/// `k`/`m`/`g` suffix (×2^10, 2^20, 2^30), and nothing else.
pub fn parse_integer(text: &str) -> Result<i128, ValueError> {
    let t = text.trim();
    if t.is_empty() {
        return Err(ValueError("the value is empty".into()));
    }
    let (negative, rest) = match t.as_bytes()[0] {
        b'-' => (true, &t[1..]),
        b'+' => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits_and_suffix) =
        match rest.strip_prefix("0x").or_else(|| rest.strip_prefix("0X")) {
            Some(hex) => (16, hex),
            None => (10, rest),
        };
    let digits_end = digits_and_suffix
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits_and_suffix.len());
    let (digits, suffix) = digits_and_suffix.split_at(digits_end);
    if digits.is_empty() {
        return Err(ValueError(format!("\"{}\" is not a number", excerpt(t))));
    }
    let shift = match suffix {
        "" => 0,
        "k" | "K" => 10,
        "m" | "M" => 20,
        "g" | "G" => 30,
        _ => {
            return Err(ValueError(format!(
                "\"{}\" has unexpected text \"{}\" after the number (only a k, m or g suffix is allowed)",
                excerpt(t),
                excerpt(suffix)
            )))
        }
    };
    let magnitude = i128::from_str_radix(digits, radix)
        .ok()
        .and_then(|m| m.checked_mul(1i128 << shift))
        .filter(|m| *m <= u64::MAX as i128)
        .ok_or_else(|| ValueError(format!("\"{}\" is too large", excerpt(t))))?;
    Ok(if negative { -magnitude } else { magnitude })
}

/// Parses a boolean word or 0/1, case-insensitively.
pub fn parse_bool(text: &str) -> Result<bool, ValueError> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "t" | "yes" | "y" | "on" | "enabled" => Ok(true),
        "0" | "false" | "f" | "no" | "n" | "off" | "disabled" => Ok(false),
        _ => Err(ValueError(format!(
            "\"{}\" is not a boolean",
            excerpt(text.trim())
        ))),
    }
}

/// Replaces a leading `~/`, and `~/` after each `:`, with the home directory.
pub fn expand_home(text: &str, home: Option<&Path>) -> String {
    let Some(home) = home else {
        return text.to_string();
    };
    let home = home.to_string_lossy();
    text.split(':')
        .map(|part| match part.strip_prefix("~/") {
            Some(rest) => format!("{home}/{rest}"),
            None if part == "~" => home.to_string(),
            None => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(":")
}

/// Parses `text` as a value of `decl`'s type.
pub fn parse(decl: &ParamDecl, text: &str, home: Option<&Path>) -> Result<Value, ValueError> {
    match decl.ty {
        ParamType::Int => {
            let n = parse_integer(text)?;
            let (min, max) = int_range(decl);
            if n < min as i128 || n > max as i128 {
                return Err(ValueError(format!("{n} is out of range")));
            }
            Ok(Value::Int(n as i64))
        }
        ParamType::Size => {
            let n = parse_integer(text)?;
            if n < 0 {
                return Err(ValueError(format!("{n} is negative")));
            }
            if let Some(r) = decl.range.into_option() {
                if n < r.min as i128 || n > r.max as i128 {
                    return Err(ValueError(format!("{n} is out of range")));
                }
            }
            Ok(Value::Size(n as u64))
        }
        ParamType::Bool => parse_bool(text).map(Value::Bool),
        ParamType::Double => {
            let t = text.trim();
            match t.parse::<f64>() {
                Ok(v) if v.is_finite() => Ok(Value::Double(v)),
                _ => Err(ValueError(format!(
                    "\"{}\" is not a finite number",
                    excerpt(t)
                ))),
            }
        }
        ParamType::String => Ok(Value::Str(expand_home(text, home))),
        ParamType::List => Ok(Value::List(
            text.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect(),
        )),
        ParamType::Enum => {
            let t = text.trim();
            if let Some(v) = decl
                .enum_values
                .iter()
                .find(|v| v.name.as_str().eq_ignore_ascii_case(t))
            {
                return Ok(Value::Int(v.value));
            }
            let n = parse_integer(t)
                .map_err(|_| ValueError(format!("\"{}\" is not a valid choice", excerpt(t))))?;
            let named = decl.enum_values.iter().any(|v| v.value as i128 == n);
            let in_range = decl
                .range
                .into_option()
                .is_some_and(|r| n >= r.min as i128 && n <= r.max as i128);
            if named || in_range {
                Ok(Value::Int(n as i64))
            } else {
                Err(ValueError(format!("{n} is not a valid choice")))
            }
        }
    }
}

/// Prints a value as the info tool shows it. Enum values print by name,
/// except for enums that also accept a numeric range (verbosity levels),
/// which print as numbers.
pub fn display(decl: &ParamDecl, value: &Value) -> String {
    match value {
        Value::Int(v) if decl.ty == ParamType::Enum && decl.range.is_none() => decl
            .enum_values
            .iter()
            .find(|e| e.value == *v)
            .map(|e| e.name.to_string())
            .unwrap_or_else(|| v.to_string()),
        Value::Int(v) => v.to_string(),
        Value::Size(v) => v.to_string(),
        Value::Bool(b) => if *b { "true" } else { "false" }.to_string(),
        Value::Double(d) => d.to_string(),
        Value::Str(s) => s.clone(),
        Value::List(items) => items.join(","),
    }
}

#[cfg(test)]
mod tests;
