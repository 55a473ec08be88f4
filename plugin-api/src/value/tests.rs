use super::*;
use crate::params::VERBOSITY_VALUES;
use crate::EnumValue;
use proptest::prelude::*;

const INT: ParamDecl = ParamDecl::new("i", ParamType::Int, "0", 1, "h");
const SIZE: ParamDecl = ParamDecl::new("s", ParamType::Size, "0", 1, "h");
const BOOL: ParamDecl = ParamDecl::new("b", ParamType::Bool, "0", 1, "h");
const DOUBLE: ParamDecl = ParamDecl::new("d", ParamType::Double, "0", 1, "h");
const STRING: ParamDecl = ParamDecl::new("t", ParamType::String, "", 1, "h");
const LIST: ParamDecl = ParamDecl::new("l", ParamType::List, "", 1, "h");
const ALGS: &[EnumValue] = &[
    EnumValue::new(0, "ignore"),
    EnumValue::new(1, "basic_linear"),
];
const ENUM: ParamDecl = ParamDecl::new("e", ParamType::Enum, "ignore", 1, "h").with_enum(ALGS);
const VERBOSE: ParamDecl = ParamDecl::new("v", ParamType::Enum, "0", 8, "h")
    .with_enum(VERBOSITY_VALUES)
    .with_range(0, 100);

fn p(decl: &ParamDecl, text: &str) -> Result<Value, ValueError> {
    parse(decl, text, Some(Path::new("/home/u")))
}

#[test]
fn integers_accept_decimal_hex_and_suffixes() {
    assert_eq!(p(&INT, "42"), Ok(Value::Int(42)));
    assert_eq!(p(&INT, " -7 "), Ok(Value::Int(-7)));
    assert_eq!(p(&INT, "0x1F"), Ok(Value::Int(31)));
    assert_eq!(
        p(&INT, "010"),
        Ok(Value::Int(10)),
        "leading zero is decimal, not octal"
    );
    assert_eq!(p(&SIZE, "64k"), Ok(Value::Size(65536)));
    assert_eq!(p(&SIZE, "2M"), Ok(Value::Size(2 << 20)));
    assert_eq!(p(&SIZE, "1g"), Ok(Value::Size(1 << 30)));
    assert_eq!(p(&SIZE, "0x10k"), Ok(Value::Size(16 << 10)));
}

#[test]
fn integers_reject_garbage_overflow_and_range() {
    for bad in [
        "4x", "4kb", "", "  ", "k", "0x", "1.5", "--1", "12 34", "0xg",
    ] {
        assert!(p(&INT, bad).is_err(), "{bad:?} should be rejected");
    }
    assert!(p(&INT, "2147483648").is_err(), "above i32");
    assert!(p(&INT, "-2147483649").is_err(), "below i32");
    assert_eq!(p(&INT, "2147483647"), Ok(Value::Int(i32::MAX as i64)));
    assert!(p(&SIZE, "-1").is_err());
    assert!(p(&SIZE, "99999999999999999999").is_err());
    assert_eq!(p(&SIZE, "18446744073709551615"), Ok(Value::Size(u64::MAX)));
    assert!(p(&SIZE, "17179869184g").is_err(), "2^34 g overflows u64");
    assert_eq!(p(&SIZE, "16777216g"), Ok(Value::Size(1 << 54)));
    let ranged = ParamDecl::new("r", ParamType::Int, "1", 1, "h").with_range(1, 10);
    assert!(p(&ranged, "0").is_err());
    assert_eq!(p(&ranged, "10"), Ok(Value::Int(10)));
    // A size with a declared range keeps to it, and says so.
    let sized = ParamDecl::new("z", ParamType::Size, "4k", 1, "h").with_range(4096, 1 << 30);
    assert_eq!(
        p(&sized, "100"),
        Err(ValueError("100 is out of range".into()))
    );
    assert!(p(&sized, "2g").is_err());
    assert_eq!(p(&sized, "4k"), Ok(Value::Size(4096)));
    assert_eq!(p(&sized, "1g"), Ok(Value::Size(1 << 30)));
    assert!(accepted_values(&sized).starts_with("a size from 4096 to 1073741824 bytes"));
    assert!(accepted_values(&SIZE).starts_with("a non-negative size"));
}

#[test]
fn booleans_accept_every_documented_word_in_any_case() {
    for t in ["1", "true", "TRUE", "t", "yes", "Y", "on", "Enabled"] {
        assert_eq!(p(&BOOL, t), Ok(Value::Bool(true)), "{t}");
    }
    for f in ["0", "false", "F", "no", "n", "OFF", "disabled"] {
        assert_eq!(p(&BOOL, f), Ok(Value::Bool(false)), "{f}");
    }
    for bad in ["2", "", "maybe", "yess", "-1"] {
        assert!(p(&BOOL, bad).is_err(), "{bad:?}");
    }
}

