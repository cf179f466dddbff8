//! The built-in traffic tester: the server sends to the client for a fixed
//! time over N parallel TCP flows, like `iperf3 -R -P N`.
//!
//! Owns the flows' sockets (server side in the server namespace, client side
//! in the client namespace), `TCP_CONGESTION` on the sending or the receiving
//! side, receiver byte counts over exactly the test duration, `TCP_INFO`
//! samples of every sender every `sample_every`, and the senders' CPU time.
//! Must never open a socket outside the lab namespaces.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::error::{LabError, Result};
use crate::tcpinfo::{self, TcpSample};
use crate::topology::{SERVER_ADDR, Topology};

/// Which side gets the algorithm under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CcOn {
    /// The data sender (the server): the setting that matters.
    Sender,
    /// The data receiver only; the sender keeps its namespace default.
    Receiver,
    /// No socket: the host decides (the namespace default, or a cgroup
    /// sock_ops policy), `--cc host`.
    Host,
}

/// One flow of a test: its algorithm and when it starts sending.
#[derive(Debug, Clone, PartialEq)]
pub struct FlowSpec {
    /// Congestion control (ignored with [`CcOn::Host`]).
    pub cc: String,
    /// Start, after the test's common start instant.
    pub start: Duration,
}

/// One traffic test.
#[derive(Debug, Clone)]
pub struct TestSpec {
    /// The flows, each with its algorithm and start (a competition mixes
    /// algorithms; a bulk run has one algorithm on every flow).
    pub flows: Vec<FlowSpec>,
    /// Where the algorithms are set.
    pub cc_on: CcOn,
    /// How long the server sends (from the common start).
    pub duration: Duration,
    /// `TCP_INFO` sampling period.
    pub sample_every: Duration,
    /// A CPU the sending threads stay off: the one the split emulator's
    /// forwarder owns (see `Emulator::forwarder_cpu`), so the sender's
    /// transmit path (and its pacing timer, armed where it sends) runs on
    /// the other CPUs instead of delaying the ACKs.
    pub keep_off_cpu: Option<usize>,
}

impl TestSpec {
    /// `flows` flows of `cc`, all starting at once.
    pub fn uniform(cc: &str, flows: usize, cc_on: CcOn, duration: Duration) -> TestSpec {
        TestSpec {
            flows: vec![
                FlowSpec {
                    cc: cc.to_string(),
                    start: Duration::ZERO,
                };
                flows
            ],
            cc_on,
            duration,
            sample_every: Duration::from_millis(100),
            keep_off_cpu: None,
        }
    }
}

/// One flow's outcome.
#[derive(Debug, Clone, Serialize)]
pub struct FlowResult {
    /// Bytes the receiver read during the test.
    pub bytes: u64,
    /// Receiver goodput over the flow's sending time.
    pub bits_per_second: f64,
    /// Sender's `tcpi_total_retrans` at the end.
    pub retransmits: u64,
    /// Algorithm the sending socket used (read back with getsockopt).
    pub sender_tcp_congestion: String,
    /// Algorithm the receiving socket used.
    pub receiver_tcp_congestion: String,
    /// Final sample of the sender's `TCP_INFO`.
    pub end: TcpSample,
    /// Largest cwnd seen, bytes.
    pub max_snd_cwnd: u64,
    /// Mean of the sampled smoothed RTTs, µs.
    pub mean_rtt: u32,
    /// Largest sampled RTT, µs.
    pub max_rtt: u32,
    /// CPU seconds of the sending thread.
    pub sender_cpu_s: f64,
    /// Samples every `sample_every` (not in JSON; see `--timeseries`).
    #[serde(skip)]
    pub samples: Vec<TcpSample>,
}

