//! The other process of the sock_ops root tests and the policy benchmark:
//! a TCP peer that the tests place in a throwaway cgroup (so the policy
//! program governs its sockets), and a policy attacher that outlives or
//! dies before its pin. Needs root for `attach`.
//!
//! ```text
//! policy_peer peer [--listen ADDR]... [--dual ADDR]... [--listen-cc ADDR=CC]...
//!                  [--accept N] [--reply BYTES] [--to ADDR]... [--to-cc ADDR=CC]... [--send BYTES]
//!     listens (prints "ready"), connects to each --to in order (a socket with
//!     --to-cc sets TCP_CONGESTION before connecting; --send writes that many
//!     bytes on it), accepts N connections (--reply writes that many bytes
//!     on each), prints one line per connection:
//!         conn active|passive COOKIE LOCAL REMOTE CC
//!     then "done"; closes every socket when a line arrives on stdin, prints
//!     "closed" and exits.
//! policy_peer attach --policy FILE --cgroup DIR [--salt N] [--pin DIR] [--hold]
//!     attaches the policy (prints "attached LINK_ID"), pins it (prints
//!     "pinned") and exits, or with --hold waits for stdin to close.
//! ```
//!
//! `--dual` listens on an IPv6 socket that also accepts IPv4 (IPv4-mapped
//! peers); `--listen` on IPv6 is IPv6-only.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bbrkit_bpf::sockops::Attachment;
use socket2::{Domain, Socket, Type};

/// `SO_COOKIE` (include/uapi/asm-generic/socket.h): the socket's cookie,
/// as `bpf_get_socket_cookie` sees it.
const SO_COOKIE: libc::c_int = 57;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let r = match args.first().map(String::as_str) {
        Some("peer") => peer(&args[1..]),
        Some("attach") => attach(&args[1..]),
        _ => Err("usage: policy_peer peer ... | attach ...".into()),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("policy_peer: {e}");
            ExitCode::from(2)
        }
    }
}

type Res<T> = Result<T, String>;

fn cookie(fd: &impl AsRawFd) -> u64 {
    let mut v = 0u64;
    let mut len = 8 as libc::socklen_t;
    // SAFETY: `v` and `len` describe a valid 8-byte buffer the call fills.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_SOCKET,
            SO_COOKIE,
            (&mut v as *mut u64).cast(),
            &mut len,
        )
    };
    if rc == 0 { v } else { 0 }
}

fn cc(s: &Socket) -> String {
    s.tcp_congestion()
        .map(|b| {
            String::from_utf8_lossy(&b)
                .trim_end_matches('\0')
                .to_string()
        })
        .unwrap_or_else(|e| format!("?{e}"))
}

fn report(side: &str, s: &Socket) {
    let addr = |a: std::io::Result<socket2::SockAddr>| {
        a.ok()
            .and_then(|a| a.as_socket())
            .map_or("?".to_string(), |a| a.to_string())
    };
    println!(
        "conn {side} {} {} {} {}",
        cookie(s),
        addr(s.local_addr()),
        addr(s.peer_addr()),
        cc(s)
    );
}

fn listener(addr: SocketAddr, v6only: bool, cc: Option<&str>) -> Res<TcpListener> {
    let s =
        Socket::new(Domain::for_address(addr), Type::STREAM, None).map_err(|e| e.to_string())?;
    s.set_reuse_address(true).map_err(|e| e.to_string())?;
    if addr.is_ipv6() {
        s.set_only_v6(v6only).map_err(|e| e.to_string())?;
    }
    if let Some(cc) = cc {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| format!("TCP_CONGESTION {cc}: {e}"))?;
    }
    s.bind(&addr.into())
        .map_err(|e| format!("bind {addr}: {e}"))?;
    s.listen(1024).map_err(|e| e.to_string())?;
    s.set_nonblocking(true).map_err(|e| e.to_string())?;
    Ok(s.into())
}

fn connect(addr: SocketAddr, cc: Option<&str>, send: usize) -> Res<Socket> {
    let s =
        Socket::new(Domain::for_address(addr), Type::STREAM, None).map_err(|e| e.to_string())?;
    if let Some(cc) = cc {
        s.set_tcp_congestion(cc.as_bytes())
            .map_err(|e| format!("TCP_CONGESTION {cc}: {e}"))?;
    }
    s.connect(&addr.into())
        .map_err(|e| format!("connect {addr}: {e}"))?;
    if send > 0 {
        let mut t: TcpStream = s.try_clone().map_err(|e| e.to_string())?.into();
        t.write_all(&vec![7u8; send]).map_err(|e| e.to_string())?;
    }
    Ok(s)
}

