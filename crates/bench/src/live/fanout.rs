//! Row 14 (issue 38, item 3): many phones watching one server. Thousands of session
//! watch streams (`GET /api/sessions/streams/watch`, the stream every SDK's
//! `watch(session)` reads) held open at once, a few on each of many sessions, and:
//!
//! - the server's memory per idle watcher: its resident size (and its private pages,
//!   `smaps_rollup`) with every watcher connected and settled, less the same before
//!   the first connected, divided by the watchers. The server runs in a child process
//!   of its own (this executable again, [`FANOUT_SERVER_ENTRY`]), so the figure is the
//!   server's alone, not the watchers' client side;
//! - gate opened -> the last of its session's watchers received it: a gate is opened
//!   in a watched session every [`GATE_PACE`], and each watcher notes when its
//!   `interaction` event arrived; measured from the gate's `created_at` (the server's
//!   own timestamp, written in the gate's transaction, same host clock);
//! - row 3's respond ([`respond_series`]) on the same server before the watchers
//!   connect and while they watch.
//!
//! The watchers are raw HTTP/1.1 clients on `TcpStream`s (one small task each, a
//! 1 KiB read buffer, lines scanned for `data:`), so the bench's side stays light
//! beside the server on two cores. They connect from [`WATCHER_ADDRESSES`] loopback
//! source addresses (127.0.0.2 and up), as phones come from many addresses: the
//! server runs with its default per-address cap (a quarter of its connections).
//!
//! Both processes need a descriptor per connection: the bench raises its own open-file
//! limit ([`raise_open_file_limit`]) before it starts the child, which inherits it. The
//! server's defaults are untouched: it derives its caps from whatever limit it is
//! given (`crates/server/src/limits.rs`).

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant, SystemTime};

use futures::StreamExt;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::mpsc;

use gatehouse_server::testing::ChildServerOptions;

use super::latency::{signed_ms, store_time};
use super::respond::{respond_series, RespondReport};
use super::{failed, gate_request, proc_kib, summary, LiveConfig, Runtimes, Target};
use crate::stats::Summary;
use crate::BenchError;

/// The entry a child server of this row answers to: the bench binary and the bench's
/// test binary both serve on it (`gatehouse_server::testing::serve_child_if_asked`).
pub const FANOUT_SERVER_ENTRY: &str = "fanout_server_child";

/// Loopback source addresses the watchers are spread over (127.0.0.2 and up).
pub const WATCHER_ADDRESSES: usize = 100;

/// The time between two gates opened.
const GATE_PACE: Duration = Duration::from_millis(50);

/// How long the watchers sit idle before the memory is read.
const SETTLE: Duration = Duration::from_secs(2);

/// Watchers connecting at once.
const CONNECTING_AT_ONCE: usize = 32;

/// The longest a watcher's head and `ready` event may take, and the longest the last
/// gate's events may take after it was opened.
const PATIENCE: Duration = Duration::from_secs(30);

/// The open-file limit asked for at least: 65,536, or room for twice the watchers
/// (by default the server lets event streams take half its connections) and more.
fn wanted_open_files(watchers: usize) -> u64 {
    (2 * watchers as u64 + 4096).max(65_536)
}

