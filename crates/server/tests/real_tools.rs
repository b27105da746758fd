//! Tests on real outside tools, in a test binary of their own: a Prometheus server
//! (Debian's `prometheus`) scraping `GET /metrics`, with `promtool check metrics`, and a
//! page in headless Chromium (Debian's `chromium`) calling the API across origins (CORS).
//!
//! Apart from `tests/it` because starting Chromium or Prometheus takes the machine's
//! cores for seconds: beside `tests/it`'s lease-timing tests it would starve their
//! heartbeats. Each test needs its tool (`.ci/run` installs both): without it, it says
//! so in one line and passes, except under `CI=true`, where it fails. Everything listens
//! on loopback; Prometheus's scrape is awaited at most 60 s, Chromium at most 60 s a page.

// Test code: a broken fixture or server should fail the test loudly, here and in helpers.
#![allow(clippy::unwrap_used, clippy::expect_used)]
// Tests report on stderr what they skipped.
#![allow(clippy::print_stderr)]

#[path = "it/common/mod.rs"]
mod common;

use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use gatehouse_server::testing::TestServerOptions;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use common::{require_tool, Harness};

// ---- Prometheus ------------------------------------------------------------------

/// Prometheus on loopback, scraping `target` every second, its data in `dir`.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start_prometheus(dir: &std::path::Path, target: &str) -> Prometheus {
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
             scrape_configs:\n  - job_name: gatehouse\n    static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("prometheus.log")).unwrap())
        .spawn()
        .unwrap();
    Prometheus {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// The samples Prometheus holds for `query` now (empty until it scraped them).
async fn query(http: &reqwest::Client, prometheus: &Prometheus, query: &str) -> Vec<Value> {
    let Ok(response) = http
        .get(format!("{}/api/v1/query", prometheus.url))
        .query(&[("query", query)])
        .send()
        .await
    else {
        return Vec::new();
    };
    let Ok(body) = response.json::<Value>().await else {
        return Vec::new();
    };
    body["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[tokio::test]
async fn a_real_prometheus_scrapes_it_and_promtool_accepts_it() {
    if !require_tool("prometheus", "prometheus") || !require_tool("promtool", "prometheus") {
        return;
    }
    let h = Harness::legacy().await;
    let gate = h.park("scraped-session", "m-scraped").await;
    let (status, body) = h.respond(&gate, true).await;
    assert_eq!(status, 200, "{body}");
    h.wait_resolved(&gate).await;

    // promtool: the exposition parses and passes its lint (names, help, types).
    let (_, _, text) = h.scrape_metrics().await;
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool check metrics: {}{}\n{text}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    let dir = tempfile::tempdir().unwrap();
    let target = h.server.base_url.trim_start_matches("http://").to_string();
    let prometheus = start_prometheus(dir.path(), &target);
    let respond_series = r#"gatehouse_http_requests_total{route="/api/sessions/interactions/{id}/respond",status="200"}"#;
    let deadline = Instant::now() + Duration::from_secs(60);
    let (up, responds) = loop {
        let up = query(&h.http, &prometheus, r#"up{job="gatehouse"}"#).await;
        let responds = query(&h.http, &prometheus, respond_series).await;
        let scraped = up.first().is_some_and(|s| s["value"][1] == "1");
        if (scraped && !responds.is_empty()) || Instant::now() > deadline {
            break (up, responds);
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let log = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert_eq!(
        up.first().map(|s| s["value"][1].clone()),
        Some(Value::from("1")),
        "Prometheus never scraped the target successfully: {up:?}\n{log}"
    );
    assert_eq!(
        responds.first().map(|s| s["value"][1].clone()),
        Some(Value::from("1")),
        "{responds:?}"
    );
    let resolved = query(
        &h.http,
        &prometheus,
        r#"gatehouse_gates{status="resolved"}"#,
    )
    .await;
    assert_eq!(
        resolved.first().map(|s| s["value"][1].clone()),
        Some(Value::from("1")),
        "{resolved:?}"
    );
    drop(prometheus);
    h.server.shutdown().await;
}

// ---- Chromium --------------------------------------------------------------------

/// A loopback listener for a page, and the page's origin `http://127.0.0.1:PORT`.
async fn page_listener() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    (listener, origin)
}

/// Answer every request on `listener` with `html` (the page has no other resources).
fn serve_page(listener: TcpListener, html: String) {
    tokio::spawn(async move {
        while let Ok((mut stream, _)) = listener.accept().await {
            let html = html.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 1024];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match stream.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{html}",
                    html.len()
                );
                let _ = stream.write_all(response.as_bytes()).await;
                let _ = stream.shutdown().await;
            });
        }
    });
}

/// A page whose script calls the API with a key and a custom header (so the browser
/// sends a preflight first) and writes what came of it into `#out`.
fn page(api_url: &str, key: &str) -> String {
    format!(
        r#"<!doctype html><html><body><pre id="out">pending</pre><script>
fetch({api_url:?}, {{
  method: "POST",
  headers: {{"Authorization": "ApiKey {key}", "Content-Type": "application/json", "X-Request-Id": "from-the-page"}},
  body: "{{}}"
}}).then(async (r) => {{
  const body = await r.json();
  document.getElementById("out").textContent =
    "status=" + r.status + " request_id=" + r.headers.get("x-request-id") + " count=" + body.count;
}}).catch((e) => {{
  document.getElementById("out").textContent = "blocked: " + e;
}});
</script></body></html>"#
    )
}

/// What `#out` says after Chromium loaded `url` and ran its script.
fn load_in_chromium(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--no-first-run",
            "--disable-extensions",
            "--disable-background-networking",
            "--virtual-time-budget=10000",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(url)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("chromium did not finish loading {url} within 60 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = child.wait_with_output().unwrap();
    let dom = String::from_utf8_lossy(&output.stdout).to_string();
    let start = dom
        .find("<pre id=\"out\">")
        .map(|i| i + "<pre id=\"out\">".len());
    let text = start
        .and_then(|s| dom[s..].find("</pre>").map(|e| dom[s..s + e].to_string()))
        .unwrap_or_else(|| panic!("no #out in the page chromium dumped: {dom}"));
    text
}

#[tokio::test]
async fn a_page_in_headless_chromium_calls_the_api_only_from_an_allowed_origin() {
    if !require_tool("chromium", "chromium") {
        return;
    }
    // Two pages on two loopback ports: two origins. Only the first is allowed.
    let api_key = "browser-test-key";
    let (allowed_listener, allowed) = page_listener().await;
    let (other_listener, other) = page_listener().await;
    let h = Harness::with(TestServerOptions {
        api_key: Some(api_key.to_string()),
        cors_origins: vec![allowed.clone()],
        ..Default::default()
    })
    .await;
    let html = page(&h.url("/api/sessions/interactions/query"), api_key);
    serve_page(allowed_listener, html.clone());
    serve_page(other_listener, html);

    let from_allowed = tokio::task::spawn_blocking({
        let url = format!("{allowed}/");
        move || load_in_chromium(&url)
    })
    .await
    .unwrap();
    assert_eq!(
        from_allowed, "status=200 request_id=from-the-page count=0",
        "the allowed origin's page read the answer"
    );
    let from_other = tokio::task::spawn_blocking({
        let url = format!("{other}/");
        move || load_in_chromium(&url)
    })
    .await
    .unwrap();
    assert!(
        from_other.starts_with("blocked: TypeError"),
        "another origin's page is blocked: {from_other}"
    );
    h.server.shutdown().await;
}
