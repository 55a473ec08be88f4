use super::*;
use proptest::prelude::*;

const KVS: &str = "kvs_7780_0_993126764_vm";

fn server(size: u32) -> PmiServer {
    PmiServer::new(JobInfo::new(size, KVS))
}

/// Feeds a request and returns the replies as text, in order, plus the
/// other actions.
fn talk(s: &mut PmiServer, rank: u32, bytes: &str) -> (Vec<(u32, String)>, Vec<Action>) {
    let mut sends = Vec::new();
    let mut other = Vec::new();
    for a in s.on_bytes(rank, bytes.as_bytes()) {
        match a {
            Action::Send { rank, bytes } => sends.push((rank, String::from_utf8(bytes).unwrap())),
            a => other.push(a),
        }
    }
    (sends, other)
}

/// A request with exactly one reply to the same rank and nothing else.
fn ask(s: &mut PmiServer, rank: u32, request: &str) -> String {
    let (sends, other) = talk(s, rank, request);
    assert!(other.is_empty(), "{request:?} gave {other:?}");
    assert_eq!(sends.len(), 1, "{request:?} gave {sends:?}");
    assert_eq!(sends[0].0, rank);
    sends.into_iter().next().unwrap().1
}

/// A request that gets no reply yet.
fn quiet(s: &mut PmiServer, rank: u32, request: &str) {
    let (sends, other) = talk(s, rank, request);
    assert!(
        sends.is_empty() && other.is_empty(),
        "{request:?} gave {sends:?} {other:?}"
    );
}

/// What an MPICH 4.0 client sends in PMI_Init, with hydra's replies
/// (observed with strace under mpiexec.mpich).
fn mpich_init(s: &mut PmiServer, rank: u32, size: u32) {
    assert_eq!(
        ask(s, rank, "cmd=init pmi_version=1 pmi_subversion=1\n"),
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"
    );
    assert!(s.initialized(rank));
    assert_eq!(
        ask(s, rank, "cmd=get_maxes\n"),
        "cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n"
    );
    assert_eq!(ask(s, rank, "cmd=get_appnum\n"), "cmd=appnum appnum=0\n");
    assert_eq!(
        ask(s, rank, "cmd=get_my_kvsname\n"),
        format!("cmd=my_kvsname kvsname={KVS}\n")
    );
    assert_eq!(
        ask(
            s,
            rank,
            &format!("cmd=get kvsname={KVS} key=PMI_process_mapping\n")
        ),
        format!("cmd=get_result rc=0 msg=success value=(vector,(0,1,{size}))\n")
    );
}

/// All ranks enter the barrier; the last one releases everybody.
fn barrier(s: &mut PmiServer, size: u32) {
    for r in 0..size - 1 {
        quiet(s, r, "cmd=barrier_in\n");
        assert!(s.in_barrier(r));
    }
    let (sends, other) = talk(s, size - 1, "cmd=barrier_in\n");
    assert!(other.is_empty());
    let want: Vec<(u32, String)> = (0..size).map(|r| (r, "cmd=barrier_out\n".into())).collect();
    assert_eq!(sends, want);
    assert_eq!(s.barrier_waiting(), 0);
}

fn put(s: &mut PmiServer, rank: u32, key: &str, value: &str) {
    assert_eq!(
        ask(
            s,
            rank,
            &format!("cmd=put kvsname={KVS} key={key} value={value}\n")
        ),
        "cmd=put_result rc=0 msg=success\n"
    );
}

fn get(s: &mut PmiServer, rank: u32, key: &str) -> String {
    ask(s, rank, &format!("cmd=get kvsname={KVS} key={key}\n"))
}

