//! Measures the tcp btl against raw sockets over loopback, two processes:
//! 8-byte ping-pong latency and 1 MiB streaming bandwidth.
//!
//! Usage: `cargo run --release -p oxmpi-btl-tcp --example tcp_pingpong [-- --iters N]`
//!
//! Both variants busy-poll nonblocking sockets with `TCP_NODELAY` on
//! 127.0.0.1 and pin the two processes to CPUs 0 and 1 when there are
//! two. The btl variant sends a 16-byte header (like a pml's) with each
//! payload and places large payloads directly into the receiver's buffer;
//! the raw variant moves bare bytes. Output lines: `raw lat 8 <us>`,
//! `btl lat 8 <us>`, `raw bw 1048576 <MB/s>`, `btl bw 1048576 <MB/s>`,
//! `btl bw-128k 1048576 <MB/s>` (the 1 MiB messages cut into 128 KiB
//! fragments, as a pml with the default max_send_size does).
//!
//! `--btl-first` runs the btl variant first; the environment variable
//! `TCP_PINGPONG_NO_PIN` leaves the processes unpinned.
//!
//! `--overhead` instead measures, in one thread of one process (so without
//! any scheduling noise), the CPU time of an idle `progress` call against
//! a raw `recv` that finds nothing, and of one 8-byte fragment sent and
//! delivered against a raw write and read of 8 bytes.

use std::cell::RefCell;
use std::ffi::c_void;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::Instant;

use abi_stable::std_types::{ROption, RStr};
use mca_btl_tcp::{Config, TcpBtl};
use oxmpi_framework_btl::adapter::{Btl, Payload, Pml, Sent};
use oxmpi_framework_btl::module::{BtlReceiver, FragmentRef, JobIdentity, RdmaStatus};
use oxmpi_plugin_api::reexports::PrefixTypeTrait;
use oxmpi_plugin_api::{ComponentContext, ParamValue, Services};

const BIG: usize = 1 << 20;
const WINDOW: usize = 32;
const HEADER: [u8; 16] = [0x42; 16];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let iters: usize = value(&args, "--iters").map_or(20_000, |v| v.parse().expect("--iters N"));
    let reps: usize = value(&args, "--reps").map_or(20, |v| v.parse().expect("--reps N"));
    if let Some(port) = value(&args, "--raw-child") {
        pin(1);
        raw_child(port.parse().unwrap(), iters, reps);
        return;
    }
    if let Some(card) = value(&args, "--btl-child") {
        pin(1);
        btl_side(1, Some(unhex(&card)), iters, reps);
        return;
    }
    pin(0);
    if args.iter().any(|a| a == "--overhead") {
        overhead(iters);
        return;
    }
    if args.iter().any(|a| a == "--btl-first") {
        btl_side(0, None, iters, reps);
        raw_parent(iters, reps);
    } else {
        raw_parent(iters, reps);
        btl_side(0, None, iters, reps);
    }
}

