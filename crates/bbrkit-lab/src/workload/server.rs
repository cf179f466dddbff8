//! The workload's server side: a process of its own, started by the lab
//! for each run, that enters the server namespace, joins the server
//! cgroup, listens, and answers each request (an 8-byte big-endian object
//! size) with that many bytes, until its standard input closes. Then it
//! prints one line of JSON ([`ServerStats`]) and exits.
//!
//! ```text
//!  lab (parent)                         server (child, in the cgroup)
//!  spawn ── fd 3 = server netns ──────► setns(3), join cgroup, listen
//!        ◄──── "ready <port>" ────────
//!  clients connect, request, time ────► accept, write N bytes, ...
//!  close stdin ───────────────────────► stop accepting, finish
//!        ◄──── {"connections":..} ────  exit 0
//! ```
//!
//! A separate process because a socket belongs to the cgroup of the task
//! that creates it, and only a whole process can join a (non-threaded)
//! cgroup. It dies with the thread that spawned it (`PR_SET_PDEATHSIG`),
//! so a SIGKILLed lab leaves no server behind. Must never listen outside
//! the server namespace.

use std::io::{BufRead, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{LabError, Result};
use crate::topology::SERVER_ADDR;

/// The descriptor number the server namespace is passed on.
pub const NETNS_FD: RawFd = 3;

/// What the server needs to know.
#[derive(Debug, Clone)]
pub struct ServerArgs {
    /// Descriptor of the server network namespace (inherited).
    pub netns_fd: RawFd,
    /// The cgroup v2 directory to join before any socket exists.
    pub cgroup: PathBuf,
    /// `TCP_CONGESTION` of the listener (every accepted connection
    /// inherits it); `None` leaves it to the host.
    pub cc: Option<String>,
}

/// What the server saw, printed as its last line.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerStats {
    /// Connections accepted.
    pub connections: u64,
    /// `tcpi_total_retrans` summed over connections, read as each ended.
    pub retransmits: u64,
    /// The algorithms the accepted connections ran (read back), sorted.
    pub tcp_congestion: Vec<String>,
}

/// Bytes per write.
const CHUNK: usize = 128 * 1024;

/// The server process's body; returns when standard input closes. Must be
/// called while the process has one thread (it enters a namespace and
/// joins a cgroup as a whole process).
pub fn serve(args: &ServerArgs) -> Result<ServerStats> {
    // SAFETY: the descriptor was inherited for this purpose and stays open
    // for the life of the process.
    let ns = unsafe { BorrowedFd::borrow_raw(args.netns_fd) };
    nix::sched::setns(ns, nix::sched::CloneFlags::CLONE_NEWNET)
        .map_err(|e| LabError::io("enter the server namespace", e.into()))?;
    super::cgroup::join(&args.cgroup)?;
    let listener = TcpListener::bind(SocketAddr::from((SERVER_ADDR, 0)))
        .map_err(|e| LabError::io("listen", e))?;
    if let Some(cc) = &args.cc {
        crate::tester::set_cc(&listener, cc)?;
    }
    let port = listener
        .local_addr()
        .map_err(|e| LabError::io("listener address", e))?
        .port();
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready {port}")
        .and_then(|()| out.flush())
        .map_err(|e| LabError::io("stdout", e))?;
    drop(out);
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let _ = std::io::stdin().lock().read_to_end(&mut Vec::new());
            stop.store(true, Ordering::Relaxed);
        })
    };
    let stats = accept_until(&listener, &stop)?;
    let _ = watcher.join();
    Ok(stats)
}

/// Accepts and serves connections until `stop`; then waits for the
/// connections to end.
fn accept_until(listener: &TcpListener, stop: &AtomicBool) -> Result<ServerStats> {
    listener
        .set_nonblocking(true)
        .map_err(|e| LabError::io("listener", e))?;
    let stats = Arc::new(Mutex::new(ServerStats::default()));
    let mut conns = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        match listener.accept() {
            Ok((s, _)) => {
                let stats = stats.clone();
                conns.push(std::thread::spawn(move || serve_connection(s, &stats)));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                let fd = listener.as_raw_fd();
                wait_readable(fd, 20);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(LabError::io("accept", e)),
        }
    }
    for c in conns {
        let _ = c.join();
    }
    let mut s = stats.lock().unwrap_or_else(|p| p.into_inner()).clone();
    s.tcp_congestion.sort();
    s.tcp_congestion.dedup();
    Ok(s)
}

/// Waits up to `ms` for `fd` to become readable.
fn wait_readable(fd: RawFd, ms: u16) {
    use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
    // SAFETY: `fd` is the listener's, open for the duration of the call.
    let b = unsafe { BorrowedFd::borrow_raw(fd) };
    let _ = poll(
        &mut [PollFd::new(b, PollFlags::POLLIN)],
        PollTimeout::from(ms),
    );
}

