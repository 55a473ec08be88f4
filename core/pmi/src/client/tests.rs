use super::*;
use crate::local::{socket_pairs, LocalServer};
use crate::server::{JobInfo, PmiServer};
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::os::fd::IntoRawFd;
use std::sync::mpsc;
use std::thread;

/// Runs `f` in a thread and fails the test if it takes longer than 20 s
/// (a hang is the bug these tests look for).
fn within<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the PMI client hung")
}

/// A scripted server: for each expected request line, the reply to write
/// (`None`: close the connection instead of replying).
fn scripted(script: Vec<(&'static str, Option<&'static str>)>) -> UnixStream {
    let (client_end, server_end) = UnixStream::pair().unwrap();
    thread::spawn(move || {
        let mut reader = BufReader::new(server_end.try_clone().unwrap());
        let mut writer = server_end;
        for (expect, reply) in script {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            assert!(
                line.starts_with(expect),
                "expected {expect:?}, got {line:?}"
            );
            match reply {
                Some(r) => writer.write_all(r.as_bytes()).unwrap(),
                None => return,
            }
        }
        // Keep the connection open until the client closes it.
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
    });
    client_end
}

const HANDSHAKE: [(&str, Option<&str>); 4] = [
    (
        "cmd=init pmi_version=1 pmi_subversion=1\n",
        Some("cmd=response_to_init pmi_version=1 pmi_subversion=1 rc=0\n"),
    ),
    (
        "cmd=get_maxes\n",
        Some("cmd=maxes kvsname_max=256 keylen_max=64 vallen_max=1024\n"),
    ),
    ("cmd=get_appnum\n", Some("cmd=appnum appnum=0\n")),
    (
        "cmd=get_my_kvsname\n",
        Some("cmd=my_kvsname kvsname=kvs_1\n"),
    ),
];

fn with_handshake(rest: Vec<(&'static str, Option<&'static str>)>) -> PmiClient {
    let mut script = HANDSHAKE.to_vec();
    script.extend(rest);
    PmiClient::from_unix_stream(scripted(script), 0, 1).unwrap()
}

#[test]
fn ranks_exchange_values_through_the_server() {
    let size = 3;
    let (servers, ranks) = socket_pairs(size).unwrap();
    let host = LocalServer::start(JobInfo::new(size, "kvs_test"), servers).unwrap();
    let handles: Vec<_> = ranks
        .into_iter()
        .enumerate()
        .map(|(rank, stream)| {
            thread::spawn(move || -> Result<(), PmiError> {
                let mut c = PmiClient::from_unix_stream(stream, rank as u32, size)?;
                assert_eq!(c.kvsname(), "kvs_test");
                assert_eq!(c.maxes(), Maxes::HYDRA);
                assert_eq!(c.appnum(), 0);
                assert!(!c.is_singleton());
                assert_eq!(c.universe_size()?, 3);
                c.put(&format!("card-{rank}"), &format!("addr={rank}"))?;
                c.barrier()?;
                for other in 0..size {
                    assert_eq!(
                        c.get(&format!("card-{other}"))?,
                        Some(format!("addr={other}"))
                    );
                }
                assert_eq!(c.get("no-such-key")?, None);
                assert_eq!(
                    c.get("PMI_process_mapping")?,
                    Some("(vector,(0,1,3))".into())
                );
                c.barrier()?;
                c.finalize()?;
                assert!(matches!(
                    c.put("late", "x"),
                    Err(PmiError::Ended {
                        ended_by: "finalize",
                        ..
                    })
                ));
                assert_eq!((c.rank(), c.size()), (rank as u32, size));
                Ok(())
            })
        })
        .collect();
    for h in handles {
        within(move || h.join().unwrap()).unwrap();
    }
    let outcome = host.wait();
    assert_eq!(outcome.protocol_errors, Vec::<(u32, String)>::new());
    assert_eq!(outcome.finalized, vec![true; 3]);
    assert_eq!(outcome.initialized, vec![true; 3]);
    assert_eq!(outcome.abort, None);
}

#[test]
fn a_singleton_works_alone() {
    let mut c = PmiClient::singleton();
    assert!(c.is_singleton());
    assert_eq!((c.rank(), c.size(), c.appnum()), (0, 1, 0));
    assert!(c.kvsname().starts_with("singleton_kvs_"));
    assert_eq!(c.universe_size().unwrap(), 1);
    c.put("k", "v").unwrap();
    c.barrier().unwrap();
    assert_eq!(c.get("k").unwrap(), Some("v".into()));
    assert_eq!(c.get("other").unwrap(), None);
    assert_eq!(
        c.get("PMI_process_mapping").unwrap(),
        Some("(vector,(0,1,1))".into())
    );
    let e = c.put("k", "w").unwrap_err();
    assert!(matches!(e, PmiError::Refused { .. }), "{e}");
    assert!(e.to_string().contains("duplicate_key_k"), "{e}");
    c.finalize().unwrap();
    assert!(matches!(c.barrier(), Err(PmiError::Ended { .. })));
    assert!(matches!(c.finalize(), Err(PmiError::Ended { .. })));
    // Abort of a singleton returns at once (the caller exits).
    PmiClient::singleton().abort(3, "bye").unwrap();
}

