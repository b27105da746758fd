//! Webhook lanes and the circuit (issue 37, item 3): one endpoint's failures never delay
//! another endpoint's deliveries.
//!
//! - a black-holed endpoint (a loopback listener that accepts, reads the request and never
//!   answers) beside a live receiver: every event reaches the live one within one attempt
//!   timeout, while the dead one is retried (its rows pending, `timed out`);
//! - a failing endpoint's circuit opens after its consecutive failures (its attempts stop,
//!   its events are not spent), and closes when a probe succeeds: the backlog is delivered
//!   and the next event arrives at once.
//!
//! Runs on SQLite, and on PostgreSQL with `GATEHOUSE_TEST_DATABASE_URL`.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use gatehouse_server::config::{WebhookEndpoint, WebhookSettings};
use gatehouse_server::testing::TestServerOptions;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::common::{wait_until, Harness};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// One request a [`Receiver`] read.
#[derive(Debug, Clone)]
struct Heard {
    /// The gate the event is about.
    interaction_id: String,
    /// When it was read.
    at: Instant,
}

/// A webhook receiver on a loopback port. While `answering`, it answers each request 200;
/// otherwise it reads the request and holds the connection open without a word (a black
/// hole: every attempt waits for its whole timeout).
struct Receiver {
    port: u16,
    answering: Arc<AtomicBool>,
    heard: Arc<Mutex<Vec<Heard>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Receiver {
    async fn start(answering: bool) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let answering = Arc::new(AtomicBool::new(answering));
        let heard = Arc::new(Mutex::new(Vec::new()));
        let accept = tokio::spawn({
            let (answering, heard) = (answering.clone(), heard.clone());
            async move {
                while let Ok((stream, _)) = listener.accept().await {
                    tokio::spawn(serve(stream, answering.clone(), heard.clone()));
                }
            }
        });
        Self {
            port,
            answering,
            heard,
            accept,
        }
    }

    fn endpoint(&self, name: &str) -> WebhookEndpoint {
        WebhookEndpoint::parse(&format!(
            "{name}={SECRET}@http://127.0.0.1:{}/hook",
            self.port
        ))
        .unwrap()
    }

    fn heard(&self) -> Vec<Heard> {
        self.heard.lock().unwrap().clone()
    }

