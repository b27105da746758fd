//! CORS: off by default; with allowed origins, a preflight and a real request from a page
//! in headless Chromium (Debian's `chromium`) succeed from an allowed origin and are
//! blocked from any other.
//!
//! The browser test needs `chromium` (`apt-get install chromium`; `.ci/run` installs
//! it): without it, it says so in one line and passes, except under `CI=true`, where it
//! fails. Everything listens on loopback; Chromium runs at most 60 s per page.

use std::process::{Command, Stdio};
use std::time::Duration;

use gatehouse_server::testing::TestServerOptions;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::common::{require_tool, Harness};

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
async fn without_origins_there_are_no_cors_headers() {
    let h = Harness::start().await;
    let response = h
        .http
        .request(
            reqwest::Method::OPTIONS,
            h.url("/api/sessions/interactions/query"),
        )
        .header("Origin", "http://127.0.0.1:9")
        .header("Access-Control-Request-Method", "POST")
        .header(
            "Access-Control-Request-Headers",
            "authorization,content-type",
        )
        .send()
        .await
        .unwrap();
    assert!(
        response
            .headers()
            .get("access-control-allow-origin")
            .is_none(),
        "{:?}",
        response.headers()
    );
    h.server.shutdown().await;
}

#[tokio::test]
async fn a_preflight_names_an_allowed_origin_only() {
    let allowed = "http://127.0.0.1:7001";
    let h = Harness::with(TestServerOptions {
        cors_origins: vec![allowed.to_string()],
        ..Default::default()
    })
    .await;
    for (origin, expect) in [(allowed, Some(allowed)), ("http://127.0.0.1:7002", None)] {
        let response = h
            .http
            .request(
                reqwest::Method::OPTIONS,
                h.url("/api/sessions/interactions/query"),
            )
            .header("Origin", origin)
            .header("Access-Control-Request-Method", "POST")
            .header(
                "Access-Control-Request-Headers",
                "authorization,content-type,x-request-id",
            )
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        };
        assert_eq!(header("access-control-allow-origin").as_deref(), expect);
        if expect.is_some() {
            let headers = header("access-control-allow-headers").unwrap_or_default();
            assert!(headers.contains("authorization"), "{headers}");
            assert!(header("access-control-allow-methods")
                .unwrap_or_default()
                .contains("POST"));
        }
    }
    // A real request from the allowed origin: its answer names the origin and lets the
    // page read the request id; an error answer carries the headers too.
    let response = h
        .http
        .post(h.url("/api/sessions/interactions/query"))
        .header("Origin", allowed)
        .header("Content-Type", "application/json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    assert_eq!(
        response
            .headers()
            .get("access-control-allow-origin")
            .unwrap(),
        allowed
    );
    let exposed = response
        .headers()
        .get("access-control-expose-headers")
        .unwrap()
        .to_str()
        .unwrap()
        .to_ascii_lowercase();
    assert!(exposed.contains("x-request-id"), "{exposed}");
    h.server.shutdown().await;
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
