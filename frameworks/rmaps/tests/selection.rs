//! The one selection path over the in-tree components: each built-in
//! policy has exactly one mapper, priorities order the candidates, and a
//! policy nobody accepts names who declined.

mod common;

use common::installed;
use oxmpi_framework_rmaps::policy::{parse_map_by, parse_map_by_with};
use oxmpi_framework_rmaps::selection::{by_priority, policy_names, select, PassedOver};
use oxmpi_framework_rmaps::{MapBy, MapPolicy};

fn policy(text: &str) -> MapPolicy {
    MapPolicy::from(parse_map_by(text).unwrap())
}

#[test]
fn each_policy_has_one_mapper() {
    for (text, want) in [
        ("slot", "round_robin"),
        ("node", "round_robin"),
        ("core", "round_robin"),
        ("hwthread", "round_robin"),
        ("package", "round_robin"),
        ("numa", "round_robin"),
        ("seq", "seq"),
        ("ppr:2:node", "ppr"),
    ] {
        let p = policy(text);
        assert_eq!(
            select(&installed(), &p, |_, _| {}).unwrap().name,
            want,
            "{text}"
        );
        let accepting: Vec<String> = installed()
            .into_iter()
            .filter(|c| c.handle.accepts(&p) == Ok(true))
            .map(|c| c.name)
            .collect();
        assert_eq!(accepting, [want], "{text}");
    }
}

#[test]
fn priorities_descend() {
    let mut c = installed();
    by_priority(&mut c);
    let p: Vec<(String, i32)> = c.into_iter().map(|c| (c.name, c.priority)).collect();
    assert_eq!(
        p,
        [
            ("ppr".to_string(), 90),
            ("seq".to_string(), 60),
            ("round_robin".to_string(), 10)
        ]
    );
}

#[test]
fn a_policy_nobody_accepts_names_who_declined_in_order() {
    let without_seq: Vec<_> = installed()
        .into_iter()
        .filter(|c| c.name != "seq")
        .collect();
    let mut told = Vec::new();
    let e = select(&without_seq, &policy("seq"), |c, why| {
        assert_eq!(*why, PassedOver::Declined);
        told.push(c.name.clone())
    })
    .unwrap_err();
    assert_eq!(e.declined(), ["ppr", "round_robin"]);
    assert_eq!(told, e.declined());
    assert_eq!(e.tried_list(), "ppr, round_robin");
    let named = MapPolicy {
        map_by: MapBy::Named("reverse".into()),
        ..MapPolicy::default()
    };
    assert_eq!(
        select(&installed(), &named, |_, _| {})
            .unwrap_err()
            .declined(),
        ["ppr", "seq", "round_robin"]
    );
}

#[test]
fn in_tree_components_declare_no_policy_names() {
    let (names, problems) = policy_names(&installed());
    assert!(names.is_empty(), "{names:?}");
    assert!(problems.is_empty(), "{problems:?}");
}

#[test]
fn component_policy_names_parse_with_modifiers_and_are_listed_when_unknown() {
    let d = parse_map_by_with("Rev:OVERSUBSCRIBE", &["reverse"]).unwrap();
    assert_eq!(d.map_by, Some(MapBy::Named("reverse".into())));
    assert_eq!(d.oversubscribe, Some(true));
    assert_eq!(MapPolicy::from(d).to_string(), "reverse:OVERSUBSCRIBE");
    // Built-ins still win and still parse.
    assert_eq!(
        parse_map_by_with("slot", &["reverse"]).unwrap().map_by,
        Some(MapBy::Slot)
    );
    let e = parse_map_by_with("bogus", &["reverse"]).unwrap_err().0;
    assert!(
        e.contains("ppr:N:RESOURCE or a policy of an installed rmaps component (reverse)"),
        "{e}"
    );
    let e = parse_map_by("reverse").unwrap_err().0;
    assert!(e.contains("unknown mapping policy \"reverse\""), "{e}");
    assert!(!e.contains("installed rmaps component"), "{e}");
}