/// All flows of one test.
#[derive(Debug, Clone, Serialize)]
pub struct TestResult {
    /// Sum over flows of receiver goodput.
    pub bits_per_second: f64,
    /// Sum over flows of bytes received.
    pub bytes: u64,
    /// Sum over flows of sender retransmissions.
    pub retransmits: u64,
    /// Sum over flows of sender CPU seconds.
    pub sender_cpu_s: f64,
    /// Sending time.
    pub duration_s: f64,
    /// Per flow.
    pub flows: Vec<FlowResult>,
}

const CHUNK: usize = 128 * 1024;

fn io(what: &str) -> impl FnOnce(std::io::Error) -> LabError + '_ {
    move |e| LabError::io(what, e)
}

/// Runs one test on `topo`. Stops early (with `Interrupted`) when `cancel` is set.
pub fn run_test(topo: &Topology, spec: &TestSpec, cancel: &AtomicBool) -> Result<TestResult> {
    let listener = topo
        .server
        .run(|| TcpListener::bind(SocketAddr::from((SERVER_ADDR, 0))).map_err(io("listen")))?;
    let server = listener.local_addr().map_err(io("listener address"))?;
    let clients: Vec<TcpStream> = topo.client.run(|| {
        spec.flows
            .iter()
            .map(|f| {
                let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)
                    .map_err(io("socket"))?;
                if spec.cc_on == CcOn::Receiver {
                    set_cc(&s, &f.cc)?;
                }
                s.connect_timeout(&server.into(), Duration::from_secs(10))
                    .map_err(io("connect to the server through the emulator"))?;
                Ok(TcpStream::from(s))
            })
            .collect()
    })?;
    let mut accepted = Vec::new();
    for _ in 0..clients.len() {
        accepted.push(accept_timeout(&listener, Duration::from_secs(10))?);
    }
    // Accept order follows handshake completion: pair sockets by port.
    let mut flows = Vec::new();
    for (client, f) in clients.into_iter().zip(&spec.flows) {
        let port = client.local_addr().map_err(io("local address"))?.port();
        let i = accepted
            .iter()
            .position(|(_, peer)| peer.port() == port)
            .ok_or_else(|| LabError::Invalid("a flow's server socket went missing".into()))?;
        let (srv, _) = accepted.swap_remove(i);
        if spec.cc_on == CcOn::Sender {
            set_cc(&srv, &f.cc)?;
        }
        abort_on_close(&client)?;
        abort_on_close(&srv)?;
        flows.push((Arc::new(client), Arc::new(srv)));
    }
    measure(flows, spec, cancel)
}

/// `SO_LINGER` 0: closing the socket resets the connection and frees it
/// at once. A graceful close would leave the sender orphaned with a full
/// send buffer (FIN_WAIT1/LAST_ACK) after the emulator that carried its
/// ACKs is gone, retransmitting into a torn-down link for minutes and
/// keeping the namespace (and a BPF congestion control's struct_ops map)
/// alive that long.
fn abort_on_close(sock: &TcpStream) -> Result<()> {
    socket2::SockRef::from(sock)
        .set_linger(Some(Duration::ZERO))
        .map_err(io("SO_LINGER 0"))
}