/// Row 14 for one backend.
#[derive(Debug, Clone, Serialize)]
pub struct FanoutReport {
    /// `sqlite` or `postgres`.
    pub backend: String,
    /// Watch streams asked for.
    pub watchers: usize,
    /// Of them, refused by the server (`503`, its cap of open event streams: set to the
    /// watchers with `--max-watchers`, within its connections less the 64 kept for
    /// requests, derived from its open-file limit); the rest were held open.
    pub refused: usize,
    /// Sessions they watch.
    pub sessions: usize,
    /// Loopback source addresses they connect from.
    pub source_addresses: usize,
    /// The open-file limit of the bench and of the server child (raised by the bench).
    pub open_files: u64,
    /// Seconds to connect every watcher (each to its `ready` event).
    pub connect_s: f64,
    /// The server's resident size before the first watcher, bytes.
    pub rss_before_bytes: u64,
    /// The same with every watcher connected and settled.
    pub rss_watching_bytes: u64,
    /// `(rss_watching - rss_before) / watchers held open`.
    pub rss_per_watcher_bytes: f64,
    /// The server's private pages (clean + dirty, `smaps_rollup`) before, bytes.
    pub private_before_bytes: u64,
    /// The same while watching.
    pub private_watching_bytes: u64,
    /// `(private_watching - private_before) / watchers held open`.
    pub private_per_watcher_bytes: f64,
    /// Gates opened in watched sessions.
    pub gates: usize,
    /// Events due (each gate's session's open watchers) that never arrived.
    pub missing: usize,
    /// Gate's `created_at` -> the first of its session's watchers received it, ms.
    pub to_first_watcher_ms: Summary,
    /// Gate's `created_at` -> the last of its session's watchers received it, ms.
    pub to_last_watcher_ms: Summary,
    /// Row 3 on the same server before the watchers connected.
    pub respond_idle: RespondReport,
    /// Row 3 on the same server while every watcher watches.
    pub respond_watching: RespondReport,
    /// `respond_watching` client p99 / `respond_idle` client p99.
    pub respond_p99_ratio: f64,
}

/// One watcher's note: the gate of an `interaction` event, and when it arrived.
struct Arrival {
    gate: String,
    at: SystemTime,
}

/// Row 14 on a server child on SQLite or, given a PostgreSQL server's URL, a fresh
/// database beside it.
pub fn bench_fanout(
    rt: &Runtimes,
    config: &LiveConfig,
    postgres: Option<&str>,
) -> Result<FanoutReport, BenchError> {
    if config.fanout_sessions == 0 || config.fanout_watchers < config.fanout_sessions {
        return Err(BenchError::Invalid(format!(
            "{} watchers cannot watch {} sessions",
            config.fanout_watchers, config.fanout_sessions
        )));
    }
    let open_files = raise_open_file_limit(wanted_open_files(config.fanout_watchers))?;
    let server = rt.spawn_child_server_on(
        postgres,
        ChildServerOptions {
            entry: FANOUT_SERVER_ENTRY.to_string(),
            dispatcher_off: true,
            // A hub for watching phones: every watcher may hold a stream (`--max-watchers`;
            // by default streams get half the connections, and this machine's hard limit
            // of 20,000 files leaves 10,000 watchers just short of that half).
            max_watchers: Some(config.fanout_watchers),
            ..ChildServerOptions::default()
        },
    )?;
    let target = Target::of_child(&server);
    let pid = server.pid().to_string();
    let report = rt.driver.block_on(async {
        let respond_idle = respond_series(&target, "fanout-respond-idle", config).await?;
        tokio::time::sleep(SETTLE).await;
        let (rss_before, private_before) = server_memory(&pid)?;

        let (arrivals_sender, mut arrivals) = mpsc::unbounded_channel();
        let started = Instant::now();
        let watchers = open_watchers(&target, config, arrivals_sender).await?;
        let held = watchers.tasks.len();
        let connect_s = started.elapsed().as_secs_f64();
        tokio::time::sleep(SETTLE).await;
        let (rss_watching, private_watching) = server_memory(&pid)?;

        let watched = async {
            let respond = respond_series(&target, "fanout-respond-watching", config).await?;
            let fanout =
                open_gates_watched(&target, config, &watchers.per_session, &mut arrivals).await?;
            Ok::<_, BenchError>((respond, fanout))
        }
        .await;
        for watcher in &watchers.tasks {
            watcher.abort();
        }
        let (respond_watching, (first, last, missing)) = watched?;
        let per_watcher = |after: u64, before: u64| (after as f64 - before as f64) / held as f64;
        Ok(FanoutReport {
            backend: if postgres.is_some() {
                "postgres"
            } else {
                "sqlite"
            }
            .to_string(),
            watchers: config.fanout_watchers,
            refused: config.fanout_watchers - held,
            sessions: config.fanout_sessions,
            source_addresses: WATCHER_ADDRESSES.min(config.fanout_watchers),
            open_files,
            connect_s,
            rss_before_bytes: rss_before,
            rss_watching_bytes: rss_watching,
            rss_per_watcher_bytes: per_watcher(rss_watching, rss_before),
            private_before_bytes: private_before,
            private_watching_bytes: private_watching,
            private_per_watcher_bytes: per_watcher(private_watching, private_before),
            gates: config.fanout_gates,
            missing,
            to_first_watcher_ms: summary(&first, "gate -> first watcher")?,
            to_last_watcher_ms: summary(&last, "gate -> last watcher")?,
            respond_p99_ratio: respond_watching.client_us.p99 / respond_idle.client_us.p99,
            respond_idle,
            respond_watching,
        })
    });
    // Dropping the child kills it (it holds nothing a kill could harm: a bench database).
    drop(server);
    report
}