    fn answer(&self, answering: bool) {
        self.answering.store(answering, Ordering::SeqCst);
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Read requests off one connection (keep-alive), record each, answer or go silent.
async fn serve(mut stream: TcpStream, answering: Arc<AtomicBool>, heard: Arc<Mutex<Vec<Heard>>>) {
    let mut buffer: Vec<u8> = Vec::new();
    loop {
        let head_end = loop {
            if let Some(at) = buffer.windows(4).position(|w| w == b"\r\n\r\n") {
                break at + 4;
            }
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length:"))
            .and_then(|value| value.trim().parse().ok())
            .unwrap_or(0);
        while buffer.len() < head_end + length {
            let mut chunk = [0u8; 4096];
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => buffer.extend_from_slice(&chunk[..n]),
            }
        }
        let body: Value =
            serde_json::from_slice(&buffer[head_end..head_end + length]).unwrap_or(Value::Null);
        buffer.drain(..head_end + length);
        heard.lock().unwrap().push(Heard {
            interaction_id: body["data"]["interaction_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            at: Instant::now(),
        });
        if !answering.load(Ordering::SeqCst) {
            // Never answer; the sender's timeout ends the attempt.
            std::future::pending::<()>().await;
        }
        let answered = stream
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
            .await;
        if answered.is_err() {
            return;
        }
    }
}

async fn server(endpoints: Vec<WebhookEndpoint>, settings: WebhookSettings) -> Harness {
    Harness::with(TestServerOptions {
        webhook_endpoints: endpoints,
        webhook_settings: Some(settings),
        ..crate::common::legacy_options()
    })
    .await
}

/// Open a gate (an external runner's row): its `interaction.opened` event.
async fn open_gate(h: &Harness, session: &str, token: &str) -> String {
    let body = json!({"session_id": session, "turn_id": "t-1", "token": token, "kind": "user_approval",
        "data": {"request": {"tool": "Bash", "args": {"command": "true"}, "tool_call_id": format!("call-{token}")}}});
    let (status, row) = h.post("/api/sessions/interactions", body).await;
    assert_eq!(status, 200, "{row}");
    row["interaction"]["id"].as_str().unwrap().to_string()
}

/// The outbox rows of `endpoint`.
async fn outbox(h: &Harness, endpoint: &str) -> Vec<Value> {
    let (status, body) = h.get("/api/webhooks/deliveries?limit=1000").await;
    assert_eq!(status, 200, "{body}");
    body["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|row| row["endpoint"] == endpoint)
        .cloned()
        .collect()
}

/// Each gate's first arrival at `receiver`, if it arrived.
fn arrivals(receiver: &Receiver, gates: &[String]) -> Vec<Option<Instant>> {
    let heard = receiver.heard();
    gates
        .iter()
        .map(|gate| {
            heard
                .iter()
                .find(|h| &h.interaction_id == gate)
                .map(|h| h.at)
        })
        .collect()
}

/// A dead endpoint beside a live one: the live one hears every event within one attempt
/// timeout (on a queue shared by both, the two workers sat out the dead one's timeouts
/// and the live one's events waited behind them), and the dead one is retried.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_endpoint_does_not_delay_a_live_one() {
    let live = Receiver::start(true).await;
    let dead = Receiver::start(false).await;
    let timeout = Duration::from_secs(5);
    let h = server(
        vec![live.endpoint("live"), dead.endpoint("dead")],
        WebhookSettings {
            timeout,
            retry_delay: Duration::from_millis(50),
            max_attempts: 100,
            ..WebhookSettings::default()
        },
    )
    .await;

    let started = Instant::now();
    let mut gates = Vec::new();
    for i in 0..10 {
        gates.push(open_gate(&h, "lanes", &format!("g-{i}")).await);
    }
    let all_arrived = wait_until(timeout, || async {
        arrivals(&live, &gates).iter().all(Option::is_some)
    })
    .await;
    let missing = arrivals(&live, &gates)
        .iter()
        .filter(|a| a.is_none())
        .count();
    assert!(
        all_arrived,
        "{missing} of {} events had not reached the live endpoint {:?} after the gates opened \
         (one attempt at the dead endpoint lasts {timeout:?})",
        gates.len(),
        started.elapsed()
    );

    // The dead endpoint heard the events too, and its attempts time out and are retried.
    let retried = wait_until(Duration::from_secs(60), || async {
        outbox(&h, "dead").await.iter().any(|row| {
            row["state"] == "pending"
                && row["attempts"].as_u64().unwrap_or(0) >= 1
                && row["last_error"]
                    .as_str()
                    .is_some_and(|e| e.starts_with("timed out"))
        })
    })
    .await;
    assert!(retried, "{:#?}", outbox(&h, "dead").await);
    assert!(!dead.heard().is_empty());

    // While the dead endpoint's attempts go on, a new event still reaches the live one
    // within one attempt timeout.
    let late = open_gate(&h, "lanes", "g-late").await;
    let arrived = wait_until(timeout, || async {
        arrivals(&live, std::slice::from_ref(&late))[0].is_some()
    })
    .await;
    assert!(arrived, "the late event did not reach the live endpoint");
    let delivered = outbox(&h, "live").await;
    assert_eq!(delivered.len(), gates.len() + 1, "{delivered:#?}");
    h.server.shutdown().await;
}

/// A failing endpoint's circuit: after its consecutive failures its attempts stop (not
/// one per due event per worker, as before), and a probe later finds it answering again:
/// the backlog is delivered, and a new event arrives promptly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_endpoints_circuit_opens_and_recovers() {
    let flaky = Receiver::start(false).await;
    let settings = WebhookSettings {
        timeout: Duration::from_millis(300),
        retry_delay: Duration::from_millis(50),
        max_attempts: 1000,
        circuit_failures: 5,
        circuit_open: Duration::from_secs(5),
        ..WebhookSettings::default()
    };
    let h = server(vec![flaky.endpoint("flaky")], settings.clone()).await;
    let mut gates = Vec::new();
    for i in 0..6 {
        gates.push(open_gate(&h, "circuit", &format!("g-{i}")).await);
    }
    // Watch the attempts for a while. Without a circuit, two workers would try a due
    // event every 300 ms each (about 40 attempts in 6 s); with it, the 5 failures that
    // open it (at the earliest 0.9 s in), what was already in flight, and at most one
    // probe (5 s after it opened; a failed one waits 10 s).
    let first = wait_until(Duration::from_secs(30), || async {
        !flaky.heard().is_empty()
    })
    .await;
    assert!(first, "the endpoint never heard an attempt");
    tokio::time::sleep(Duration::from_secs(6)).await;
    let attempts = flaky.heard().len();
    let bound = settings.circuit_failures as usize + settings.workers + 1;
    assert!(
        attempts <= bound,
        "{attempts} attempts at a failing endpoint in 6 s (at most {bound} with its circuit open)"
    );
    let rows = outbox(&h, "flaky").await;
    assert!(
        rows.iter().all(|row| row["state"] == "pending"),
        "{rows:#?}"
    );

    // The endpoint answers again: a probe finds it, and everything arrives.
    flaky.answer(true);
    let delivered = wait_until(Duration::from_secs(60), || async {
        outbox(&h, "flaky")
            .await
            .iter()
            .all(|row| row["state"] == "delivered")
    })
    .await;
    assert!(delivered, "{:#?}", outbox(&h, "flaky").await);
    assert!(arrivals(&flaky, &gates).iter().all(Option::is_some));
    // Closed: the next event goes at once (well within one open interval).
    let next = open_gate(&h, "circuit", "g-next").await;
    let arrived = wait_until(Duration::from_secs(4), || async {
        arrivals(&flaky, std::slice::from_ref(&next))[0].is_some()
    })
    .await;
    assert!(arrived, "the circuit did not close");
    h.server.shutdown().await;
}

/// A worker claims a batch of events at once and sends them one by one; when the circuit
/// opens part way, the events it did not send are given back with their attempt taken
/// back: every attempt an event counts was made (the receiver heard it), so none is spent
/// by a batch that never sent it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_the_circuit_stops_gives_back_its_unsent_events() {
    let flaky = Receiver::start(false).await;
    let settings = WebhookSettings {
        timeout: Duration::from_millis(300),
        retry_delay: Duration::from_millis(50),
        max_attempts: 1000,
        circuit_failures: 3,
        circuit_open: Duration::from_secs(30),
        ..WebhookSettings::default()
    };
    let h = server(vec![flaky.endpoint("flaky")], settings.clone()).await;
    let mut gates = Vec::new();
    for i in 0..12 {
        gates.push(open_gate(&h, "batch", &format!("g-{i}")).await);
    }
    // The circuit opens after 3 failures; nothing is sent while it is open (30 s).
    let opened = wait_until(Duration::from_secs(30), || async {
        flaky.heard().len() >= settings.circuit_failures as usize
    })
    .await;
    assert!(opened, "the endpoint never heard its failing attempts");
    tokio::time::sleep(Duration::from_secs(2)).await;
    let heard = flaky.heard().len();
    let rows = outbox(&h, "flaky").await;
    assert_eq!(rows.len(), gates.len(), "{rows:#?}");
    assert!(
        rows.iter().all(|row| row["state"] == "pending"),
        "{rows:#?}"
    );
    let counted: u64 = rows
        .iter()
        .map(|row| row["attempts"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(
        counted, heard as u64,
        "the outbox counts {counted} attempts, the endpoint heard {heard}: {rows:#?}"
    );
    let unsent = rows
        .iter()
        .filter(|row| row["attempts"].as_u64() == Some(0))
        .count();
    assert!(
        unsent > 0,
        "every event was attempted while the circuit should have held some: {rows:#?}"
    );
    h.server.shutdown().await;
}

/// The live endpoint's delivery latency (gate opened to request heard), alone and beside
/// a dead endpoint, for the report: a burst of gates at once, then a steady trickle.
/// Prints p50/p99; asserts nothing about time. Run it alone:
/// `cargo test -p gatehouse-server --test it -- --ignored --nocapture measure_live_latency`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement for the report, not a test"]
async fn measure_live_latency_beside_a_dead_endpoint() {
    let settings = WebhookSettings {
        timeout: Duration::from_secs(2),
        ..WebhookSettings::default()
    };
    for with_dead in [false, true] {
        let live = Receiver::start(true).await;
        let dead = Receiver::start(false).await;
        let mut endpoints = vec![live.endpoint("live")];
        if with_dead {
            endpoints.push(dead.endpoint("dead"));
        }
        let h = server(endpoints, settings.clone()).await;
        for (scenario, count, every) in [
            ("burst of 20", 20, Duration::ZERO),
            ("one every 300 ms, 30", 30, Duration::from_millis(300)),
        ] {
            let mut opened = Vec::new();
            let mut gates = Vec::new();
            for i in 0..count {
                opened.push(Instant::now());
                let gate = open_gate(&h, scenario, &format!("{with_dead}-{i}")).await;
                gates.push(gate);
                tokio::time::sleep(every).await;
            }
            wait_until(Duration::from_secs(120), || async {
                arrivals(&live, &gates).iter().all(Option::is_some)
            })
            .await;
            let mut waits: Vec<f64> = arrivals(&live, &gates)
                .iter()
                .zip(&opened)
                .filter_map(|(arrived, opened)| {
                    arrived.map(|a| a.saturating_duration_since(*opened).as_secs_f64())
                })
                .collect();
            waits.sort_by(f64::total_cmp);
            let at = |q: f64| {
                waits
                    .get(((waits.len() as f64 * q).ceil() as usize).saturating_sub(1))
                    .copied()
                    .unwrap_or(f64::NAN)
            };
            eprintln!(
                "live endpoint{}, {scenario}: p50 {:.3} s, p99 {:.3} s, {} of {count} arrived",
                if with_dead {
                    " beside a dead one"
                } else {
                    " alone"
                },
                at(0.5),
                at(0.99),
                waits.len()
            );
        }
        h.server.shutdown().await;
    }
}