#[test]
fn a_server_that_closes_mid_request_is_an_error_not_a_hang() {
    let e = within(|| {
        PmiClient::from_unix_stream(scripted(vec![("cmd=init", None)]), 0, 1).unwrap_err()
    });
    assert!(matches!(e, PmiError::Closed { .. }), "{e}");
    assert!(e.to_string().contains("init"), "{e}");

    let e = within(|| {
        let mut c = with_handshake(vec![("cmd=barrier_in", None)]);
        c.barrier().unwrap_err()
    });
    assert!(
        matches!(&e, PmiError::Closed { during } if during.contains("barrier")),
        "{e}"
    );
    assert!(e.to_string().contains("launcher"), "{e}");

    // A half-written reply followed by the end of the connection.
    let (client_end, mut server_end) = UnixStream::pair().unwrap();
    let t = thread::spawn(move || {
        let mut buf = [0u8; 64];
        let _ = server_end.read(&mut buf);
        server_end.write_all(b"cmd=response_to_ini").unwrap();
    });
    let e = within(move || PmiClient::from_unix_stream(client_end, 0, 1).unwrap_err());
    assert!(matches!(e, PmiError::Closed { .. }), "{e}");
    t.join().unwrap();
}

#[test]
fn writing_to_a_vanished_server_is_an_error() {
    let (client_end, server_end) = UnixStream::pair().unwrap();
    drop(server_end);
    let e = within(move || PmiClient::from_unix_stream(client_end, 0, 1).unwrap_err());
    assert!(matches!(e, PmiError::Closed { .. }), "{e}");
}

#[test]
fn the_forms_of_not_found() {
    let mut c = with_handshake(vec![
        (
            "cmd=get kvsname=kvs_1 key=a\n",
            Some("cmd=get_result rc=-1 msg=key_a_not_found value=unknown\n"),
        ),
        (
            "cmd=get kvsname=kvs_1 key=b\n",
            Some("cmd=get_result rc=1\n"),
        ),
        (
            "cmd=get kvsname=kvs_1 key=c\n",
            Some("cmd=get_result rc=1 msg=key_not_found\n"),
        ),
        (
            "cmd=get kvsname=kvs_1 key=d\n",
            Some("cmd=get_result found=FALSE rc=0\n"),
        ),
        (
            "cmd=get kvsname=kvs_1 key=e\n",
            Some("cmd=get_result rc=0 msg=success value=\n"),
        ),
        (
            "cmd=get kvsname=kvs_1 key=f\n",
            Some("cmd=get_result found=TRUE value=x=y rc=0\n"),
        ),
        (
            "cmd=get kvsname=kvs_1 key=g\n",
            Some("cmd=get_result rc=-1 msg=unknown_kvsname_kvs_1\n"),
        ),
    ]);
    within(move || {
        for key in ["a", "b", "c", "d"] {
            assert_eq!(c.get(key).unwrap(), None, "{key}");
        }
        assert_eq!(c.get("e").unwrap(), Some(String::new()));
        assert_eq!(c.get("f").unwrap(), Some("x=y".into()));
        let e = c.get("g").unwrap_err();
        assert!(
            matches!(&e, PmiError::Refused { rc, msg, .. } if rc == "-1" && msg == "unknown_kvsname_kvs_1"),
            "{e}"
        );
    });
}

#[test]
fn unexpected_and_refused_replies() {
    let mut c = with_handshake(vec![
        ("cmd=barrier_in\n", Some("cmd=put_result rc=0\n")),
        (
            "cmd=put kvsname=kvs_1 key=k value=v\n",
            Some("cmd=put_result rc=-1 msg=duplicate_key_k_with_a_different_value\n"),
        ),
        (
            "cmd=get_universe_size\n",
            Some("cmd=error rc=-1 msg=unknown_command_get_universe_size\n"),
        ),
        ("cmd=finalize\n", Some("garbage\n")),
    ]);
    within(move || {
        let e = c.barrier().unwrap_err();
        assert!(matches!(e, PmiError::Protocol { .. }), "{e}");
        assert!(e.to_string().contains("expected cmd=barrier_out"), "{e}");
        let e = c.put("k", "v").unwrap_err();
        assert!(matches!(e, PmiError::Refused { .. }), "{e}");
        assert!(e.to_string().contains("duplicate_key_k"), "{e}");
        let e = c.universe_size().unwrap_err();
        assert!(e.to_string().contains("unknown_command"), "{e}");
        let e = c.finalize().unwrap_err();
        assert!(matches!(e, PmiError::Protocol { .. }), "{e}");
        assert!(e.to_string().contains("garbage"), "{e}");
    });
}

