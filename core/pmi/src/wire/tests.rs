use super::*;
use proptest::prelude::*;

fn msg(command: &str, fields: &[(&str, Option<&str>)]) -> Message {
    Message {
        command: command.into(),
        fields: fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.map(str::to_owned)))
            .collect(),
    }
}

// Lines an MPICH 4.0 client wrote to hydra (observed with strace; the kvs
// name is hydra's `kvs_<pid>_<pgid>_<random>_<host>`).
#[test]
fn parses_mpich_client_lines() {
    assert_eq!(
        parse_line(b"cmd=init pmi_version=1 pmi_subversion=1\n").unwrap(),
        msg(
            "init",
            &[("pmi_version", Some("1")), ("pmi_subversion", Some("1"))]
        )
    );
    assert_eq!(
        parse_line(b"cmd=get_maxes\n").unwrap(),
        msg("get_maxes", &[])
    );
    let get =
        parse_line(b"cmd=get kvsname=kvs_7780_0_993126764_vm key=PMI_process_mapping\n").unwrap();
    assert_eq!(get.command, "get");
    assert_eq!(get.get("kvsname"), Some("kvs_7780_0_993126764_vm"));
    assert_eq!(get.get("key"), Some("PMI_process_mapping"));
    let put = parse_line(
        b"cmd=put kvsname=kvs_7780_0_993126764_vm key=-bcast-1-0 value=2F6465762F73686D2F6D7069\n",
    )
    .unwrap();
    assert_eq!(put.get("key"), Some("-bcast-1-0"));
    assert_eq!(put.get("value"), Some("2F6465762F73686D2F6D7069"));
    assert_eq!(
        parse_line(b"cmd=abort exitcode=7\n").unwrap(),
        msg("abort", &[("exitcode", Some("7"))])
    );
    assert_eq!(
        parse_line(b"cmd=initack pmiid=1\n").unwrap(),
        msg("initack", &[("pmiid", Some("1"))])
    );
}

// Lines hydra wrote back.
#[test]
fn parses_hydra_responses() {
    let r = parse_line(b"cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n").unwrap();
    assert_eq!(r.command, "response_to_init");
    assert_eq!(r.get("rc"), Some("0"));
    let r = parse_line(b"cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n").unwrap();
    assert_eq!(r.get("vallen_max"), Some("1024"));
    let r = parse_line(b"cmd=get_result rc=0 msg=success value=(vector,(0,1,1))\n").unwrap();
    assert_eq!(r.get("value"), Some("(vector,(0,1,1))"));
    let r = parse_line(b"cmd=get_result rc=-1 msg=key_foo_not_found value=unknown\n").unwrap();
    assert_eq!(r.get("rc"), Some("-1"));
    assert_eq!(r.get("msg"), Some("key_foo_not_found"));
}

#[test]
fn values_keep_equals_signs_and_may_be_empty() {
    let m = parse_line(b"cmd=put key=k value=a=b==c\n").unwrap();
    assert_eq!(m.get("value"), Some("a=b==c"));
    let m = parse_line(b"cmd=put key=k value=\n").unwrap();
    assert_eq!(m.get("value"), Some(""));
}

#[test]
fn spaces_split_tokens_and_bare_words_are_kept() {
    let m = parse_line(b"cmd=abort   exitcode=3 message=it broke  badly \r\n").unwrap();
    assert_eq!(
        m,
        msg(
            "abort",
            &[
                ("exitcode", Some("3")),
                ("message", Some("it")),
                ("broke", None),
                ("badly", None)
            ]
        )
    );
    // A bare word does not count as the field.
    assert_eq!(m.get("broke"), None);
    assert_eq!(
        rest_of_line("cmd=abort exitcode=3 message=it broke x=1 \r\n", "message"),
        Some("it broke x=1")
    );
    assert_eq!(rest_of_line("cmd=abort xmessage=a", "message"), None);
    assert_eq!(rest_of_line("cmd=abort exitcode=1", "message"), None);
    assert_eq!(rest_of_line("cmd=abort message=", "message"), Some(""));
}

#[test]
fn backslash_is_an_ordinary_character() {
    let m = parse_line(b"cmd=put key=k value=a\\b\\\n").unwrap();
    assert_eq!(m.get("value"), Some("a\\b\\"));
}

#[test]
fn errors_name_the_offending_text() {
    assert_eq!(parse_line(b"\n"), Err(WireError::Empty));
    assert_eq!(parse_line(b"   "), Err(WireError::Empty));
    let e = parse_line(b"get key=x\n").unwrap_err();
    assert!(matches!(e, WireError::MissingCmd { .. }));
    assert!(e.to_string().contains("get key=x"), "{e}");
    assert!(matches!(
        parse_line(b"cmd= key=x"),
        Err(WireError::EmptyCommand { .. })
    ));
    let e = parse_line(b"cmd=put =oops").unwrap_err();
    assert!(e.to_string().contains("=oops"), "{e}");
    assert!(matches!(
        parse_line(b"cmd=put key=\xff\xfe"),
        Err(WireError::NotUtf8 { .. })
    ));
    assert!(matches!(
        parse_line(b"cmd=put key=a\ncmd=get"),
        Err(WireError::EmbeddedNewline { .. })
    ));
    let long = vec![b'a'; MAX_MESSAGE_LEN + 1];
    let e = parse_line(&long).unwrap_err();
    assert!(matches!(e, WireError::TooLong { .. }));
    // The quoted text is bounded.
    assert!(e.to_string().len() < 400);
}

