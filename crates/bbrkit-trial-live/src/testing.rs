//! The governed TCP peer of the root tests and the benchmark (feature
//! `testing`, never part of the default API): a server that moves itself
//! into the trial's cgroup before it opens a socket, so the program governs
//! every connection it accepts, and the client side of the tests (outside
//! the cgroup: its sockets are not governed).
//!
//! ```text
//!   serve --cgroup DIR --listen ADDR [--listen ADDR]... [--reply BYTES] [--pace CC=BYTES_PER_S]
//!     joins DIR, listens, prints "ready PORT [PORT]...", then per accepted connection:
//!     (runs CC? pace it at BYTES_PER_S: a slow arm built for guardrail tests)
//!     writes BYTES, reads until the client closes, closes; exits when stdin closes
//!   fetch(from, to, bytes): connect from `from`, read `bytes`, close
//! ```

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use socket2::{Domain, Socket, Type};

/// What `serve` was asked for.
#[derive(Debug, Default)]
struct ServeArgs {
    cgroup: Option<PathBuf>,
    listen: Vec<SocketAddr>,
    reply: u64,
    pace: Option<(String, u64)>,
}

fn serve_args(args: &[String]) -> Result<ServeArgs, String> {
    let mut a = ServeArgs::default();
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let v = it.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |e: &dyn std::fmt::Display| format!("{flag} {v}: {e}");
        match flag.as_str() {
            "--cgroup" => a.cgroup = Some(PathBuf::from(v)),
            "--listen" => a.listen.push(v.parse().map_err(|e| bad(&e))?),
            "--reply" => a.reply = v.parse().map_err(|e| bad(&e))?,
            "--pace" => {
                let (cc, rate) = v.split_once('=').ok_or(bad(&"expected CC=RATE"))?;
                a.pace = Some((cc.into(), rate.parse().map_err(|e| bad(&e))?));
            }
            _ => return Err(format!("unknown flag {flag}")),
        }
    }
    Ok(a)
}