// The conversation of a 2-rank MPICH 4.0 (ch4) MPI_Init / MPI_Finalize, as
// observed under hydra: init, a barrier, the shm segment name broadcast by
// rank 0, a barrier, each rank's address put, a barrier, gets, a barrier
// and finalize.
#[test]
fn two_rank_mpich_conversation() {
    let mut s = server(2);
    mpich_init(&mut s, 0, 2);
    mpich_init(&mut s, 1, 2);
    barrier(&mut s, 2);
    put(
        &mut s,
        0,
        "-bcast-1-0",
        "2F6465762F73686D2F6D706963685F736861725F746D70744354357375",
    );
    barrier(&mut s, 2);
    assert_eq!(
        get(&mut s, 1, "-bcast-1-0"),
        "cmd=get_result rc=0 msg=success value=2F6465762F73686D2F6D706963685F736861725F746D70744354357375\n"
    );
    put(
        &mut s,
        1,
        "-allgather-shm-1-1",
        "20C9BA36375B73DACC2000637577CC2B",
    );
    put(
        &mut s,
        0,
        "-allgather-shm-1-0",
        "20B70AA514BB88BDEF2000637577CC2B",
    );
    barrier(&mut s, 2);
    assert!(
        get(&mut s, 0, "-allgather-shm-1-0").ends_with("value=20B70AA514BB88BDEF2000637577CC2B\n")
    );
    assert!(
        get(&mut s, 1, "-allgather-shm-1-1").ends_with("value=20C9BA36375B73DACC2000637577CC2B\n")
    );
    barrier(&mut s, 2);
    for r in 0..2 {
        assert!(!s.finalized(r));
        assert_eq!(ask(&mut s, r, "cmd=finalize\n"), "cmd=finalize_ack\n");
        assert!(s.finalized(r));
        assert!(s.on_disconnect(r).is_empty());
    }
}

// Three ranks whose bytes arrive one at a time and interleaved.
#[test]
fn three_ranks_byte_by_byte() {
    let mut s = server(3);
    let scripts: Vec<String> = (0..3)
        .map(|r| {
            format!(
                "cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_maxes\ncmd=get_appnum\n\
                 cmd=get_my_kvsname\ncmd=put kvsname={KVS} key=hello-{r} value=from-{r}\n\
                 cmd=barrier_in\n"
            )
        })
        .collect();
    let mut replies: Vec<String> = vec![String::new(); 3];
    let longest = scripts.iter().map(String::len).max().unwrap();
    for i in 0..longest {
        for (r, script) in scripts.iter().enumerate() {
            if let Some(b) = script.as_bytes().get(i) {
                for a in s.on_bytes(r as u32, &[*b]) {
                    match a {
                        Action::Send { rank, bytes } => {
                            replies[rank as usize].push_str(std::str::from_utf8(&bytes).unwrap())
                        }
                        a => panic!("unexpected {a:?}"),
                    }
                }
            }
        }
    }
    for reply in &replies {
        assert_eq!(
            reply,
            &format!(
                "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n\
                 cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n\
                 cmd=appnum appnum=0\ncmd=my_kvsname kvsname={KVS}\n\
                 cmd=put_result rc=0 msg=success\ncmd=barrier_out\n"
            )
        );
    }
    for r in 0..3 {
        for other in 0..3 {
            assert_eq!(
                get(&mut s, r, &format!("hello-{other}")),
                format!("cmd=get_result rc=0 msg=success value=from-{other}\n")
            );
        }
    }
    barrier(&mut s, 3);
}

#[test]
fn several_requests_in_one_chunk_are_answered_in_order() {
    let mut s = server(1);
    let (sends, other) = talk(
        &mut s,
        0,
        "cmd=init pmi_version=1 pmi_subversion=1\ncmd=get_universe_size\ncmd=barrier_in\ncmd=finalize\n",
    );
    assert!(other.is_empty());
    let texts: Vec<&str> = sends.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(
        texts,
        [
            "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n",
            "cmd=universe_size size=1\n",
            "cmd=barrier_out\n",
            "cmd=finalize_ack\n"
        ]
    );
}

#[test]
fn get_of_a_missing_key_answers_like_hydra() {
    let mut s = server(1);
    assert_eq!(
        get(&mut s, 0, "nope"),
        "cmd=get_result rc=-1 msg=key_nope_not_found value=unknown\n"
    );
    // Without kvsname= too (it is optional).
    assert_eq!(
        ask(&mut s, 0, "cmd=get key=nope\n"),
        "cmd=get_result rc=-1 msg=key_nope_not_found value=unknown\n"
    );
    assert_eq!(
        get(&mut s, 0, "PMI_dead_processes"),
        "cmd=get_result rc=0 msg=success value=\n"
    );
}