/// The server child's resident size and private pages, bytes.
fn server_memory(pid: &str) -> Result<(u64, u64), BenchError> {
    let unreadable =
        |what: &str| BenchError::Invariant(format!("the server child's {what} is unreadable"));
    let rss = proc_kib(pid, "status", &["VmRSS:"]).ok_or_else(|| unreadable("VmRSS"))?;
    let private = proc_kib(pid, "smaps_rollup", &["Private_Clean:", "Private_Dirty:"])
        .ok_or_else(|| unreadable("smaps_rollup"))?;
    Ok((rss * 1024, private * 1024))
}

/// Raise this process's open-file limit (`RLIMIT_NOFILE`, soft and, where allowed,
/// hard) to at least `wanted`; a child started afterwards inherits it. The limit now
/// (lower than `wanted` when the hard limit cannot be raised: then the row's
/// connections fail with a clear error, or are refused by the server's caps).
pub fn raise_open_file_limit(wanted: u64) -> Result<u64, BenchError> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read or write the struct they are given,
    // which outlives the calls. std has no way to change RLIMIT_NOFILE.
    #[allow(unsafe_code)]
    let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
    if read != 0 {
        return Err(BenchError::Io {
            what: "reading the open-file limit".into(),
            source: std::io::Error::last_os_error(),
        });
    }
    if limit.rlim_cur >= wanted {
        return Ok(limit.rlim_cur);
    }
    let raised = libc::rlimit {
        rlim_cur: wanted,
        rlim_max: limit.rlim_max.max(wanted),
    };
    #[allow(unsafe_code)]
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
        return Ok(wanted);
    }
    // Not allowed past the hard limit (no CAP_SYS_RESOURCE): up to it, then.
    let capped = libc::rlimit {
        rlim_cur: limit.rlim_max,
        rlim_max: limit.rlim_max,
    };
    #[allow(unsafe_code)]
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &capped) } == 0 {
        return Ok(limit.rlim_max);
    }
    Err(BenchError::Io {
        what: format!("raising the open-file limit to {wanted}"),
        source: std::io::Error::last_os_error(),
    })
}

/// The session the `i`th watcher or gate is in.
fn session_of(i: usize, sessions: usize) -> String {
    format!("fanout-{}", i % sessions)
}

/// A watcher's reading task.
type WatcherTask = tokio::task::JoinHandle<()>;

/// The watchers held open.
struct Watchers {
    /// Their reading tasks.
    tasks: Vec<WatcherTask>,
    /// How many watch each session (by index).
    per_session: Vec<usize>,
}

