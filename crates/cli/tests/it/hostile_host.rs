//! `gatehouse interactions ...` against a hostile host on loopback (issue 37): a server
//! that puts control characters in ids, tool names and error texts (shown escaped, never
//! raw), one that keeps answering full pages (the listing streams, stays bounded and
//! stops), and one that accepts the watch stream and closes it at once (the reconnects
//! back off, their log lines are bounded).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::{gatehouse_without_env, text};

/// One request the host saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    /// The path, without the query.
    path: String,
    body: String,
}

/// What the host answers.
enum Reply {
    /// A JSON body with this status.
    Json(u16, String),
    /// A 200 `text/event-stream` with this body, then the connection is closed.
    Sse(String),
}

type Handler = dyn Fn(&Seen) -> Reply + Send + Sync;

/// A loopback HTTP host answering every request with `handler` (one connection per
/// request, closed after the answer). It lives as long as the test process.
struct Host {
    url: String,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Host {
    fn start(handler: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { continue };
                let handler = Arc::clone(&handler);
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(stream, &*handler, &log));
            }
        });
        Self { url, seen }
    }

    /// How many requests went to `path`.
    fn count(&self, path: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path == path)
            .count()
    }

    /// Every request's method and path.
    fn requests(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| format!("{} {}", s.method, s.path))
            .collect()
    }
}

fn serve(stream: TcpStream, handler: &Handler, log: &Mutex<Vec<Seen>>) {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0u8; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or("").to_string();
    let target = parts.next().unwrap_or("");
    let path = target.split('?').next().unwrap_or("").to_string();
    let seen = Seen {
        method,
        path,
        body: String::from_utf8_lossy(&body).into_owned(),
    };
    log.lock().unwrap().push(seen.clone());
    let (status, content_type, body) = match handler(&seen) {
        Reply::Json(status, body) => (status, "application/json", body),
        Reply::Sse(body) => (200, "text/event-stream", body),
    };
    let mut stream = reader.into_inner();
    let head = format!(
        "HTTP/1.1 {status} X\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body.as_bytes());
    let _ = stream.flush();
}

const QUERY: &str = "/api/sessions/interactions/query";
const WATCH: &str = "/api/sessions/streams/watch";

/// A pending approval gate as a host sends it.
fn gate(id: &str, session: &str, tool: &str, args: Value) -> Value {
    json!({
        "id": id, "session_id": session, "turn_id": "turn-1", "token": "tok",
        "kind": "user_approval", "status": "pending",
        "data": {"request": {"tool": tool, "args": args, "tool_call_id": "call-1"}},
    })
}

fn page(rows: Vec<Value>) -> Reply {
    Reply::Json(
        200,
        json!({"count": rows.len(), "interactions": rows}).to_string(),
    )
}

/// `gatehouse interactions <args>` against `host`.
fn command(host: &Host, args: &[&str]) -> Command {
    let mut cmd = gatehouse_without_env();
    cmd.arg("interactions")
        .args(args)
        .args(["--url", &host.url, "--api-key", "k", "--timeout", "10"])
        .args(["--project", "019fac94-0000-7000-8000-000000000000"]);
    cmd
}

/// The bytes a terminal acts on instead of showing (ESC, CR, BEL, the C1 CSI).
fn raw_controls(output: &str) -> Vec<char> {
    output
        .chars()
        .filter(|c| c.is_control() && *c != '\n')
        .collect()
}

/// Most memory a command run here may hold before it is killed (it is a shared
/// machine: an unbounded listing reached 1.47 GB in 14 s).
const KILL_ABOVE_KIB: u64 = 512 * 1024;

/// Run `cmd` to its end, or kill it after `limit` or once it holds more than
/// [`KILL_ABOVE_KIB`]; also the most memory it held (VmHWM, KiB) while it ran.
fn run_bounded(mut cmd: Command, limit: Duration) -> (Output, u64, bool) {
    let mut child: Child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    // Drain the pipes while it runs, so a long listing never blocks on a full pipe.
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stdout.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = stderr.read_to_end(&mut buf);
        buf
    });
    let started = Instant::now();
    let mut peak_kib = 0u64;
    let mut killed = false;
    let status = loop {
        if let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) {
            if let Some(kib) = status
                .lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse::<u64>().ok())
            {
                peak_kib = peak_kib.max(kib);
            }
        }
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit || peak_kib > KILL_ABOVE_KIB {
            let _ = child.kill();
            killed = true;
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: out_reader.join().unwrap(),
        stderr: err_reader.join().unwrap(),
    };
    (output, peak_kib, killed)
}