#[test]
fn doubles_strings_and_lists() {
    assert_eq!(p(&DOUBLE, "0.5"), Ok(Value::Double(0.5)));
    assert_eq!(p(&DOUBLE, "1e-3"), Ok(Value::Double(0.001)));
    assert!(p(&DOUBLE, "abc").is_err());
    assert!(p(&DOUBLE, "inf").is_err());
    assert_eq!(
        p(&STRING, "~/x:~/y:/z"),
        Ok(Value::Str("/home/u/x:/home/u/y:/z".into()))
    );
    assert_eq!(p(&STRING, "a~/b"), Ok(Value::Str("a~/b".into())));
    assert_eq!(p(&STRING, ""), Ok(Value::Str(String::new())));
    assert_eq!(
        p(&LIST, " a, b ,,c "),
        Ok(Value::List(vec!["a".into(), "b".into(), "c".into()]))
    );
    assert_eq!(p(&LIST, ""), Ok(Value::List(vec![])));
}

#[test]
fn enums_by_name_or_number() {
    assert_eq!(p(&ENUM, "BASIC_linear"), Ok(Value::Int(1)));
    assert_eq!(p(&ENUM, "1"), Ok(Value::Int(1)));
    assert!(p(&ENUM, "2").is_err());
    assert!(p(&ENUM, "linear").is_err());
    assert_eq!(display(&ENUM, &Value::Int(1)), "basic_linear");
    assert_eq!(
        accepted_values(&ENUM),
        "one of 0 \"ignore\", 1 \"basic_linear\""
    );
}

#[test]
fn verbosity_accepts_names_and_numbers_and_prints_numbers() {
    assert_eq!(p(&VERBOSE, "warn"), Ok(Value::Int(20)));
    assert_eq!(p(&VERBOSE, "none"), Ok(Value::Int(-1)));
    assert_eq!(p(&VERBOSE, "55"), Ok(Value::Int(55)));
    assert!(p(&VERBOSE, "101").is_err());
    assert!(p(&VERBOSE, "-2").is_err());
    assert_eq!(display(&VERBOSE, &Value::Int(20)), "20");
    assert!(accepted_values(&VERBOSE).ends_with("or a number from 0 to 100"));
}

proptest! {
    #[test]
    fn any_i32_round_trips(n in any::<i32>()) {
        prop_assert_eq!(p(&INT, &n.to_string()), Ok(Value::Int(n as i64)));
        prop_assert_eq!(p(&INT, &format!("{:#x}", n.unsigned_abs()).replace("0x", if n < 0 { "-0x" } else { "0x" })), Ok(Value::Int(n as i64)));
    }

    #[test]
    fn any_u64_size_round_trips(n in any::<u64>()) {
        prop_assert_eq!(p(&SIZE, &n.to_string()), Ok(Value::Size(n)));
    }

    #[test]
    fn suffixes_multiply(n in 0u64..1_000_000, s in prop::sample::select(vec![("k", 10), ("M", 20), ("g", 30)])) {
        prop_assert_eq!(p(&SIZE, &format!("{n}{}", s.0)), Ok(Value::Size(n << s.1)));
    }

    #[test]
    fn parser_never_panics(text in ".{0,40}") {
        for decl in [&INT, &SIZE, &BOOL, &DOUBLE, &STRING, &LIST, &ENUM, &VERBOSE] {
            let _ = p(decl, &text);
        }
    }

    #[test]
    fn trailing_letters_are_rejected(n in 0u32..1000, junk in "[a-zA-Z&&[^kKmMgG]][a-zA-Z]{0,3}") {
        let text = format!("{}{}", n, junk);
        prop_assert!(p(&INT, &text).is_err());
    }
}

#[test]
fn errors_quote_an_excerpt_of_a_long_value() {
    let long = |c: &str| c.repeat(100_000);
    let cases = [
        (&INT, long("x"), "\"xxxx"),
        (&INT, format!("1{}", long("q")), "unexpected text \"qqqq"),
        (&INT, long("9"), "is too large"),
        (&BOOL, long("b"), "is not a boolean"),
        (&DOUBLE, long("d"), "is not a finite number"),
        (&ENUM, long("e"), "is not a valid choice"),
    ];
    for (decl, text, what) in cases {
        let e = p(decl, &text).unwrap_err().0;
        assert!(e.contains(what), "{e}");
        assert!(
            e.contains("…(100000 bytes)") || e.contains("…(100001 bytes)"),
            "{e}"
        );
        assert!(e.len() < 400, "{} bytes: {}", e.len(), &e[..400]);
    }
}

proptest! {
    #[test]
    fn errors_stay_short(
        head in ".{0,20}",
        filler in prop::sample::select(vec!["x", "9", "k", " ", "é", "\u{7}"]),
        repeat in 0usize..5_000,
        decl in prop::sample::select(vec![INT, SIZE, BOOL, DOUBLE, ENUM, VERBOSE]),
    ) {
        let text = format!("{head}{}", filler.repeat(repeat));
        if let Err(e) = p(&decl, &text) {
            // Two excerpts at most, each 80 characters escaped to at most 10
            // bytes plus its length, and the fixed words.
            prop_assert!(e.0.len() < 2 * (80 * 10 + 24) + 200, "{}", e.0);
        }
    }
}