/// Connect every watcher, each to its `ready` event (or its refusal); their reading
/// tasks send each `interaction` event's gate to `arrivals`.
async fn open_watchers(
    target: &Target,
    config: &LiveConfig,
    arrivals: mpsc::UnboundedSender<Arrival>,
) -> Result<Watchers, BenchError> {
    let address: SocketAddr = target
        .base_url
        .trim_start_matches("http://")
        .parse()
        .map_err(|e| BenchError::Invalid(format!("the server's address: {e}")))?;
    let authorization = target.authorization();
    let opened: Vec<(usize, Result<Option<WatcherTask>, BenchError>)> =
        futures::stream::iter(0..config.fanout_watchers)
            .map(|i| {
                let request = format!(
                    "GET /api/sessions/streams/watch?session_id={}&project_id={} HTTP/1.1\r\n\
                     Host: {address}\r\nAuthorization: {authorization}\r\n\
                     Accept: text/event-stream\r\n\r\n",
                    session_of(i, config.fanout_sessions),
                    target.project_id
                );
                // 127.0.0.2, 127.0.0.3, ...: never 127.0.0.1, the responds' address.
                let source = Ipv4Addr::from(
                    u32::from(Ipv4Addr::new(127, 0, 0, 2)) + (i % WATCHER_ADDRESSES) as u32,
                );
                let arrivals = arrivals.clone();
                async move { (i, open_watcher(address, source, request, arrivals).await) }
            })
            .buffer_unordered(CONNECTING_AT_ONCE)
            .collect()
            .await;
    let mut watchers = Watchers {
        tasks: Vec::with_capacity(opened.len()),
        per_session: vec![0; config.fanout_sessions],
    };
    let mut first_error = None;
    for (i, watcher) in opened {
        match watcher {
            Ok(Some(task)) => {
                watchers.tasks.push(task);
                watchers.per_session[i % config.fanout_sessions] += 1;
            }
            Ok(None) => {}
            Err(err) => {
                first_error.get_or_insert(err);
            }
        }
    }
    match first_error {
        None => Ok(watchers),
        Some(err) => {
            for task in &watchers.tasks {
                task.abort();
            }
            Err(err)
        }
    }
}

/// One watcher: connect from `source`, send `request`, read up to the `ready` event;
/// then its task reads the stream until it ends. `None`: the server refused it for
/// load (`503`, its cap of open event streams).
async fn open_watcher(
    server: SocketAddr,
    source: Ipv4Addr,
    request: String,
    arrivals: mpsc::UnboundedSender<Arrival>,
) -> Result<Option<WatcherTask>, BenchError> {
    let io = |what: &str| {
        let what = format!("{what} (a watcher from {source})");
        move |source| BenchError::Io { what, source }
    };
    let socket = TcpSocket::new_v4().map_err(io("a watcher's socket"))?;
    socket
        .bind(SocketAddr::from((source, 0)))
        .map_err(io("binding a watcher's socket"))?;
    let mut stream = socket
        .connect(server)
        .await
        .map_err(io("connecting a watcher"))?;
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(io("sending a watch request"))?;
    let mut head = Vec::with_capacity(512);
    let mut buffer = [0u8; 1024];
    let deadline = Instant::now() + PATIENCE;
    loop {
        let read = tokio::time::timeout_at(deadline.into(), stream.read(&mut buffer))
            .await
            .map_err(|_| BenchError::Invariant("a watch stream sent no `ready` in time".into()))?
            .map_err(io("reading a watch stream's head"))?;
        head.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&head);
        if text.starts_with("HTTP/1.1 503") {
            return Ok(None);
        }
        if head.len() >= 12 && !text.starts_with("HTTP/1.1 200") || read == 0 {
            return Err(BenchError::Request {
                what: "opening a watch stream".into(),
                reason: text.chars().take(300).collect(),
            });
        }
        if text
            .split_once("\r\n\r\n")
            .is_some_and(|(_, body)| body.contains("ready"))
        {
            break;
        }
    }
    Ok(Some(tokio::spawn(read_events(stream, arrivals))))
}