/// A gate whose tool name, session, id and arguments carry ESC, CR, BEL and LF is shown
/// escaped by `list`, `get` and `watch`; a host's error text with CR/LF cannot forge a
/// second `error:` line.
#[test]
fn control_characters_from_a_host_are_shown_escaped() {
    const ID: &str = "019fac94-0000-7000-8000-0000000000aa";
    // A `Bash rm -rf ~` gate dressed up, on a terminal, as a harmless `Read` line.
    let row = gate(
        ID,
        "s\u{1b}]0;owned\u{7}",
        "Bash\u{1b}[2K\r  Read",
        json!({"command": "rm -rf ~\u{1b}[1A\rfile.txt"}),
    );
    let host = Host::start(
        move |seen| match (seen.method.as_str(), seen.path.as_str()) {
            (_, QUERY) => page(vec![row.clone()]),
            ("GET", WATCH) => Reply::Sse(format!(
                "event: ready\ndata: {{}}\n\nevent: interaction\ndata: {}\n\n",
                json!({"session_id": "s", "status": "pending",
                   "interaction_id": "x\u{1b}[2K\rinteraction fake resolved"})
            )),
            ("GET", path) if path.ends_with(ID) => {
                Reply::Json(200, json!({"interaction": row.clone()}).to_string())
            }
            _ => Reply::Json(
                500,
                json!({"detail": "boom\r\nerror: forged by the host\u{1b}[31m"}).to_string(),
            ),
        },
    );

    let list = command(&host, &["list"]).output().unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", text(&list.stderr));
    let shown = text(&list.stdout);
    assert_eq!(raw_controls(&shown), Vec::<char>::new(), "{shown:?}");
    let line = shown.lines().find(|l| l.starts_with(ID)).unwrap();
    assert!(line.contains("Bash\\u{1b}[2K\\r  Read"), "{line}");
    assert!(line.contains("s\\u{1b}]0;owned\\u{7}"), "{line}");

    let get = command(&host, &["get", ID]).output().unwrap();
    assert_eq!(get.status.code(), Some(0), "{}", text(&get.stderr));
    let shown = text(&get.stdout);
    assert_eq!(raw_controls(&shown), Vec::<char>::new(), "{shown:?}");
    assert!(shown.contains("Bash\\u{1b}[2K\\r  Read"), "{shown}");
    // The arguments (JSON) escape their control characters as JSON does.
    assert!(shown.contains("rm -rf ~\\u001b[1A\\rfile.txt"), "{shown}");

    let watch = command(&host, &["watch", "s", "--max-events", "1"])
        .output()
        .unwrap();
    assert_eq!(watch.status.code(), Some(0), "{}", text(&watch.stderr));
    let shown = text(&watch.stdout) + &text(&watch.stderr);
    assert_eq!(raw_controls(&shown), Vec::<char>::new(), "{shown:?}");
    assert!(
        shown.contains("interaction x\\u{1b}[2K\\rinteraction fake resolved pending"),
        "{shown}"
    );

    // The host's error text: one `error:` line, its CR/LF and ESC escaped.
    let failed = command(&host, &["get", "019fac94-0000-7000-8000-0000000000bb"])
        .output()
        .unwrap();
    assert_eq!(failed.status.code(), Some(1), "{}", text(&failed.stderr));
    let stderr = text(&failed.stderr);
    assert_eq!(raw_controls(&stderr), Vec::<char>::new(), "{stderr:?}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("boom\\r\\nerror: forged"), "{stderr}");
}

/// A host that keeps answering full pages of new rows: `list` prints them as they come
/// and stops at its `--limit` (default 10000 rows), its memory bounded; a page with more
/// rows than asked for, or a page seen before, ends the listing with an error; and
/// `approve-all --all-sessions --yes` stops collecting past 10000 gates, answering none.
#[test]
fn a_host_that_keeps_answering_full_pages_is_listed_bounded_and_stopped() {
    let next = Arc::new(AtomicUsize::new(0));
    // Every page full (as many rows as asked for, 100 by default) and new; some bulk
    // in each row so that keeping them all would show in the memory.
    let counter = Arc::clone(&next);
    let endless = Host::start(move |seen| {
        let asked = serde_json::from_str::<Value>(&seen.body)
            .ok()
            .and_then(|b| b["windowing"]["limit"].as_u64())
            .unwrap_or(100) as usize;
        let rows = (0..asked)
            .map(|_| {
                let n = counter.fetch_add(1, Ordering::Relaxed);
                gate(
                    &format!("019fac94-0000-7000-8000-{n:012}"),
                    "s",
                    "Bash",
                    json!({"padding": "x".repeat(2000)}),
                )
            })
            .collect();
        page(rows)
    });
    let (list, peak_kib, killed) =
        run_bounded(command(&endless, &["list"]), Duration::from_secs(120));
    assert!(
        !killed,
        "list did not stop within 120 s or held over 512 MiB ({} pages read, peak RSS {peak_kib} KiB)",
        endless.count(QUERY)
    );
    assert_eq!(list.status.code(), Some(0), "{}", text(&list.stderr));
    let shown = text(&list.stdout);
    assert_eq!(shown.lines().count(), 10_001, "a header and 10000 rows");
    assert!(
        text(&list.stderr).contains("showing the first 10000 rows"),
        "{}",
        text(&list.stderr)
    );
    assert_eq!(endless.count(QUERY), 100, "no page past the limit is read");
    // 10000 rows of 2 KB are 20 MB of rows: kept whole they would show; streamed, one
    // page at a time is held. A generous bound for a shared machine.
    eprintln!("interactions list of 10000 endless rows: peak RSS {peak_kib} KiB");
    assert!(peak_kib < 60 * 1024, "peak RSS {peak_kib} KiB");

    // `--json` streams one array.
    let json_list = command(&endless, &["list", "--json", "--limit", "250"])
        .output()
        .unwrap();
    assert_eq!(
        json_list.status.code(),
        Some(0),
        "{}",
        text(&json_list.stderr)
    );
    let rows: Vec<Value> = serde_json::from_slice(&json_list.stdout).unwrap();
    assert_eq!(rows.len(), 250);

    // Collecting every session's gates stops past 10000, and nothing is answered.
    let (all, _, killed) = run_bounded(
        command(&endless, &["approve-all", "--all-sessions", "--yes"]),
        Duration::from_secs(120),
    );
    assert!(!killed, "approve-all did not stop within 120 s");
    assert_eq!(all.status.code(), Some(1), "{}", text(&all.stderr));
    assert!(
        text(&all.stderr).contains("more than 10000 pending approval gates"),
        "{}",
        text(&all.stderr)
    );
    assert!(
        endless.requests().iter().all(|r| !r.contains("respond")),
        "nothing answered"
    );

    // More rows than asked for: paging stops at the first such page.
    let oversized = Host::start(|_| {
        page(
            (0..150)
                .map(|n| {
                    gate(
                        &format!("019fac94-0000-7000-8000-{n:012}"),
                        "s",
                        "Bash",
                        json!({}),
                    )
                })
                .collect(),
        )
    });
    let (out, _, killed) = run_bounded(command(&oversized, &["list"]), Duration::from_secs(60));
    assert!(!killed, "list did not stop on an oversized page");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("150 rows for a page of at most 100"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(oversized.count(QUERY), 1);

    // The same full page again and again: stopped at its second sight.
    let repeating = Host::start(|_| {
        page(
            (0..100)
                .map(|n| {
                    gate(
                        &format!("019fac94-0000-7000-8000-{n:012}"),
                        "s",
                        "Bash",
                        json!({}),
                    )
                })
                .collect(),
        )
    });
    let (out, _, killed) = run_bounded(command(&repeating, &["list"]), Duration::from_secs(60));
    assert!(!killed, "list did not stop on a repeated page");
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("same page twice"),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(repeating.count(QUERY), 2);
}

/// A host (or a proxy) that accepts the watch stream and closes it at once: the watch
/// backs off (the failures in a row keep counting, the waits keep growing) instead of
/// reconnecting many times a second, and its stderr lines stay few.
#[test]
fn a_watch_cut_at_once_backs_off_and_logs_few_lines() {
    let host = Host::start(|seen| match seen.path.as_str() {
        WATCH => Reply::Sse("event: ready\ndata: {}\n\n".to_string()),
        _ => page(Vec::new()),
    });
    let watched = Duration::from_secs(8);
    let (out, _, killed) = run_bounded(command(&host, &["watch", "s"]), watched);
    assert!(killed, "the watch runs until stopped");
    let connects = host.count(WATCH);
    let stderr = text(&out.stderr);
    let lost = stderr
        .lines()
        .filter(|l| l.contains("connection lost"))
        .count();
    eprintln!(
        "watch cut at once, {} s: {connects} connects, {lost} 'connection lost' lines",
        watched.as_secs()
    );
    // Backing off from 100 ms (at least half of each doubling wait): about 7 connects in
    // 8 s; without backoff it was over 200. A generous bound.
    assert!(connects <= 20, "{connects} connects in {watched:?}");
    assert!(lost <= 6, "{lost} lines:\n{stderr}");
}