#[test]
fn put_rules() {
    let mut s = server(2);
    put(&mut s, 0, "k", "v1");
    // Same value again: fine.
    put(&mut s, 1, "k", "v1");
    assert_eq!(
        ask(
            &mut s,
            1,
            &format!("cmd=put kvsname={KVS} key=k value=v2\n")
        ),
        "cmd=put_result rc=-1 msg=duplicate_key_k_with_a_different_value\n"
    );
    assert!(get(&mut s, 0, "k").ends_with("value=v1\n"));
    assert_eq!(
        ask(
            &mut s,
            0,
            &format!("cmd=put kvsname={KVS} key={} value=v\n", "k".repeat(65))
        ),
        "cmd=put_result rc=-1 msg=key_too_long_(65_bytes,_keylen_max=64)\n"
    );
    assert_eq!(
        ask(
            &mut s,
            0,
            &format!("cmd=put kvsname={KVS} key=big value={}\n", "v".repeat(1025))
        ),
        "cmd=put_result rc=-1 msg=value_too_long_(1025_bytes,_vallen_max=1024)\n"
    );
    put(&mut s, 0, "big", &"v".repeat(1024));
    assert_eq!(
        ask(&mut s, 0, "cmd=put key=PMI_process_mapping value=x\n"),
        "cmd=put_result rc=-1 msg=key_PMI_process_mapping_is_reserved\n"
    );
    assert_eq!(
        ask(&mut s, 0, "cmd=put value=x\n"),
        "cmd=put_result rc=-1 msg=missing_key\n"
    );
    // No value= stores the empty value, as hydra does; values keep `=`.
    assert_eq!(
        ask(&mut s, 0, "cmd=put key=e\n"),
        "cmd=put_result rc=0 msg=success\n"
    );
    assert!(get(&mut s, 0, "e").ends_with("value=\n"));
    put(&mut s, 0, "eq", "a=b");
    assert!(get(&mut s, 1, "eq").ends_with("value=a=b\n"));
}

#[test]
fn another_jobs_kvsname_is_refused() {
    let mut s = server(1);
    assert_eq!(
        ask(&mut s, 0, "cmd=put kvsname=other key=k value=v\n"),
        "cmd=put_result rc=-1 msg=unknown_kvsname_other\n"
    );
    assert_eq!(
        ask(&mut s, 0, "cmd=get kvsname=other key=k\n"),
        "cmd=get_result rc=-1 msg=unknown_kvsname_other\n"
    );
}

#[test]
fn abort_as_mpich_sends_it() {
    let mut s = server(2);
    mpich_init(&mut s, 1, 2);
    let (sends, other) = talk(&mut s, 1, "cmd=abort exitcode=7\n");
    assert!(sends.is_empty());
    assert_eq!(
        other,
        [Action::Abort {
            rank: 1,
            exit_code: 7,
            message: None
        }]
    );
    // Nothing more is answered for that rank.
    quiet(&mut s, 1, "cmd=get_maxes\n");
    assert!(s.on_disconnect(1).is_empty());
}

#[test]
fn abort_with_a_message_and_without_an_exit_code() {
    let mut s = server(1);
    let (_, other) = talk(
        &mut s,
        0,
        "cmd=abort exitcode=-1 message=PMI_Init failed: x=1 \n",
    );
    assert_eq!(
        other,
        [Action::Abort {
            rank: 0,
            exit_code: -1,
            message: Some("PMI_Init failed: x=1".into())
        }]
    );
    let mut s = server(1);
    let (_, other) = talk(&mut s, 0, "cmd=abort\n");
    assert_eq!(
        other,
        [Action::Abort {
            rank: 0,
            exit_code: 1,
            message: None
        }]
    );
}

