//! The workload's clients: N threads in the client namespace, each a closed
//! loop (one request at a time, like wrk) that fetches an object, times it
//! and fetches the next until the run's end; requests in flight then may
//! finish during a drain period (so slow requests are not cut off in favour
//! of fast ones), and whatever is still open after it is counted as
//! unfinished.
//!
//! A request is the object size as 8 big-endian bytes; the reply is that
//! many bytes. With a new connection per request the time runs from before
//! `connect` (the handshake counts, like curl's total time) to the last
//! byte; with keep-alive from the request's write. Must never connect
//! anywhere but the lab's server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use bbrkit_vocab::WorkloadSpec;
use rand_core::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use crate::error::Result;
use crate::topology::Topology;

/// What the clients do.
#[derive(Debug, Clone, Copy)]
pub struct ClientSpec {
    /// Object sizes.
    pub objects: WorkloadSpec,
    /// Concurrent clients.
    pub clients: usize,
    /// One connection per client instead of one per request.
    pub keepalive: bool,
    /// How long new requests start.
    pub duration: Duration,
    /// How long requests in flight at the end may still finish.
    pub drain: Duration,
    /// Seed of the object-size draws.
    pub seed: u64,
}

/// What the clients got.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientOutcome {
    /// Completed requests: (object bytes, completion time in ms).
    pub done: Vec<(u64, f64)>,
    /// Requests that failed (refused, reset, short reply).
    pub failed: u64,
    /// Requests still in flight when the drain ended (or the run was
    /// cancelled).
    pub unfinished: u64,
}

/// Runs the clients against `server` on `topo`.
pub fn run(
    topo: &Topology,
    server: SocketAddr,
    spec: &ClientSpec,
    cancel: &AtomicBool,
) -> Result<ClientOutcome> {
    let start = Instant::now();
    let deadline = start + spec.duration;
    let hard = deadline + spec.drain;
    let outcomes: Vec<Result<ClientOutcome>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..spec.clients)
            .map(|i| {
                s.spawn(move || {
                    topo.client.enter()?;
                    let seed = spec.seed.wrapping_mul(0x9e37_79b9).wrapping_add(i as u64);
                    let c = Client {
                        spec,
                        server,
                        deadline,
                        hard,
                        cancel,
                    };
                    Ok(c.run(Pcg64Mcg::seed_from_u64(seed)))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut all = ClientOutcome::default();
    for o in outcomes {
        let o = o?;
        all.done.extend(o.done);
        all.failed += o.failed;
        all.unfinished += o.unfinished;
    }
    Ok(all)
}

/// One client's loop.
struct Client<'a> {
    spec: &'a ClientSpec,
    server: SocketAddr,
    deadline: Instant,
    hard: Instant,
    cancel: &'a AtomicBool,
}

/// How one request ended.
enum Fetch {
    Done(f64),
    Failed,
    Unfinished,
}

impl Client<'_> {
    fn run(&self, mut rng: Pcg64Mcg) -> ClientOutcome {
        let mut out = ClientOutcome::default();
        let mut conn: Option<TcpStream> = None;
        while Instant::now() < self.deadline && !self.cancel.load(Ordering::Relaxed) {
            let u = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
            let bytes = self.spec.objects.object_bytes(u);
            let t0 = Instant::now();
            let fetched = match conn.take() {
                Some(c) => self.fetch(&c, bytes, t0).map(|f| (f, c)),
                None => self
                    .connect()
                    .and_then(|c| self.fetch(&c, bytes, t0).map(|f| (f, c))),
            };
            match fetched {
                Some((Fetch::Done(ms), c)) => {
                    out.done.push((bytes, ms));
                    if self.spec.keepalive {
                        conn = Some(c);
                    } else {
                        close_at_once(&c);
                    }
                }
                Some((Fetch::Unfinished, c)) => {
                    close_at_once(&c);
                    out.unfinished += 1;
                    break;
                }
                Some((Fetch::Failed, _)) | None => {
                    out.failed += 1;
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        }
        if let Some(c) = conn {
            close_at_once(&c);
        }
        out
    }

    fn connect(&self) -> Option<TcpStream> {
        let s = TcpStream::connect_timeout(&self.server, Duration::from_secs(10)).ok()?;
        s.set_read_timeout(Some(Duration::from_millis(50))).ok()?;
        s.set_nodelay(true).ok()?;
        Some(s)
    }

    /// Requests `bytes` on `s` and reads the reply; `t0` is when the
    /// request began (before `connect` for a new connection).
    fn fetch(&self, s: &TcpStream, bytes: u64, t0: Instant) -> Option<Fetch> {
        let mut w = s;
        if w.write_all(&bytes.to_be_bytes()).is_err() {
            return Some(Fetch::Failed);
        }
        let mut buf = vec![0u8; 256 * 1024];
        let mut got = 0u64;
        let mut r = s;
        while got < bytes {
            if Instant::now() >= self.hard || self.cancel.load(Ordering::Relaxed) {
                return Some(Fetch::Unfinished);
            }
            match r.read(&mut buf) {
                Ok(0) => return Some(Fetch::Failed),
                Ok(n) => got += n as u64,
                Err(e) if is_timeout(&e) => {}
                Err(_) => return Some(Fetch::Failed),
            }
        }
        Some(Fetch::Done(t0.elapsed().as_secs_f64() * 1e3))
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Closes with a reset: the reply is complete, and thousands of short
/// connections must not sit in TIME_WAIT holding the client's ports.
fn close_at_once(s: &TcpStream) {
    let _ = socket2::SockRef::from(s).set_linger(Some(Duration::ZERO));
}
