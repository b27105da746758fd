//! What Agenta's own API did when it was hosted on loopback and recorded
//! (`agenta/live/` in the upstream fixtures), asked of Gatehouse's server: Agenta's
//! transition vectors (its unit test's cases, sent over HTTP), the `Authorization`
//! spellings and the project an ApiKey implies, and the watch stream's session-id rule.
//! Where Gatehouse differs on purpose, docs/CONTRACT.md lists it with its reason.

use gatehouse_server::testing::TestServerOptions;
use gatehouse_server::ApiKey;
use serde_json::{json, Value};

use crate::common::Harness;

/// Agenta's transition vectors, replayed from the recording: every case gets the status
/// Agenta answered, and a transition Agenta took leaves the row as Agenta's did (its
/// status and its resolution).
#[tokio::test]
async fn agentas_transition_vectors_answer_as_agenta_answered() {
    let Some(text) = gatehouse_fixtures::read_text(
        gatehouse_fixtures::Upstream::Agenta,
        "Agenta's transition vectors against the server",
        "live/recorded/transition_matrix_live.json",
    ) else {
        return;
    };
    let recorded: Value = serde_json::from_str(&text).unwrap();
    let h = Harness::start().await;
    let mut cases = 0;
    for exchange in recorded["exchanges"].as_array().unwrap() {
        let request = &exchange["request"];
        let path = request["path"].as_str().unwrap().trim_end_matches('/');
        let expected = exchange["response"]["status"].as_u64().unwrap();
        let note = exchange["note"].as_str().unwrap_or_default();
        let (status, body) = h.post(path, request["body"].clone()).await;
        assert_eq!(u64::from(status), expected, "{note}: {body}");
        if path.ends_with("/transition") {
            cases += 1;
            if expected == 200 {
                let theirs = &exchange["response"]["body"]["interaction"];
                let ours = &body["interaction"];
                assert_eq!(ours["status"], theirs["status"], "{note}: {body}");
                assert_eq!(
                    ours["data"]["resolution"], theirs["data"]["resolution"],
                    "{note}: {body}"
                );
            }
        }
    }
    assert!(cases >= 12, "only {cases} transition cases");
}

/// A `responded` transition records the answer and continues nothing: no resume job.
#[tokio::test]
async fn a_responded_transition_keeps_an_open_resolution_and_queues_no_resume() {
    let h = Harness::start().await;
    let (status, body) = h
        .post(
            "/api/sessions/interactions",
            json!({"session_id": "web", "turn_id": "t-1", "token": "ct-1", "kind": "client_tool",
                   "data": {"request": {"tool": "request_connection", "args": {}, "tool_call_id": "tool-1"}}}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let id = body["interaction"]["id"].as_str().unwrap().to_string();
    let resolution = json!({"tool_call_id": "tool-1", "outcome": "completed",
                            "output": {"connected": true, "integration": "telegram"}});
    let (status, body) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": "web", "token": "ct-1", "status": "responded", "resolution": resolution}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["interaction"]["status"], "responded");
    assert_eq!(body["interaction"]["data"]["resolution"], resolution);
    let job = h
        .server
        .server
        .state()
        .interactions
        .job_state(&id)
        .await
        .unwrap();
    assert_eq!(job, None, "a transition continues no turn");
    // Once answered, a second `responded` is a conflict, as any non-pending row.
    let (status, body) = h
        .post(
            "/api/sessions/interactions/transition",
            json!({"session_id": "web", "token": "ct-1", "status": "responded", "resolution": resolution}),
        )
        .await;
    assert_eq!(status, 409, "{body}");
}

const BOUND_KEY: &str = "bound-key-3f1c9a";

async fn with_a_key_bound_to_one_project() -> Harness {
    let project = uuid::Uuid::new_v4().to_string();
    Harness::with(TestServerOptions {
        project_id: Some(project.clone()),
        extra_api_keys: vec![ApiKey::bound("phone", BOUND_KEY, [&project])],
        ..Default::default()
    })
    .await
}

async fn query(h: &Harness, url: &str, authorization: &str) -> (u16, Value) {
    let response = h
        .http
        .post(url)
        .header("authorization", authorization)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    crate::common::decode(response).await
}

/// Agenta's legacy spelling, the bare key, authenticates; so do `ApiKey` and `Bearer`
/// (any case: Gatehouse reads the scheme case-insensitively, as RFC 9110 has it).
#[tokio::test]
async fn the_bare_key_authenticates_as_on_agentas_legacy_path() {
    let h = with_a_key_bound_to_one_project().await;
    let url = h.url("/api/sessions/interactions/query");
    for spelling in [
        BOUND_KEY.to_string(),
        format!("ApiKey {BOUND_KEY}"),
        format!("Bearer {BOUND_KEY}"),
        format!("apikey {BOUND_KEY}"),
    ] {
        let (status, body) = query(&h, &url, &spelling).await;
        assert_eq!(status, 200, "{spelling}: {body}");
    }
    for refused in ["ApiKey", "wrong-key", "ApiKey wrong-key"] {
        let (status, body) = query(&h, &url, refused).await;
        assert_eq!(status, 401, "{refused}: {body}");
    }
}

/// Agenta takes the project from the key: a key bound to exactly one project may leave
/// `?project_id=` out and acts in its project. Naming another project is refused (Agenta
/// ignores it and answers with the key's rows, which a client cannot tell apart).
#[tokio::test]
async fn a_key_bound_to_one_project_names_it_without_project_id() {
    let h = with_a_key_bound_to_one_project().await;
    let project = h.server.project_id.clone();
    let created = json!({"session_id": "keyed", "token": "k-1", "kind": "user_approval"});
    let response = h
        .http
        .post(
            h.url("/api/sessions/interactions")
                .split('?')
                .next()
                .unwrap(),
        )
        .header("authorization", format!("ApiKey {BOUND_KEY}"))
        .json(&created)
        .send()
        .await
        .unwrap();
    let (status, body) = crate::common::decode(response).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["interaction"]["project_id"], project.as_str());
    let other = uuid::Uuid::new_v4();
    let (status, body) = query(
        &h,
        &format!(
            "{}/api/sessions/interactions/query?project_id={other}",
            h.server.base_url
        ),
        &format!("ApiKey {BOUND_KEY}"),
    )
    .await;
    assert_eq!(status, 403, "{body}");
    // The test key acts in every project: it must say which.
    let response = h
        .http
        .post(format!(
            "{}/api/sessions/interactions/query",
            h.server.base_url
        ))
        .header("authorization", format!("ApiKey {}", h.server.api_key))
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    let (status, body) = crate::common::decode(response).await;
    assert_eq!(status, 422, "{body}");
}

/// The watch stream takes Agenta's session ids only (`^[a-zA-Z0-9_-]{1,128}$`): any other
/// is refused 400 before a stream opens, in Agenta's words.
#[tokio::test]
async fn the_watch_refuses_a_session_id_agenta_refuses() {
    let h = Harness::start().await;
    for (session, expected) in [
        ("has.dot", 400),
        ("has space", 400),
        (&"x".repeat(129) as &str, 400),
        ("ok_session-1", 200),
    ] {
        let response = h
            .http
            .get(h.url("/api/sessions/streams/watch"))
            .query(&[("session_id", session)])
            .header("authorization", format!("ApiKey {}", h.server.api_key))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), expected, "{session}");
        if expected == 400 {
            let (_, body) = crate::common::decode(response).await;
            assert_eq!(
                body["detail"], "session_id contains invalid characters or is empty.",
                "{body}"
            );
        }
    }
}