#[test]
fn excerpts_give_the_length_of_what_they_cut() {
    assert_eq!(excerpt(b"cmd=get_maxes"), "cmd=get_maxes");
    assert_eq!(excerpt(&[b'a'; 80]), "a".repeat(80));
    assert_eq!(
        excerpt(&[b'a'; 81]),
        format!("{}…(81 bytes)", "a".repeat(80))
    );
    let e = parse_line(format!("cmd=put ={}", "v".repeat(10_000)).as_bytes()).unwrap_err();
    assert!(e.to_string().contains("…(10001 bytes)"), "{e}");
    assert!(e.to_string().contains("…(10009 bytes)"), "{e}");
}

#[test]
fn spawn_messages_are_rejected_as_unsupported() {
    let block = b"mcmd=spawn\nnprocs=2\nexecname=./a.out\ntotspawns=1\nspawnssofar=1\nargcnt=0\npreput_num=0\ninfo_num=0\nendcmd\n";
    let e = parse_line(block).unwrap_err();
    assert!(matches!(e, WireError::Multiline { .. }));
    assert!(e.to_string().contains("not supported"), "{e}");
    assert!(matches!(
        parse_line(b"mcmd=spawn"),
        Err(WireError::Multiline { .. })
    ));
}

#[test]
fn encode_writes_the_wire_form() {
    let m = Message::new("put")
        .with("kvsname", "kvs_1")
        .with("key", "hello-0")
        .with("value", "x=y");
    assert_eq!(
        m.encode().unwrap(),
        b"cmd=put kvsname=kvs_1 key=hello-0 value=x=y\n"
    );
    assert_eq!(m.to_string(), "cmd=put kvsname=kvs_1 key=hello-0 value=x=y");
    assert_eq!(
        Message::new("barrier_in").encode().unwrap(),
        b"cmd=barrier_in\n"
    );
    let bare = msg("abort", &[("exitcode", Some("1")), ("word", None)]);
    assert_eq!(bare.encode().unwrap(), b"cmd=abort exitcode=1 word\n");
}

#[test]
fn encode_refuses_what_the_protocol_cannot_carry() {
    let mut out = Vec::new();
    for bad in [
        Message::new(""),
        Message::new("a b"),
        Message::new("put").with("", "v"),
        Message::new("put").with("k=", "v"),
        Message::new("put").with("k", "a b"),
        Message::new("put").with("k", "a\nb"),
        Message::new("put").with("k", "a\r"),
    ] {
        let e = bad.encode_into(&mut out).unwrap_err();
        assert!(matches!(e, WireError::Unencodable { .. }), "{e}");
        assert!(out.is_empty());
    }
}

#[test]
fn response_builder_and_msg_token() {
    assert_eq!(
        response(
            "get_result",
            &[("rc", "0"), ("msg", "success"), ("value", "v")]
        ),
        b"cmd=get_result rc=0 msg=success value=v\n"
    );
    assert_eq!(msg_token("no such key\n"), "no_such_key");
}

fn key_strategy() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.:(),-]{1,12}"
}

fn value_strategy() -> impl Strategy<Value = String> {
    "[A-Za-z0-9_.:(),=\\\\/-]{0,24}"
}

fn message_strategy() -> impl Strategy<Value = Message> {
    (
        "[a-z_]{1,16}",
        prop::collection::vec((key_strategy(), prop::option::of(value_strategy())), 0..6),
    )
        .prop_map(|(command, fields)| Message { command, fields })
}

proptest! {
    #[test]
    fn parse_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        let _ = parse_line(&bytes);
    }

    #[test]
    fn parse_never_panics_on_near_miss_text(s in "(cmd=|mcmd=| |=|[a-z]{1,3}|\n|\r|\\\\){0,20}") {
        let _ = parse_line(s.as_bytes());
        let _ = rest_of_line(&s, "message");
    }

    #[test]
    fn encode_then_parse_round_trips(m in message_strategy()) {
        let line = m.encode().unwrap();
        prop_assert_eq!(parse_line(&line).unwrap(), m);
    }

    #[test]
    fn parse_then_encode_is_stable(s in "cmd=[a-z]{1,5}( {1,3}[a-z=]{1,6}){0,6} {0,2}") {
        if let Ok(m) = parse_line(s.as_bytes()) {
            let line = m.encode().unwrap();
            prop_assert_eq!(parse_line(&line).unwrap(), m);
        }
    }
}