#[test]
fn a_server_of_another_pmi_version_is_refused() {
    let stream = scripted(vec![(
        "cmd=init",
        Some("cmd=response_to_init pmi_version=2 pmi_subversion=0 rc=-1\n"),
    )]);
    let e = within(move || PmiClient::from_unix_stream(stream, 0, 1).unwrap_err());
    assert!(matches!(e, PmiError::Refused { .. }), "{e}");
    assert!(e.to_string().contains("PMI 2.0"), "{e}");
}

#[test]
fn bad_maxes_are_a_protocol_error() {
    let stream = scripted(vec![
        HANDSHAKE[0],
        (
            "cmd=get_maxes",
            Some("cmd=maxes kvsname_max=256 keylen_max=lots\n"),
        ),
    ]);
    let e = within(move || PmiClient::from_unix_stream(stream, 0, 1).unwrap_err());
    assert!(e.to_string().contains("keylen_max"), "{e}");
}

#[test]
fn keys_and_values_the_protocol_cannot_carry_are_refused_before_sending() {
    // The scripted server would fail the test on any put.
    let mut c = with_handshake(vec![]);
    for (key, value) in [
        ("", "v"),
        ("a b", "v"),
        ("a=b", "v"),
        ("a\\b", "v"),
        ("k", "a b"),
        ("k", "a\nb"),
        ("k", "a\\b"),
        ("k", "nul\0"),
    ] {
        let e = c.put(key, value).unwrap_err();
        assert!(
            matches!(e, PmiError::Invalid { .. }),
            "{key:?}={value:?}: {e}"
        );
    }
    let e = c.put(&"k".repeat(65), "v").unwrap_err();
    assert!(e.to_string().contains("keylen_max is 64"), "{e}");
    let e = c.put("k", &"v".repeat(1025)).unwrap_err();
    assert!(e.to_string().contains("vallen_max is 1024"), "{e}");
    let e = c.get("a b").unwrap_err();
    assert!(matches!(e, PmiError::Invalid { .. }), "{e}");
}

#[test]
fn abort_reaches_the_launcher_and_returns_when_it_closes() {
    let (servers, mut ranks) = socket_pairs(2).unwrap();
    let host = LocalServer::start(JobInfo::new(2, "kvs_abort"), servers).unwrap();
    let waiting = ranks.pop().unwrap();
    let aborting = ranks.pop().unwrap();
    // Rank 1 waits in a barrier that rank 0 never enters.
    let (connected_tx, connected) = mpsc::channel();
    let waiter = thread::spawn(move || {
        let mut c = PmiClient::from_unix_stream(waiting, 1, 2).unwrap();
        connected_tx.send(()).unwrap();
        c.barrier().unwrap_err()
    });
    connected.recv_timeout(Duration::from_secs(20)).unwrap();
    let took = within(move || {
        let mut c = PmiClient::from_unix_stream(aborting, 0, 2).unwrap();
        let start = Instant::now();
        c.abort(3, "out of\nluck").unwrap();
        assert!(matches!(
            c.get("x"),
            Err(PmiError::Ended {
                ended_by: "abort",
                ..
            })
        ));
        start.elapsed()
    });
    assert!(took < PmiClient::ABORT_GRACE, "abort waited {took:?}");
    let e = within(move || waiter.join().unwrap());
    assert!(matches!(e, PmiError::Closed { .. }), "{e}");
    let outcome = host.wait();
    assert_eq!(outcome.abort, Some((0, 3, Some("out of luck".into()))));
}

#[test]
fn abort_text_is_one_line_of_tokens() {
    assert_eq!(abort_text("a\nb  c\r\n"), "a b c");
    assert_eq!(abort_text("x =y ="), "x :y :");
    assert_eq!(abort_text(""), "");
}