fn accept_timeout(listener: &TcpListener, timeout: Duration) -> Result<(TcpStream, SocketAddr)> {
    listener.set_nonblocking(true).map_err(io("listener"))?;
    let until = Instant::now() + timeout;
    loop {
        match listener.accept() {
            Ok((s, a)) => {
                s.set_nonblocking(false).map_err(io("accepted socket"))?;
                return Ok((s, a));
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < until => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Err(e) => return Err(LabError::io("accept a flow", e)),
        }
    }
}

/// Sets `TCP_CONGESTION` `cc` on `sock`.
pub fn set_cc(sock: &impl std::os::fd::AsFd, cc: &str) -> Result<()> {
    tcpinfo::set_congestion(sock, cc).map_err(|e| match e.raw_os_error() {
        Some(libc::ENOENT) => LabError::UnknownAlgorithm {
            wanted: cc.to_string(),
            available: tcpinfo::available_algorithms()
                .map(|v| v.join(" "))
                .unwrap_or_default(),
        },
        _ => LabError::io(format!("set TCP_CONGESTION {cc}"), e),
    })
}

fn measure(
    flows: Vec<(Arc<TcpStream>, Arc<TcpStream>)>,
    spec: &TestSpec,
    cancel: &AtomicBool,
) -> Result<TestResult> {
    let start = Instant::now() + Duration::from_millis(20);
    let deadline = start + spec.duration;
    let samples: Arc<Mutex<Vec<Vec<TcpSample>>>> =
        Arc::new(Mutex::new(vec![Vec::new(); flows.len()]));
    let mut out = Vec::new();
    std::thread::scope(|s| {
        let senders: Vec<_> = flows
            .iter()
            .zip(&spec.flows)
            .map(|((_, srv), f)| {
                let srv = srv.clone();
                let off = spec.keep_off_cpu;
                let from = (start + f.start).min(deadline);
                s.spawn(move || send(&srv, from, deadline, cancel, off))
            })
            .collect();
        let receivers: Vec<_> = flows
            .iter()
            .zip(&spec.flows)
            .map(|((cli, _), f)| {
                let cli = cli.clone();
                let from = (start + f.start).min(deadline);
                s.spawn(move || receive(&cli, from, deadline, cancel))
            })
            .collect();
        let sampler = {
            let samples = samples.clone();
            let socks: Vec<Arc<TcpStream>> = flows.iter().map(|f| f.1.clone()).collect();
            let every = spec.sample_every;
            s.spawn(move || sample(&socks, &samples, start, deadline, every, cancel))
        };
        let sent: Vec<_> = senders
            .into_iter()
            .map(|h| h.join().expect("sender"))
            .collect();
        let got: Vec<_> = receivers
            .into_iter()
            .map(|h| h.join().expect("receiver"))
            .collect();
        sampler.join().expect("sampler");
        let all = samples.lock().expect("samples lock");
        for (i, ((cli, srv), (end, cpu))) in flows.iter().zip(sent).enumerate() {
            let flow = Ended {
                bytes: got[i],
                end,
                cpu,
            };
            let active = spec.duration.saturating_sub(spec.flows[i].start);
            out.push(flow_result(
                cli,
                srv,
                flow,
                &all[i],
                (spec.duration, active),
            ));
        }
    });
    if cancel.load(Ordering::Relaxed) {
        return Err(LabError::Interrupted);
    }
    Ok(TestResult {
        bits_per_second: out.iter().map(|f| f.bits_per_second).sum(),
        bytes: out.iter().map(|f| f.bytes).sum(),
        retransmits: out.iter().map(|f| f.retransmits).sum(),
        sender_cpu_s: out.iter().map(|f| f.sender_cpu_s).sum(),
        duration_s: spec.duration.as_secs_f64(),
        flows: out,
    })
}

/// Samples every sender's `TCP_INFO` into `samples` from `start`, every
/// `every`, until `deadline` (or `cancel`).
fn sample(
    socks: &[Arc<TcpStream>],
    samples: &Mutex<Vec<Vec<TcpSample>>>,
    start: Instant,
    deadline: Instant,
    every: Duration,
    cancel: &AtomicBool,
) {
    sleep_until(start);
    let mut next = start;
    while Instant::now() < deadline && !cancel.load(Ordering::Relaxed) {
        let t = start.elapsed().as_secs_f64();
        let mut all = samples.lock().expect("samples lock");
        for (i, sock) in socks.iter().enumerate() {
            if let Ok(x) = tcpinfo::sample(&**sock, t) {
                all[i].push(x);
            }
        }
        drop(all);
        next += every;
        sleep_until(next.min(deadline));
    }
}

/// What one flow's sending and receiving threads came back with.
struct Ended {
    /// Bytes the receiver read.
    bytes: u64,
    /// The sender's final `TCP_INFO`, if it could be read.
    end: Option<TcpSample>,
    /// The sending thread's CPU seconds.
    cpu: f64,
}

/// One flow's result from its sockets, its threads' outcome, its periodic
/// `samples`, the test's duration and the flow's own sending time.
fn flow_result(
    cli: &TcpStream,
    srv: &TcpStream,
    flow: Ended,
    samples: &[TcpSample],
    (test, duration): (Duration, Duration),
) -> FlowResult {
    let mut end = flow.end.unwrap_or_default();
    end.t_s = test.as_secs_f64();
    let mut series = samples.to_vec();
    series.push(end);
    let rtts: Vec<u32> = series.iter().map(|x| x.rtt).filter(|&r| r > 0).collect();
    FlowResult {
        bytes: flow.bytes,
        bits_per_second: if duration.is_zero() {
            0.0
        } else {
            flow.bytes as f64 * 8.0 / duration.as_secs_f64()
        },
        retransmits: end.retransmits,
        sender_tcp_congestion: tcpinfo::congestion(srv).unwrap_or_default(),
        receiver_tcp_congestion: tcpinfo::congestion(cli).unwrap_or_default(),
        end,
        max_snd_cwnd: series.iter().map(|x| x.snd_cwnd).max().unwrap_or(0),
        mean_rtt: if rtts.is_empty() {
            0
        } else {
            (rtts.iter().map(|&r| r as u64).sum::<u64>() / rtts.len() as u64) as u32
        },
        max_rtt: rtts.iter().copied().max().unwrap_or(0),
        sender_cpu_s: flow.cpu,
        samples: series,
    }
}

fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// Moves the calling thread off `cpu` (best effort: not if it is the only
/// one allowed).
fn keep_off(cpu: usize) {
    use nix::sched::{CpuSet, sched_getaffinity, sched_setaffinity};
    let me = nix::unistd::Pid::from_raw(0);
    if let Ok(mut set) = sched_getaffinity(me) {
        let others = (0..CpuSet::count()).any(|c| c != cpu && set.is_set(c).unwrap_or(false));
        if others && set.unset(cpu).is_ok() {
            let _ = sched_setaffinity(me, &set);
        }
    }
}

/// Writes until `deadline`; returns the final `TCP_INFO` and CPU seconds.
fn send(
    sock: &TcpStream,
    start: Instant,
    deadline: Instant,
    cancel: &AtomicBool,
    keep_off_cpu: Option<usize>,
) -> (Option<TcpSample>, f64) {
    let _ = sock.set_write_timeout(Some(Duration::from_millis(20)));
    let buf = vec![0x5au8; CHUNK];
    if let Some(cpu) = keep_off_cpu {
        keep_off(cpu);
    }
    sleep_until(start);
    let cpu0 = tcpinfo::thread_cpu_s();
    let mut w = sock;
    while Instant::now() < deadline && !cancel.load(Ordering::Relaxed) {
        match w.write(&buf) {
            Ok(_) => {}
            Err(e) if is_transient(&e) => {}
            Err(_) => break,
        }
    }
    let end = tcpinfo::sample(sock, start.elapsed().as_secs_f64()).ok();
    (end, tcpinfo::thread_cpu_s() - cpu0)
}

/// A socket error after which the loop just goes on: the 20 ms socket
/// timeout ran out (so the deadline and `cancel` are checked) or a signal
/// interrupted the call.
fn is_transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::Interrupted
    )
}

/// Reads until `deadline`; returns the bytes read.
fn receive(sock: &TcpStream, start: Instant, deadline: Instant, cancel: &AtomicBool) -> u64 {
    let _ = sock.set_read_timeout(Some(Duration::from_millis(20)));
    let mut buf = vec![0u8; 256 * 1024];
    let mut r = sock;
    let mut bytes = 0u64;
    sleep_until(start);
    while Instant::now() < deadline && !cancel.load(Ordering::Relaxed) {
        match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => bytes += n as u64,
            Err(e) if is_transient(&e) => {}
            Err(_) => break,
        }
    }
    bytes
}