fn split_eq(v: &str) -> Res<(SocketAddr, String)> {
    let (a, c) = v.rsplit_once('=').ok_or(format!("{v}: expected ADDR=CC"))?;
    Ok((a.parse().map_err(|e| format!("{a}: {e}"))?, c.to_string()))
}

fn peer(args: &[String]) -> Res<()> {
    let mut listeners = Vec::new();
    let mut to: Vec<(SocketAddr, Option<String>)> = Vec::new();
    let (mut accept, mut send, mut reply) = (0usize, 0usize, 0usize);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let addr = || v.parse::<SocketAddr>().map_err(|e| format!("{v}: {e}"));
        match flag.as_str() {
            "--listen" => listeners.push(listener(addr()?, true, None)?),
            "--dual" => listeners.push(listener(addr()?, false, None)?),
            "--listen-cc" => {
                let (a, c) = split_eq(v)?;
                listeners.push(listener(a, true, Some(&c))?);
            }
            "--accept" => accept = v.parse().map_err(|e| format!("{v}: {e}"))?,
            "--to" => to.push((addr()?, None)),
            "--to-cc" => {
                let (a, c) = split_eq(v)?;
                to.push((a, Some(c)));
            }
            "--send" => send = v.parse().map_err(|e| format!("{v}: {e}"))?,
            "--reply" => reply = v.parse().map_err(|e| format!("{v}: {e}"))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    println!("ready");
    let acceptor = std::thread::spawn(move || accept_n(&listeners, accept, reply));
    let mut held = Vec::new();
    for (addr, cc) in &to {
        let s = connect(*addr, cc.as_deref(), send)?;
        report("active", &s);
        held.push(s);
    }
    held.extend(acceptor.join().map_err(|_| "acceptor panicked")??);
    println!("done");
    let mut line = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    drop(held);
    println!("closed");
    Ok(())
}

/// Accepts `n` connections over all listeners (60 s at most), writing
/// `reply` bytes on each.
fn accept_n(listeners: &[TcpListener], n: usize, reply: usize) -> Res<Vec<Socket>> {
    let mut out = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(60);
    while out.len() < n {
        if Instant::now() > deadline {
            return Err(format!("accepted {} of {n} connections in 60 s", out.len()));
        }
        let mut idle = true;
        for l in listeners {
            if let Ok((s, _)) = l.accept() {
                idle = false;
                let s = Socket::from(s);
                let _ = s.set_nonblocking(false);
                report("passive", &s);
                // Drain what the other side sends, so its writes complete.
                let mut r: TcpStream = s.try_clone().map_err(|e| e.to_string())?.into();
                let mut w = r.try_clone().map_err(|e| e.to_string())?;
                std::thread::spawn(move || std::io::copy(&mut r, &mut std::io::sink()));
                if reply > 0 {
                    std::thread::spawn(move || w.write_all(&vec![9u8; reply]));
                }
                out.push(s);
            }
        }
        if idle {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    Ok(out)
}

fn attach(args: &[String]) -> Res<()> {
    let (mut policy, mut cgroup, mut pin, mut salt, mut hold) = (None, None, None, 0u64, false);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--hold" {
            hold = true;
            continue;
        }
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--policy" => policy = Some(PathBuf::from(v)),
            "--cgroup" => cgroup = Some(PathBuf::from(v)),
            "--pin" => pin = Some(PathBuf::from(v)),
            "--salt" => salt = v.parse().map_err(|e| format!("{v}: {e}"))?,
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    let (policy, cgroup) = (policy.ok_or("--policy")?, cgroup.ok_or("--cgroup")?);
    let mut text = String::new();
    std::fs::File::open(&policy)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| format!("{}: {e}", policy.display()))?;
    let p =
        bbrkit_policy::parse(&policy.display().to_string(), &text).map_err(|e| e.to_string())?;
    let compiled = bbrkit_policy::Compiled::new(&p, salt);
    let mut a = Attachment::attach(&compiled, &cgroup).map_err(|e| chain(&e))?;
    let d = a.describe().map_err(|e| chain(&e))?;
    println!("attached {}", d.link_id);
    if let Some(dir) = pin {
        a.pin(&dir).map_err(|e| chain(&e))?;
        println!("pinned");
    }
    if hold {
        let mut sink = Vec::new();
        let _ = std::io::stdin().read_to_end(&mut sink);
    }
    Ok(())
}

fn chain(e: &(dyn std::error::Error + 'static)) -> String {
    bbrkit_diag::error_chain(e)
}