/// Answers requests on `s` until the client closes it.
fn serve_connection(s: TcpStream, stats: &Mutex<ServerStats>) {
    let _ = s.set_nonblocking(false);
    // A client that vanished must not hold the server open forever.
    let _ = s.set_write_timeout(Some(Duration::from_secs(30)));
    let _ = s.set_read_timeout(Some(Duration::from_secs(300)));
    let buf = vec![0x5au8; CHUNK];
    let mut r = &s;
    loop {
        let mut req = [0u8; 8];
        if r.read_exact(&mut req).is_err() {
            break;
        }
        let mut left = u64::from_be_bytes(req);
        let mut w = &s;
        while left > 0 {
            let n = left.min(CHUNK as u64) as usize;
            match w.write(&buf[..n]) {
                Ok(k) => left -= k as u64,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if left > 0 {
            break;
        }
    }
    let retrans = crate::tcpinfo::sample(&s, 0.0)
        .map(|x| x.retransmits)
        .unwrap_or(0);
    let cc = crate::tcpinfo::congestion(&s).unwrap_or_default();
    let mut st = stats.lock().unwrap_or_else(|p| p.into_inner());
    st.connections += 1;
    st.retransmits += retrans;
    if !cc.is_empty() && !st.tcp_congestion.contains(&cc) {
        st.tcp_congestion.push(cc);
    }
}

/// How to start the server process: a program and the arguments that make
/// it call [`serve`] (the CLI's hidden `bbrkit lab-server`); the lab adds
/// `--netns-fd 3 --cgroup DIR [--cc NAME]`.
#[derive(Debug, Clone)]
pub struct ServerLauncher {
    /// The executable.
    pub program: PathBuf,
    /// Its leading arguments.
    pub args: Vec<std::ffi::OsString>,
}

/// A running server process; killed and reaped on drop.
pub struct ServerProcess {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
    /// Its listening port.
    pub port: u16,
}

impl ServerProcess {
    /// Starts the server in the namespace `netns` and `cgroup`, and waits
    /// until it listens.
    pub fn start(
        launcher: &ServerLauncher,
        netns: BorrowedFd<'_>,
        cgroup: &Path,
        cc: Option<&str>,
    ) -> Result<ServerProcess> {
        let mut cmd = std::process::Command::new(&launcher.program);
        cmd.args(&launcher.args)
            .arg("--netns-fd")
            .arg(NETNS_FD.to_string())
            .arg("--cgroup")
            .arg(cgroup);
        if let Some(cc) = cc {
            cmd.arg("--cc").arg(cc);
        }
        cmd.stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped());
        with_namespace_fd(&mut cmd, netns);
        let mut child = cmd
            .spawn()
            .map_err(|e| LabError::io(format!("start {}", launcher.program.display()), e))?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut p = ServerProcess {
            child,
            lines,
            port: 0,
        };
        let ready = p.lines.recv_timeout(Duration::from_secs(10));
        p.port = match ready.as_deref().ok().and_then(|l| l.strip_prefix("ready ")) {
            Some(port) => port.trim().parse().map_err(|_| bad_server("a port"))?,
            None => return Err(bad_server("'ready <port>' within 10 s")),
        };
        Ok(p)
    }

    /// Closes its standard input, waits for it to finish and returns what
    /// it saw.
    pub fn finish(mut self) -> Result<ServerStats> {
        drop(self.child.stdin.take());
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .map_err(|_| bad_server("its statistics within 60 s"))?;
        let status = self
            .child
            .wait()
            .map_err(|e| LabError::io("wait for the server", e))?;
        if !status.success() {
            return Err(LabError::Invalid(format!(
                "the workload server failed ({status})"
            )));
        }
        serde_json::from_str(&line).map_err(|_| bad_server("its statistics as JSON"))
    }
}

/// Makes the process `cmd` starts find `netns` on descriptor
/// [`NETNS_FD`] and die with the thread that spawns it
/// (`PR_SET_PDEATHSIG`), also when the lab is killed with SIGKILL.
pub fn with_namespace_fd(cmd: &mut std::process::Command, netns: BorrowedFd<'_>) {
    use std::os::unix::process::CommandExt;
    let fd = netns.as_raw_fd();
    // SAFETY: between fork and exec the closure calls only
    // async-signal-safe functions (dup2, fcntl, prctl, getppid, _exit).
    unsafe {
        cmd.pre_exec(move || {
            // dup2 onto itself keeps FD_CLOEXEC: clear it by hand then (the
            // lab's first namespace is often descriptor 3 itself).
            let moved = if fd == NETNS_FD {
                libc::fcntl(fd, libc::F_SETFD, 0)
            } else {
                libc::dup2(fd, NETNS_FD)
            };
            if moved < 0 || libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() == 1 {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

fn bad_server(what: &str) -> LabError {
    LabError::Invalid(format!("the workload server did not print {what}"))
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