// What hydra's proxy answers an MPICH client started with PMI_PORT and
// PMI_ID (mpiexec -pmi-port), all in one write.
#[test]
fn initack_handshake() {
    let mut s = server(2);
    assert_eq!(
        ask(&mut s, 1, "cmd=initack pmiid=1\n"),
        "cmd=initack\ncmd=set size=2\ncmd=set rank=1\ncmd=set debug=0\n"
    );
    let (sends, other) = talk(&mut s, 0, "cmd=initack pmiid=1\n");
    assert_eq!(
        sends,
        [(0, "cmd=initack rc=-1 msg=pmiid_1_is_not_rank_0\n".into())]
    );
    assert!(matches!(
        &other[..],
        [Action::ProtocolError { rank: 0, .. }]
    ));
}

#[test]
fn other_pmi_versions_are_refused() {
    let mut s = server(1);
    let (sends, other) = talk(&mut s, 0, "cmd=init pmi_version=2 pmi_subversion=0\n");
    assert_eq!(
        sends[0].1,
        "cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=-1 msg=unsupported_PMI_version_2.0\n"
    );
    match &other[..] {
        [Action::ProtocolError { rank: 0, message }] => {
            assert!(message.contains("PMI version 2.0"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(!s.initialized(0));
    // PMI 1.0 clients are welcome, with or without a subversion.
    assert!(ask(&mut s, 0, "cmd=init pmi_version=1 pmi_subversion=0\n").ends_with("rc=0\n"));
    assert!(ask(&mut s, 0, "cmd=init pmi_version=1\n").ends_with("rc=0\n"));
}

#[test]
fn unknown_commands_get_an_error_and_are_reported() {
    let mut s = server(1);
    let (sends, other) = talk(&mut s, 0, "cmd=frobnicate a=b\n");
    assert_eq!(
        sends,
        [(0, "cmd=error rc=-1 msg=unknown_command_frobnicate\n".into())]
    );
    match &other[..] {
        [Action::ProtocolError { rank: 0, message }] => {
            assert!(message.contains("frobnicate"), "{message}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn name_publishing_is_refused_under_the_expected_reply() {
    let mut s = server(1);
    for (req, reply) in [
        ("cmd=publish_name service=s port=p\n", "publish_result"),
        ("cmd=unpublish_name service=s\n", "unpublish_result"),
        ("cmd=lookup_name service=s\n", "lookup_result"),
    ] {
        let (sends, other) = talk(&mut s, 0, req);
        assert!(
            sends[0].1.starts_with(&format!("cmd={reply} rc=-1 msg=")),
            "{sends:?}"
        );
        assert_eq!(other.len(), 1);
    }
}

// The blocks MPICH 4.0's PMI_Spawn_multiple writes for two commands.
#[test]
fn spawn_is_refused_after_the_last_block() {
    let mut s = server(1);
    let block = |n: u32| {
        format!(
            "mcmd=spawn\nnprocs=1\nexecname=./child\ntotspawns=2\nspawnssofar={n}\n\
             argcnt=0\npreput_num=0\ninfo_num=0\nendcmd\n"
        )
    };
    quiet(&mut s, 0, &block(1));
    let (sends, other) = talk(&mut s, 0, &block(2));
    assert_eq!(
        sends,
        [(
            0,
            "cmd=spawn_result rc=-1 msg=spawn_is_not_supported_by_this_launcher\n".into()
        )]
    );
    assert!(matches!(
        &other[..],
        [Action::ProtocolError { rank: 0, .. }]
    ));
    // The connection goes on.
    assert!(ask(&mut s, 0, "cmd=get_maxes\n").starts_with("cmd=maxes"));
}

#[test]
fn malformed_and_overlong_messages_get_an_error_reply() {
    let mut s = server(1);
    let (sends, other) = talk(&mut s, 0, "cmd=put =v\n");
    assert_eq!(
        sends,
        [(0, "cmd=put_result rc=-1 msg=malformed_message\n".into())]
    );
    assert!(matches!(&other[..], [Action::ProtocolError { .. }]));
    let (sends, _) = talk(&mut s, 0, "hello\n");
    assert_eq!(
        sends,
        [(0, "cmd=error rc=-1 msg=malformed_message\n".into())]
    );
    // Blank lines are ignored.
    quiet(&mut s, 0, "\n  \n");
    let long = format!("cmd=put key=k value={}\n", "x".repeat(100_000));
    let (sends, other) = talk(&mut s, 0, &long);
    assert_eq!(
        sends,
        [(0, "cmd=put_result rc=-1 msg=message_too_long\n".into())]
    );
    match &other[..] {
        [Action::ProtocolError { message, .. }] => {
            assert!(message.contains("100021 bytes"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(ask(&mut s, 0, "cmd=get_maxes\n").starts_with("cmd=maxes"));
}

#[test]
fn a_rank_may_put_a_bounded_number_of_keys() {
    let mut s = server(2);
    for i in 0..MAX_KEYS_PER_RANK {
        put(&mut s, 0, &format!("k{i}"), "v");
    }
    // Putting a key again with the same value does not count.
    put(&mut s, 0, "k0", "v");
    let refused = (
        0,
        "cmd=put_result rc=-1 msg=too_many_keys_(a_rank_may_put_1024)\n".to_string(),
    );
    let (sends, other) = talk(&mut s, 0, &format!("cmd=put kvsname={KVS} key=x value=v\n"));
    assert_eq!(sends, std::slice::from_ref(&refused));
    match &other[..] {
        [Action::ProtocolError { rank: 0, message }] => assert_eq!(
            message,
            "rank 0 put more than 1024 PMI keys, the limit for one rank; its further new keys are refused"
        ),
        other => panic!("{other:?}"),
    }
    // Reported once; the refusals go on.
    let (sends, other) = talk(&mut s, 0, &format!("cmd=put kvsname={KVS} key=y value=v\n"));
    assert_eq!((sends, other), (vec![refused], vec![]));
    // Other ranks have their own allowance, and gets still work.
    put(&mut s, 1, "x", "w");
    assert_eq!(
        get(&mut s, 0, "x"),
        "cmd=get_result rc=0 msg=success value=w\n"
    );
    assert_eq!(
        get(&mut s, 1, "k1023"),
        "cmd=get_result rc=0 msg=success value=v\n"
    );
}

#[test]
fn protocol_errors_quote_short_excerpts() {
    let mut s = server(1);
    let huge = "z".repeat(30_000);
    for (request, cut) in [
        (format!("cmd={huge}\n"), true),
        (
            format!("cmd=init pmi_version={huge} pmi_subversion={huge}\n"),
            true,
        ),
        (format!("cmd=initack pmiid={huge}\n"), true),
        (format!("cmd=put ={huge}\n"), true),
        // Too long: the message gives the length and the first 80 bytes.
        (format!("cmd=put key={huge}{huge}{huge}\n"), false),
        // Cut off by the disconnection: the same.
        (format!("cmd=put key={huge}"), false),
    ] {
        let mut actions = s.on_bytes(0, request.as_bytes());
        actions.extend(s.on_disconnect(0));
        s = server(1);
        let messages: Vec<&String> = actions
            .iter()
            .filter_map(|a| match a {
                Action::ProtocolError { message, .. } => Some(message),
                _ => None,
            })
            .collect();
        assert!(!messages.is_empty(), "{}", &request[..20]);
        for m in messages {
            assert!(m.len() < 500, "{} bytes: {}", m.len(), &m[..500]);
            assert_eq!(m.contains("…("), cut, "{m}");
        }
    }
}

#[test]
fn ranks_outside_the_job_and_closed_connections() {
    let mut s = server(2);
    let (sends, other) = talk(&mut s, 5, "cmd=get_maxes\n");
    assert!(sends.is_empty());
    assert!(matches!(
        &other[..],
        [Action::ProtocolError { rank: 5, .. }]
    ));
    assert!(matches!(
        &s.on_disconnect(5)[..],
        [Action::ProtocolError { rank: 5, .. }]
    ));
    assert!(!s.finalized(5) && !s.initialized(5) && !s.in_barrier(5));

    quiet(&mut s, 0, "cmd=put key=x va");
    match &s.on_disconnect(0)[..] {
        [Action::ProtocolError { rank: 0, message }] => {
            assert!(message.contains("middle of a message"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    assert!(s.on_disconnect(0).is_empty());
    let (_, other) = talk(&mut s, 0, "cmd=get_maxes\n");
    assert!(matches!(
        &other[..],
        [Action::ProtocolError { rank: 0, .. }]
    ));
}

#[test]
fn a_barrier_missing_a_rank_does_not_complete() {
    let mut s = server(3);
    quiet(&mut s, 0, "cmd=barrier_in\n");
    quiet(&mut s, 1, "cmd=barrier_in\n");
    let (sends, other) = talk(&mut s, 1, "cmd=barrier_in\n");
    assert!(sends.is_empty());
    assert!(matches!(
        &other[..],
        [Action::ProtocolError { rank: 1, .. }]
    ));
    assert_eq!(s.barrier_waiting(), 2);
    // Rank 2 goes away: nothing to do for the server; mpirun decides.
    assert!(s.on_disconnect(2).is_empty());
    assert_eq!(s.barrier_waiting(), 2);
}

#[test]
fn job_info_is_sanitized_and_served() {
    let job = JobInfo {
        size: 3,
        kvsname: "my job\n".into(),
        universe_size: 8,
        appnum_of_rank: vec![0, 1],
        process_mapping: "(vector, (0,1,3))".into(),
    };
    let mut s = PmiServer::new(job);
    assert_eq!(s.job().kvsname, "my_job_");
    assert_eq!(
        ask(&mut s, 0, "cmd=get_my_kvsname\n"),
        "cmd=my_kvsname kvsname=my_job_\n"
    );
    assert_eq!(
        ask(&mut s, 2, "cmd=get_universe_size\n"),
        "cmd=universe_size size=8\n"
    );
    assert_eq!(ask(&mut s, 1, "cmd=get_appnum\n"), "cmd=appnum appnum=1\n");
    assert_eq!(ask(&mut s, 2, "cmd=get_appnum\n"), "cmd=appnum appnum=0\n");
    assert_eq!(
        ask(&mut s, 0, "cmd=get key=PMI_process_mapping\n"),
        "cmd=get_result rc=0 msg=success value=(vector,(0,1,3))\n"
    );
    let long = PmiServer::new(JobInfo::new(1, "k".repeat(300)));
    assert_eq!(long.job().kvsname.len(), 255);
    assert_eq!(PmiServer::new(JobInfo::new(1, "")).job().kvsname, "kvs_0");
    // An empty mapping is "not found", never an empty value.
    let mut job = JobInfo::new(1, "k");
    job.process_mapping.clear();
    let mut s = PmiServer::new(job);
    assert!(ask(&mut s, 0, "cmd=get key=PMI_process_mapping\n").starts_with("cmd=get_result rc=-1"));
}

proptest! {
    #[test]
    fn never_panics(
        steps in prop::collection::vec(
            (0u32..4, prop::collection::vec(
                prop::sample::select(vec![
                    &b"cmd="[..], b"mcmd=spawn\n", b"endcmd\n", b"init ", b"put ", b"get ",
                    b"barrier_in", b"abort", b"key=k ", b"value=v", b"kvsname=kvs ",
                    b"pmi_version=1", b"\n", b" ", b"=", b"\xff", b"initack pmiid=1",
                    b"finalize", b"spawnssofar=1\ntotspawns=1\n", b"get_maxes",
                    &[b'q'; 3000][..], b"frob",
                ]),
                0..12)),
            0..60),
        disconnect in prop::option::of(0u32..4),
    ) {
        let mut s = server(3);
        for (rank, parts) in &steps {
            let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
            for a in s.on_bytes(*rank, &bytes) {
                match a {
                    Action::Send { rank, bytes } => {
                        prop_assert!(rank < 3);
                        prop_assert!(bytes.ends_with(b"\n"));
                    }
                    Action::ProtocolError { message, .. } => {
                        prop_assert!(message.len() < 1000, "{}", message);
                    }
                    Action::Abort { .. } => {}
                }
            }
            if disconnect == Some(*rank) {
                let _ = s.on_disconnect(*rank);
            }
        }
    }
}