/// Read a watch stream until it ends, sending each `interaction` event's gate (and when
/// it arrived) to `arrivals`.
async fn read_events(mut stream: TcpStream, arrivals: mpsc::UnboundedSender<Arrival>) {
    let mut buffer = [0u8; 1024];
    // A line cut by a read waits here for its end.
    let mut pending = Vec::new();
    loop {
        let read = match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => read,
        };
        let at = SystemTime::now();
        pending.extend_from_slice(&buffer[..read]);
        let Some(end) = pending.iter().rposition(|&b| b == b'\n') else {
            continue;
        };
        for line in pending[..end].split(|&b| b == b'\n') {
            if let Some(gate) = event_gate(line) {
                let _ = arrivals.send(Arrival { gate, at });
            }
        }
        pending.drain(..=end);
    }
}

/// The gate of an SSE `data:` line carrying an `interaction` event.
fn event_gate(line: &[u8]) -> Option<String> {
    let data = std::str::from_utf8(line).ok()?.strip_prefix("data:")?;
    let event: serde_json::Value = serde_json::from_str(data.trim()).ok()?;
    if event["type"] != "interaction" {
        return None;
    }
    event["interaction_id"].as_str().map(str::to_string)
}

/// Open `config.fanout_gates` gates, one every [`GATE_PACE`], each in a watched session,
/// and wait (up to [`PATIENCE`] after the last) for each of its session's watchers
/// (`per_session`, by session index) to
/// receive it: per gate, `created_at` -> the first and the last arrival (ms), and how
/// many arrivals were missing at the end.
async fn open_gates_watched(
    target: &Target,
    config: &LiveConfig,
    per_session: &[usize],
    arrivals: &mut mpsc::UnboundedReceiver<Arrival>,
) -> Result<(Vec<f64>, Vec<f64>, usize), BenchError> {
    let client = target.client()?;
    let due = |i: usize| per_session[i % config.fanout_sessions];
    let mut opened: Vec<(String, SystemTime, usize)> = Vec::with_capacity(config.fanout_gates);
    let mut received: HashMap<String, Vec<SystemTime>> = HashMap::new();
    let note = |received: &mut HashMap<String, Vec<SystemTime>>, arrival: Arrival| {
        received.entry(arrival.gate).or_default().push(arrival.at);
    };
    let mut next = tokio::time::Instant::now();
    for i in 0..config.fanout_gates {
        tokio::time::sleep_until(next).await;
        next += GATE_PACE;
        let row = client
            .interactions()
            .create(&gate_request(&session_of(i, config.fanout_sessions), i)?)
            .await
            .map_err(failed("opening a watched gate"))?;
        let (Some(id), Some(created_at)) = (row.id, row.created_at) else {
            return Err(BenchError::Invariant(
                "a created gate has no id or created_at".into(),
            ));
        };
        opened.push((id, store_time(&created_at)?, due(i)));
        while let Ok(arrival) = arrivals.try_recv() {
            note(&mut received, arrival);
        }
    }
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let all_due: usize = opened.iter().map(|(_, _, due)| due).sum();
    while received.values().map(Vec::len).sum::<usize>() < all_due {
        match tokio::time::timeout_at(deadline, arrivals.recv()).await {
            Ok(Some(arrival)) => note(&mut received, arrival),
            Ok(None) | Err(_) => break,
        }
    }
    let mut first = Vec::with_capacity(opened.len());
    let mut last = Vec::with_capacity(opened.len());
    let mut missing = 0;
    for (gate, created_at, due) in &opened {
        let times = received.get(gate).map(Vec::as_slice).unwrap_or_default();
        missing += due.saturating_sub(times.len());
        if times.len() >= *due {
            if let (Some(earliest), Some(latest)) = (times.iter().min(), times.iter().max()) {
                first.push(signed_ms(*created_at, *earliest));
                last.push(signed_ms(*created_at, *latest));
            }
        }
    }
    Ok((first, last, missing))
}