// The PMI_PORT mode of hydra (`mpiexec -pmi-port`): TCP, then the
// initack handshake that tells rank and size.
#[test]
fn pmi_port_with_initack() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut pmi = PmiServer::new(JobInfo::new(2, "kvs_port"));
        let mut buf = [0u8; 1024];
        loop {
            let n = stream.read(&mut buf).unwrap_or(0);
            if n == 0 {
                return pmi.finalized(1);
            }
            for a in pmi.on_bytes(1, &buf[..n]) {
                if let crate::Action::Send { bytes, .. } = a {
                    stream.write_all(&bytes).unwrap();
                }
            }
        }
    });
    let c = within(move || {
        let mut c = PmiClient::connect(Launch::Port {
            host: "127.0.0.1".into(),
            port,
            id: Some(1),
            rank: 0,
            size: 1,
        })
        .unwrap();
        c.finalize().unwrap();
        c
    });
    assert_eq!((c.rank(), c.size()), (1, 2));
    assert_eq!(c.kvsname(), "kvs_port");
    assert!(server.join().unwrap());
}

#[test]
fn pmi_port_that_refuses_connections() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let e = PmiClient::connect(Launch::Port {
        host: "127.0.0.1".into(),
        port,
        id: None,
        rank: 0,
        size: 1,
    })
    .unwrap_err();
    assert!(matches!(e, PmiError::Connect { .. }), "{e}");
    assert!(e.to_string().contains(&format!("127.0.0.1:{port}")), "{e}");
}

// The only test that takes a descriptor the way PMI_FD does (the claim is
// process-wide).
#[test]
fn pmi_fd_is_checked_and_claimed_once() {
    let e = PmiClient::connect(Launch::Fd {
        fd: 1_000_000,
        rank: 0,
        size: 1,
    })
    .unwrap_err();
    assert!(matches!(e, PmiError::FdNotOpen { fd: 1_000_000 }), "{e}");

    let (servers, mut ranks) = socket_pairs(1).unwrap();
    let host = LocalServer::start(JobInfo::new(1, "kvs_fd"), servers).unwrap();
    let fd = ranks.pop().unwrap().into_raw_fd();
    let launch = Launch::Fd {
        fd,
        rank: 0,
        size: 1,
    };
    let mut c = PmiClient::connect(launch.clone()).unwrap();
    // SAFETY: F_GETFD only reads the flags.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFD) };
    assert!(flags & libc::FD_CLOEXEC != 0);
    let e = PmiClient::connect(launch).unwrap_err();
    assert!(matches!(e, PmiError::AlreadyConnected { .. }), "{e}");
    c.finalize().unwrap();
    drop(c);
    assert_eq!(host.wait().finalized, vec![true]);
}

#[test]
fn long_replies_are_quoted_short() {
    let huge = "r".repeat(30_000);
    let mut c = with_handshake(vec![
        (
            "cmd=barrier_in\n",
            Some(format!("cmd=put_result rc=0 x={huge}\n").leak()),
        ),
        (
            "cmd=put kvsname=kvs_1 key=k value=v\n",
            Some(format!("cmd=put_result rc={huge} msg={huge}\n").leak()),
        ),
        (
            "cmd=get_universe_size\n",
            Some(format!("cmd=universe_size size={huge}\n").leak()),
        ),
    ]);
    within(move || {
        let e = c.barrier().unwrap_err().to_string();
        assert!(e.len() < 400 && e.contains("…(30022 bytes)"), "{e}");
        let e = c.put("k", "v").unwrap_err().to_string();
        assert!(e.len() < 400 && e.contains("rc=rrrr"), "{e}");
        let e = c.universe_size().unwrap_err().to_string();
        assert!(e.len() < 600 && e.contains("is not a number"), "{e}");
    });
}

#[test]
fn a_reply_without_end_is_an_error_not_unbounded_buffering() {
    // The server sends 1 MB without a newline: the client gives up once it
    // holds more than MAX_MESSAGE_LEN bytes.
    let (client_end, mut server_end) = UnixStream::pair().unwrap();
    let server = thread::spawn(move || {
        let mut reader = BufReader::new(server_end.try_clone().unwrap());
        for (_, reply) in HANDSHAKE {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            server_end.write_all(reply.unwrap().as_bytes()).unwrap();
        }
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        // The client stops reading: the writes may fail, which is fine.
        let _ = server_end.write_all(&vec![b'x'; 1 << 20]);
    });
    let mut c = PmiClient::from_unix_stream(client_end, 0, 1).unwrap();
    let e = within(move || c.barrier().unwrap_err());
    assert!(matches!(e, PmiError::Protocol { .. }), "{e}");
    let e = e.to_string();
    assert!(
        e.contains(&format!(
            "a reply longer than {MAX_MESSAGE_LEN} bytes without a newline"
        )),
        "{e}"
    );
    assert!(e.len() < 400, "{e}");
    let _ = server.join();
}
