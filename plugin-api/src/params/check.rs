//! The checks every declaration passes: the core runs them when it
//! registers a component's table (a component that fails them is refused),
//! and the `check_declarations` that `#[derive(Params)]` generates runs
//! them in the component's own tests.

use crate::value;
use crate::{ParamDecl, ParamType};
use std::path::Path;

/// Whether `name` is a syntactically valid parameter name: not empty, and
/// only ASCII letters, digits, `_`, `.` and `-`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-')
}

/// Problems with a declaration whose full name is `full_name`, or `None`
/// if it is well-formed: a level from 1 to 9, a help text, a valid name,
/// at least one value for an enum, and a default that the value parser
/// accepts (so a default means what the same text would mean from a user).
pub fn check_decl(full_name: &str, decl: &ParamDecl) -> Option<String> {
    if !(1..=9).contains(&decl.level) {
        return Some(format!(
            "parameter {full_name} has level {}, expected 1 to 9",
            decl.level
        ));
    }
    if decl.help.trim().is_empty() {
        return Some(format!("parameter {full_name} has no help text"));
    }
    if !valid_name(full_name) {
        return Some(format!("\"{full_name}\" is not a valid parameter name"));
    }
    if decl.ty == ParamType::Enum && decl.enum_values.is_empty() {
        return Some(format!("enum parameter {full_name} declares no values"));
    }
    if let Err(e) = value::parse(decl, decl.default.as_str(), Some(Path::new("/"))) {
        return Some(format!(
            "parameter {full_name} has an invalid default \"{}\": {}",
            decl.default, e.0
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_declarations_are_reported() {
        assert!(
            check_decl("a_b", &ParamDecl::new("b", ParamType::Int, "4x", 1, "h"))
                .unwrap()
                .contains("invalid default")
        );
        assert!(
            check_decl("a_b", &ParamDecl::new("b", ParamType::Int, "4", 0, "h"))
                .unwrap()
                .contains("level 0")
        );
        assert!(
            check_decl("a_b", &ParamDecl::new("b", ParamType::Int, "4", 1, " "))
                .unwrap()
                .contains("no help")
        );
        assert!(
            check_decl("a_b", &ParamDecl::new("b", ParamType::Enum, "x", 1, "h"))
                .unwrap()
                .contains("no values")
        );
        assert!(
            check_decl("a b", &ParamDecl::new("b", ParamType::Int, "4", 1, "h"))
                .unwrap()
                .contains("not a valid parameter name")
        );
        assert_eq!(
            check_decl("a_b", &ParamDecl::new("b", ParamType::Size, "64k", 1, "h")),
            None
        );
    }

    #[test]
    fn names() {
        assert!(valid_name("btl_tcp_if_include"));
        assert!(valid_name("a.b-c"));
        assert!(!valid_name(""));
        assert!(!valid_name("a b"));
        assert!(!valid_name("a=b"));
    }
}