/// The peer's server: see the module documentation.
pub fn serve(args: &[String]) -> Result<(), String> {
    let a = serve_args(args)?;
    if let Some(dir) = &a.cgroup {
        // This process joins the cgroup before it creates any socket.
        std::fs::write(dir.join("cgroup.procs"), "0")
            .map_err(|e| format!("join {}: {e}", dir.display()))?;
    }
    let listeners = a
        .listen
        .iter()
        .map(|addr| TcpListener::bind(addr).map_err(|e| format!("listen {addr}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let ports: Vec<String> = listeners
        .iter()
        .map(|l| l.local_addr().map(|a| a.port().to_string()))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    println!("ready {}", ports.join(" "));
    std::io::stdout().flush().map_err(|e| e.to_string())?;
    let pace = a.pace.clone();
    for l in listeners {
        let pace = pace.clone();
        std::thread::spawn(move || accept_loop(l, a.reply, pace));
    }
    // Until the test closes our stdin.
    let mut sink = Vec::new();
    let _ = std::io::stdin().read_to_end(&mut sink);
    Ok(())
}

fn accept_loop(l: TcpListener, reply: u64, pace: Option<(String, u64)>) {
    for conn in l.incoming().flatten() {
        let pace = pace.clone();
        std::thread::spawn(move || {
            let _ = answer(conn, reply, pace);
        });
    }
}

/// One accepted connection: pace it if it runs the slow algorithm, send
/// `reply` bytes, wait for the client's close.
fn answer(conn: TcpStream, reply: u64, pace: Option<(String, u64)>) -> std::io::Result<()> {
    let s = Socket::from(conn);
    if let Some((cc, rate)) = pace
        && cc_of(&s).as_deref() == Some(cc.as_str())
    {
        set_max_pacing_rate(&s, rate)?;
    }
    let mut conn = TcpStream::from(s);
    let chunk = vec![0x5au8; 64 * 1024];
    let mut left = reply;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        conn.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    let mut buf = [0u8; 4096];
    while conn.read(&mut buf)? > 0 {}
    Ok(())
}

/// The socket's algorithm (`TCP_CONGESTION`).
pub fn cc_of(s: &Socket) -> Option<String> {
    s.tcp_congestion().ok().map(|b| {
        String::from_utf8_lossy(&b)
            .trim_end_matches('\0')
            .to_string()
    })
}

/// `SO_MAX_PACING_RATE`: the kernel paces the socket (TCP's internal
/// pacing without fq) at `bytes_per_second`.
fn set_max_pacing_rate(s: &Socket, bytes_per_second: u64) -> std::io::Result<()> {
    let v = bytes_per_second;
    // SAFETY: `v` is a live u64 and the length passed is its size; the
    // kernel reads at most that many bytes.
    let rc = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_MAX_PACING_RATE,
            (&v as *const u64).cast(),
            std::mem::size_of::<u64>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Connects from `from` (port 0) to `to`.
pub fn connect_from(from: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let s = Socket::new(Domain::for_address(to), Type::STREAM, None)?;
    s.bind(&SocketAddr::new(from, 0).into())?;
    s.connect(&to.into())?;
    Ok(s.into())
}

/// A request: connect from `from`, read `bytes` of reply, close; returns
/// the client's address (the server's record has it as the remote end).
pub fn fetch(from: IpAddr, to: SocketAddr, bytes: u64) -> std::io::Result<SocketAddr> {
    let mut c = connect_from(from, to)?;
    let local = c.local_addr()?;
    std::io::copy(&mut (&mut c).take(bytes), &mut std::io::sink())?;
    Ok(local)
}

/// A running `serve`.
#[derive(Debug)]
pub struct Peer {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The listening ports, in `--listen` order.
    pub ports: Vec<u16>,
}

impl Peer {
    /// Starts `cmd` (a program whose arguments end in `serve`'s) and waits
    /// for its `ready` line.
    pub fn start(mut cmd: Command) -> Peer {
        let child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn the peer");
        // Held by the peer at once: dropping it (a panic below) reaps it.
        let mut peer = Peer {
            child,
            stdin: None,
            ports: Vec::new(),
        };
        peer.stdin = peer.child.stdin.take();
        let mut out = BufReader::new(peer.child.stdout.take().expect("piped"));
        let mut line = String::new();
        loop {
            line.clear();
            let n = out.read_line(&mut line).unwrap_or(0);
            assert!(n > 0, "the peer exited before it was ready");
            if let Some(ports) = line.trim().strip_prefix("ready ") {
                peer.ports = ports
                    .split(' ')
                    .map(|p| p.parse().expect("a port"))
                    .collect();
                return peer;
            }
        }
    }

    /// `serve`'s arguments.
    pub fn args(
        cgroup: &Path,
        listen: &[SocketAddr],
        reply: u64,
        pace: Option<(&str, u64)>,
    ) -> Vec<String> {
        let mut a = vec!["--cgroup".into(), cgroup.display().to_string()];
        for l in listen {
            a.extend(["--listen".into(), l.to_string()]);
        }
        a.extend(["--reply".into(), reply.to_string()]);
        if let Some((cc, rate)) = pace {
            a.extend(["--pace".into(), format!("{cc}={rate}")]);
        }
        a
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Closes its stdin and waits for it to exit.
    pub fn stop(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The kernel objects a trial's program holds: the program, its maps and
/// the link (ids), for a leak check that looks at this trial's objects
/// only (other tests may attach their own meanwhile).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Held {
    /// Program id.
    pub prog: u32,
    /// Its maps' ids, ascending.
    pub maps: Vec<u32>,
    /// Link id.
    pub link: u32,
}

impl Held {
    /// The objects of program `prog` attached by `link` (while attached).
    pub fn of(prog: u32, link: u32) -> Held {
        use libbpf_rs::query::{ProgInfoIter, ProgInfoQueryOptions};
        let opts = ProgInfoQueryOptions::default().include_map_ids(true);
        // The iterator can end early when another object is freed under
        // it: a few tries find the program.
        let mut maps = (0..20)
            .find_map(|_| {
                let p = ProgInfoIter::with_query_opts(opts.clone()).find(|p| p.id == prog);
                if p.is_none() {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                p
            })
            .map(|p| p.map_ids)
            .unwrap_or_default();
        maps.sort_unstable();
        Held { prog, maps, link }
    }

    /// Those of them the kernel still has. Each id is looked up by itself
    /// (`BPF_*_GET_FD_BY_ID`): the kernel's id iterators end early when an
    /// object is freed between two steps, which other tests' programs do.
    pub fn alive(&self) -> Held {
        use libbpf_rs::libbpf_sys as sys;
        let keep = |id: u32, get: unsafe extern "C" fn(u32) -> i32| -> u32 {
            // SAFETY: the call takes a plain id and returns a new fd or a
            // negative error; the fd is owned (and closed) at once.
            let fd = unsafe { get(id) };
            if fd < 0 {
                return 0;
            }
            // SAFETY: `fd` was just returned to us and nothing else owns it.
            drop(unsafe { <std::os::fd::OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) });
            id
        };
        Held {
            prog: keep(self.prog, sys::bpf_prog_get_fd_by_id),
            maps: self
                .maps
                .iter()
                .map(|&m| keep(m, sys::bpf_map_get_fd_by_id))
                .filter(|&m| m != 0)
                .collect(),
            link: keep(self.link, sys::bpf_link_get_fd_by_id),
        }
    }

    /// Waits up to `timeout` for the kernel to free them all (it frees
    /// them asynchronously once the last reference is gone); returns what
    /// is left.
    pub fn wait_gone(&self, timeout: std::time::Duration) -> Option<Held> {
        let until = std::time::Instant::now() + timeout;
        loop {
            let left = self.alive();
            if left.prog == 0 && left.maps.is_empty() && left.link == 0 {
                return None;
            }
            if std::time::Instant::now() >= until {
                return Some(left);
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}
