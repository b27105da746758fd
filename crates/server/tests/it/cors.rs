//! CORS: off by default; with allowed origins, a preflight names an allowed origin only,
//! and every answer to it (errors too) carries the CORS headers. A page in headless
//! Chromium calling the API is in `tests/real_tools.rs`.

use gatehouse_server::testing::TestServerOptions;

use crate::common::Harness;

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