fn value(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn pin(cpu: usize) {
    if std::env::var_os("TCP_PINGPONG_NO_PIN").is_some() {
        return;
    }
    // SAFETY: plain system calls on our own process.
    unsafe {
        if libc::sysconf(libc::_SC_NPROCESSORS_ONLN) < 2 {
            return;
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

fn spawn(extra: &[&str], iters: usize, reps: usize) -> std::process::Child {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = Command::new(exe);
    cmd.args(extra)
        .args(["--iters", &iters.to_string(), "--reps", &reps.to_string()])
        .stdout(Stdio::piped());
    cmd.spawn().expect("spawn the peer")
}

// ---- raw --------------------------------------------------------------------

fn read_exact_spin(s: &mut TcpStream, buf: &mut [u8]) {
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => panic!("peer closed"),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
    }
}

fn write_all_spin(s: &mut TcpStream, buf: &[u8]) {
    let mut put = 0;
    while put < buf.len() {
        match s.write(&buf[put..]) {
            Ok(n) => put += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => panic!("{e}"),
        }
    }
}

fn raw_parent(iters: usize, reps: usize) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port().to_string();
    let mut child = spawn(&["--raw-child", &port], iters, reps);
    let (mut s, _) = l.accept().unwrap();
    s.set_nodelay(true).unwrap();
    s.set_nonblocking(true).unwrap();
    let mut b8 = [0u8; 8];
    for _ in 0..1000 {
        write_all_spin(&mut s, &b8);
        read_exact_spin(&mut s, &mut b8);
    }
    let t = Instant::now();
    for _ in 0..iters {
        write_all_spin(&mut s, &b8);
        read_exact_spin(&mut s, &mut b8);
    }
    println!(
        "raw lat 8 {:.2}",
        t.elapsed().as_secs_f64() * 1e6 / (2 * iters) as f64
    );
    let big = vec![7u8; BIG];
    let mut best = 0.0f64;
    for _ in 0..reps {
        let t = Instant::now();
        for _ in 0..WINDOW {
            write_all_spin(&mut s, &big);
        }
        read_exact_spin(&mut s, &mut b8[..1]);
        let mbs = (WINDOW * BIG) as f64 / t.elapsed().as_secs_f64() / 1e6;
        best = best.max(mbs);
    }
    println!("raw bw {BIG} {best:.0}");
    child.wait().unwrap();
}

fn raw_child(port: u16, iters: usize, reps: usize) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_nodelay(true).unwrap();
    s.set_nonblocking(true).unwrap();
    let mut b8 = [0u8; 8];
    for _ in 0..1000 + iters {
        read_exact_spin(&mut s, &mut b8);
        write_all_spin(&mut s, &b8);
    }
    let mut big = vec![0u8; BIG];
    for _ in 0..reps {
        for _ in 0..WINDOW {
            read_exact_spin(&mut s, &mut big);
        }
        write_all_spin(&mut s, &b8[..1]);
    }
}

// ---- btl --------------------------------------------------------------------

/// The receiving pml's state: a count of fragments and the message buffer
/// large payloads are placed into.
///
/// The example has its own minimal receiver rather than the btl test
/// kit's recorder: it measures the btl's per-message cost, and the
/// recorder's work per callback (its checks, copies of every header and
/// payload, a guarded buffer of its own filled for every placed payload)
/// would be measured with it; a pml places a large message's fragments
/// into one buffer at their offsets, as this receiver does.
#[derive(Default)]
struct Rx {
    frags: usize,
    dest: Vec<u8>,
}

unsafe extern "C" fn on_header(
    ctx: *mut c_void,
    _m: u32,
    _p: u32,
    header: *const u8,
    header_len: usize,
    len: usize,
) -> *mut u8 {
    // SAFETY: `ctx` is the `RefCell<Rx>` of `make_side`, alive while its
    // btl runs; no borrow of it is held while the btl makes progress.
    let rx = unsafe { &mut *(*(ctx as *const RefCell<Rx>)).as_ptr() };
    if len >= 4096 && header_len >= 8 {
        // SAFETY: the btl's header is readable for `header_len` bytes.
        let header = unsafe { std::slice::from_raw_parts(header, 8) };
        // The header's first 8 bytes carry the offset into the message.
        let off = u64::from_le_bytes(header.try_into().unwrap()) as usize;
        match rx.dest.get_mut(off..off + len) {
            Some(d) => d.as_mut_ptr(),
            None => std::ptr::null_mut(),
        }
    } else {
        std::ptr::null_mut()
    }
}

unsafe extern "C" fn on_fragment(
    ctx: *mut c_void,
    _m: u32,
    _p: u32,
    _h: *const u8,
    _hl: usize,
    _payload: *const u8,
    _len: usize,
) {
    // SAFETY: as in `on_header`.
    unsafe { (*(*(ctx as *const RefCell<Rx>)).as_ptr()).frags += 1 };
}

unsafe extern "C" fn on_fragments(
    ctx: *mut c_void,
    _m: u32,
    _fragments: *const FragmentRef,
    count: usize,
) {
    // SAFETY: as in `on_header`.
    unsafe { (*(*(ctx as *const RefCell<Rx>)).as_ptr()).frags += count };
}

unsafe extern "C" fn on_send_done(_ctx: *mut c_void, _cookie: u64) {}

unsafe extern "C" fn on_peer_failed(_ctx: *mut c_void, _m: u32, peer: u32, why: RStr<'_>) {
    panic!("rank {peer} failed: {why}");
}

unsafe extern "C" fn on_rdma_done(_ctx: *mut c_void, cookie: u64, _status: RdmaStatus) {
    panic!("on_rdma_done (cookie {cookie}) from tcp, which offers no get/put");
}

extern "C" fn no_param(_: RStr<'_>) -> ROption<ParamValue> {
    ROption::RNone
}
extern "C" fn quiet(_: RStr<'_>) -> i32 {
    -1
}
extern "C" fn no_log(_: RStr<'_>, _: RStr<'_>, _: i32, _: RStr<'_>) {}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

/// One btl instance with the receiver its progress delivers to (what a
/// pml registers; the example drives the `Btl` value directly).
struct Side {
    btl: TcpBtl,
    rx: std::rc::Rc<RefCell<Rx>>,
    receiver: BtlReceiver,
    ep: u64,
}

impl Side {
    fn frags(&self) -> usize {
        self.rx.borrow().frags
    }

    fn progress(&mut self) -> usize {
        self.btl.progress(&pml_of(&self.receiver))
    }

    fn wait(&mut self, n: usize) {
        while self.frags() < n {
            self.progress();
        }
    }

    fn send(&mut self, header: &[u8], payload: &[u8]) {
        loop {
            // SAFETY: payloads outlive their sends (the callers wait for
            // the peer's acknowledgement before reusing or dropping them).
            let token = unsafe { Payload::from_raw(payload.as_ptr(), payload.len(), 0) };
            match self.btl.send(0, self.ep, header, token) {
                Sent::Done(_) | Sent::Queued => return,
                Sent::WouldBlock(_) => {
                    self.progress();
                }
                Sent::Failed(_) => panic!("send failed"),
            }
        }
    }
}

fn btl_side(rank: u32, peer_card: Option<Vec<u8>>, iters: usize, reps: usize) {
    let (btl, rx, receiver) = make_side(rank);
    let (peer_card, mut child) = match peer_card {
        Some(card) => {
            println!("{}", hex(&btl.contact_card()));
            std::io::stdout().flush().unwrap();
            (card, None)
        }
        None => {
            let mut child = spawn(&["--btl-child", &hex(&btl.contact_card())], iters, reps);
            let mut line = String::new();
            BufReader::new(child.stdout.as_mut().unwrap())
                .read_line(&mut line)
                .unwrap();
            (unhex(line.trim()), Some(child))
        }
    };
    let mut s = Side {
        btl,
        rx,
        receiver,
        ep: 0,
    };
    s.ep = s
        .btl
        .add_peer(0, 1 - rank, &peer_card)
        .expect("reach the peer");
    let b8 = [1u8; 8];
    let mut seen = 0;
    if rank == 0 {
        for _ in 0..1000 {
            s.send(&HEADER, &b8);
            seen += 1;
            s.wait(seen);
        }
        let t = Instant::now();
        for _ in 0..iters {
            s.send(&HEADER, &b8);
            seen += 1;
            s.wait(seen);
        }
        println!(
            "btl lat 8 {:.2}",
            t.elapsed().as_secs_f64() * 1e6 / (2 * iters) as f64
        );
    } else {
        for _ in 0..1000 + iters {
            seen += 1;
            s.wait(seen);
            s.send(&HEADER, &b8);
        }
    }
    let big = vec![7u8; BIG];
    for (name, frag) in [("bw", BIG), ("bw-128k", 128 * 1024)] {
        let mut best = 0.0f64;
        for _ in 0..reps {
            if rank == 0 {
                let t = Instant::now();
                for _ in 0..WINDOW {
                    for off in (0..BIG).step_by(frag) {
                        let mut h = HEADER;
                        h[..8].copy_from_slice(&(off as u64).to_le_bytes());
                        s.send(&h, &big[off..off + frag]);
                    }
                }
                seen += 1;
                s.wait(seen);
                best = best.max((WINDOW * BIG) as f64 / t.elapsed().as_secs_f64() / 1e6);
            } else {
                seen += WINDOW * (BIG / frag);
                s.wait(seen);
                s.send(&HEADER, &b8);
            }
        }
        if rank == 0 {
            println!("btl {name} {BIG} {best:.0}");
        }
    }
    // Let the last acknowledgement leave before finalizing.
    for _ in 0..1000 {
        s.progress();
    }
    s.btl.finalize();
    if let Some(c) = child.as_mut() {
        c.wait().unwrap();
    }
    let _ = std::io::stdout().flush();
}

/// The callbacks of a receiver made by [`make_side`].
fn pml_of(rx: &BtlReceiver) -> Pml<'_> {
    // SAFETY: every receiver here is made by `make_side`, whose callbacks
    // take the `Rx` its `ctx` points at, kept alive next to the receiver;
    // one thread drives both sides.
    unsafe { Pml::from_receiver(rx) }
}

fn make_side(rank: u32) -> (TcpBtl, std::rc::Rc<RefCell<Rx>>, BtlReceiver) {
    let services = Services {
        param_value: no_param,
        verbosity: quiet,
        log: no_log,
    }
    .leak_into_prefix();
    let ctx = ComponentContext {
        services,
        framework: RStr::from_str("btl"),
        component: RStr::from_str("tcp"),
    };
    let me = JobIdentity {
        job_id: 1,
        secret: [2, 3],
        rank,
        size: 2,
    };
    let rx = std::rc::Rc::new(RefCell::new(Rx {
        frags: 0,
        dest: vec![0u8; BIG],
    }));
    let receiver = BtlReceiver {
        ctx: std::rc::Rc::as_ptr(&rx) as *mut c_void,
        on_header,
        on_fragment,
        on_fragments,
        on_send_done,
        on_peer_failed,
        on_rdma_done,
    };
    let cfg = Config {
        if_include: "lo".into(),
        port_min_v4: 0,
        ..Config::default()
    };
    let ifs = mca_btl_tcp::discover::local_interfaces().unwrap();
    (
        TcpBtl::new(cfg, me, ctx, &ifs).expect("tcp btl"),
        rx,
        receiver,
    )
}

fn overhead(iters: usize) {
    let (mut a, _ra, a_receiver) = make_side(0);
    let (mut b, rb, b_receiver) = make_side(1);
    let (a_pml, b_pml) = (pml_of(&a_receiver), pml_of(&b_receiver));
    let card = b.contact_card();
    let ep = a.add_peer(0, 1, &card).unwrap();
    let b8 = [1u8; 8];
    let send = |a: &mut TcpBtl| {
        // SAFETY: b8 outlives the sends.
        let token = unsafe { Payload::from_raw(b8.as_ptr(), 8, 0) };
        let out = a.send(0, ep, &HEADER, token);
        assert!(matches!(out, Sent::Done(_) | Sent::Queued));
    };
    send(&mut a);
    while rb.borrow().frags < 1 {
        a.progress(&a_pml);
        b.progress(&b_pml);
    }
    // Raw pair.
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
    let (mut d, _) = l.accept().unwrap();
    c.set_nodelay(true).unwrap();
    d.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 64];
    // Many short batches; the minimum of each measure is the least
    // disturbed by other load on the machine.
    let (mut idle_btl, mut idle_raw, mut msg_btl, mut msg_raw) =
        (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
    let batch = (iters / 10).max(100);
    for _ in 0..30 {
        let t = Instant::now();
        for _ in 0..batch * 10 {
            b.progress(&b_pml);
        }
        idle_btl = idle_btl.min(t.elapsed().as_secs_f64() * 1e9 / (batch * 10) as f64);
        let t = Instant::now();
        for _ in 0..batch * 10 {
            let _ = d.read(&mut buf);
        }
        idle_raw = idle_raw.min(t.elapsed().as_secs_f64() * 1e9 / (batch * 10) as f64);
        let t = Instant::now();
        for _ in 0..batch {
            let want = rb.borrow().frags + 1;
            send(&mut a);
            while rb.borrow().frags < want {
                b.progress(&b_pml);
            }
        }
        msg_btl = msg_btl.min(t.elapsed().as_secs_f64() * 1e9 / batch as f64);
        let t = Instant::now();
        for _ in 0..batch {
            c.write_all(&b8).unwrap();
            let mut got = 0;
            while got < 8 {
                if let Ok(n) = d.read(&mut buf[got..8]) {
                    got += n;
                }
            }
        }
        msg_raw = msg_raw.min(t.elapsed().as_secs_f64() * 1e9 / batch as f64);
    }
    // Streaming in one thread: WINDOW messages of 1 MiB (as one fragment,
    // then as 128 KiB fragments), placed directly, against raw bytes.
    let big = vec![7u8; BIG];
    let mut sink = vec![0u8; BIG];
    c.set_nonblocking(true).unwrap();
    let mut bw = [0.0f64; 3];
    for _ in 0..5 {
        for (k, frag) in [BIG, 128 * 1024].into_iter().enumerate() {
            let t = Instant::now();
            let want = rb.borrow().frags + WINDOW * (BIG / frag);
            for _ in 0..WINDOW {
                for off in (0..BIG).step_by(frag) {
                    let mut h = HEADER;
                    h[..8].copy_from_slice(&(off as u64).to_le_bytes());
                    // SAFETY: big outlives the transfer.
                    let token = unsafe { Payload::from_raw(big[off..].as_ptr(), frag, 0) };
                    let out = a.send(0, ep, &h, token);
                    assert!(matches!(out, Sent::Done(_) | Sent::Queued));
                }
            }
            while rb.borrow().frags < want {
                a.progress(&a_pml);
                b.progress(&b_pml);
            }
            bw[k] = bw[k].max((WINDOW * BIG) as f64 / t.elapsed().as_secs_f64() / 1e6);
        }
        let t = Instant::now();
        let (mut put, mut got) = (0usize, 0usize);
        while got < WINDOW * BIG {
            if put < WINDOW * BIG {
                let off = put % BIG;
                if let Ok(n) = c.write(&big[off..]) {
                    put += n;
                }
            }
            let off = got % BIG;
            if let Ok(n) = d.read(&mut sink[off..]) {
                got += n;
            }
        }
        bw[2] = bw[2].max((WINDOW * BIG) as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    println!(
        "one-thread streaming of 1 MiB messages: btl {:.0} MB/s, btl in 128 KiB fragments {:.0} MB/s, raw {:.0} MB/s (best of 5)",
        bw[0], bw[1], bw[2]
    );
    println!(
        "idle progress {idle_btl:.0} ns vs raw recv {idle_raw:.0} ns; \
         8-byte fragment send+deliver {msg_btl:.0} ns vs raw write+read {msg_raw:.0} ns (minimum of 30 batches)"
    );
}
