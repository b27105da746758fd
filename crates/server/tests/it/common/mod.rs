//! Shared helpers for the server's HTTP tests.
#![allow(dead_code)]

pub mod db;

use std::time::{Duration, Instant};

use gatehouse_server::testing::{self, TestServer, TestServerOptions};
use serde_json::{json, Value};

/// A turn parked at its approval gate ([`Harness::park_run`]).
pub struct ParkedRun {
    /// The gate's interaction id.
    pub gate: String,
    /// The run's execution session: its room, id and revision when parked.
    pub room: String,
    pub session: String,
    pub revision: u64,
}

/// Test server options whose Agenta paths speak the legacy contract.
pub fn legacy_options() -> TestServerOptions {
    TestServerOptions {
        agenta_contract: gatehouse_server::AgentaContract::Legacy,
        ..TestServerOptions::default()
    }
}

/// A test server plus an HTTP client.
pub struct Harness {
    pub server: TestServer,
    pub http: reqwest::Client,
}

impl Harness {
    /// Another instance on this one's database (the same SQLite file, or the same
    /// PostgreSQL database) and key, speaking Agenta's durable contract.
    pub async fn durable_peer(&self) -> Harness {
        let options = &self.server.options;
        Harness {
            server: gatehouse_server::testing::spawn(
                gatehouse_server::testing::TestServerOptions {
                    database_path: options.database_path.clone(),
                    database_url: options.database_url.clone(),
                    api_key: options.api_key.clone(),
                    project_id: options.project_id.clone(),
                    agenta_contract: gatehouse_server::AgentaContract::Durable,
                    ..gatehouse_server::testing::TestServerOptions::default()
                },
            )
            .await,
            http: reqwest::Client::new(),
        }
    }

    /// `GET /metrics`: status, content type, body.
    pub async fn scrape_metrics(&self) -> (u16, String, String) {
        let response = self
            .http
            .get(format!("{}/metrics", self.server.base_url))
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        (status, content_type, response.text().await.unwrap())
    }

    pub async fn start() -> Self {
        Self::with(TestServerOptions::default()).await
    }

    /// A server whose Agenta paths speak the legacy contract (the respond answers 200
    /// `{count, interaction}`): for the tests of that contract.
    pub async fn legacy() -> Self {
        Self::with(legacy_options()).await
    }

    /// `GATEHOUSE_TEST_DATABASE_URL=postgres://HOST/DB` runs the suite on Postgres: each
    /// server gets a fresh database of its own there (servers with different settings
    /// must not share one resume queue).
    pub async fn with(mut opts: TestServerOptions) -> Self {
        if opts.database_url.is_none() {
            if let Ok(url) = std::env::var("GATEHOUSE_TEST_DATABASE_URL") {
                if url.starts_with("postgres") {
                    opts.database_url = Some(fresh_postgres_database(&url).await);
                }
            }
        }
        Self {
            server: testing::spawn(opts).await,
            http: reqwest::Client::new(),
        }
    }

    pub async fn restart(self) -> Self {
        Self {
            server: self.server.restart().await,
            http: self.http,
        }
    }

    pub fn url(&self, path: &str) -> String {
        self.server.url(path)
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .http
            .post(self.url(path))
            .header("Authorization", self.server.authorization())
            .json(&body)
            .send()
            .await
            .unwrap();
        decode(response).await
    }

    pub async fn post_with_headers(
        &self,
        path: &str,
        body: Value,
        headers: &[(&str, &str)],
    ) -> (u16, Value) {
        let mut request = self
            .http
            .post(self.url(path))
            .header("Authorization", self.server.authorization())
            .json(&body);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        decode(request.send().await.unwrap()).await
    }

    pub async fn post_with_key(&self, path: &str, body: Value, key: &str) -> (u16, Value) {
        let response = self
            .http
            .post(self.url(path))
            .header("Authorization", self.server.authorization())
            .header("Idempotency-Key", key)
            .json(&body)
            .send()
            .await
            .unwrap();
        decode(response).await
    }

    /// An authorized `GET`, its answer not yet read.
    async fn get_response(&self, path: &str) -> reqwest::Response {
        self.http
            .get(self.url(path))
            .header("Authorization", self.server.authorization())
            .send()
            .await
            .unwrap()
    }

    pub async fn get(&self, path: &str) -> (u16, Value) {
        decode(self.get_response(path).await).await
    }

    /// Open an SSE stream at `path`: asserts a 200 `text/event-stream` answer.
    pub async fn open_stream(&self, path: &str) -> reqwest::Response {
        let response = self.get_response(path).await;
        assert_eq!(response.status().as_u16(), 200);
        assert!(response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/event-stream"));
        response
    }

    /// Commit a revision of `workflow`/`variant` with `model` and `permission`.
    pub async fn commit(
        &self,
        workflow: &str,
        variant: &str,
        model: &str,
        permission: &str,
    ) -> Value {
        let (status, body) = self
            .post(
                "/api/workflows/revisions/commit",
                json!({
                    "workflow": {"slug": workflow},
                    "variant": {"slug": variant},
                    "parameters": config(model, permission),
                }),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    pub async fn invoke(&self, body: Value) -> Value {
        let (status, answer) = self.post("/api/invoke", body).await;
        assert_eq!(status, 200, "{answer}");
        answer
    }

    /// Park a turn of `session_id` at its approval gate (`model`, permission `ask`, the
    /// user says "go"): the gate's interaction id.
    pub async fn park(&self, session_id: &str, model: &str) -> String {
        self.park_run(session_id, model).await.gate
    }

    /// Park a turn as [`Harness::park`] does: its gate and its execution session.
    pub async fn park_run(&self, session_id: &str, model: &str) -> ParkedRun {
        let parked = self
            .invoke(json!({
                "session_id": session_id,
                "data": {"inputs": {"messages": user("go")}, "parameters": config(model, "ask")}
            }))
            .await;
        assert_eq!(parked["status"], "parked", "{parked}");
        let execution = &parked["execution"];
        let text = |value: &Value| value.as_str().unwrap_or_default().to_string();
        ParkedRun {
            gate: text(&parked["interaction_ids"][0]),
            room: text(&execution["room_id"]),
            session: text(&execution["session_id"]),
            revision: execution["revision"].as_u64().unwrap_or_default(),
        }
    }

    /// Answer a gate: `POST /api/sessions/interactions/{id}/respond` with
    /// `{"answer": {"approved": approved}}`.
    pub async fn respond(&self, id: &str, approved: bool) -> (u16, Value) {
        self.post(
            &format!("/api/sessions/interactions/{id}/respond"),
            json!({"answer": {"approved": approved}}),
        )
        .await
    }

    pub async fn interaction(&self, id: &str) -> Value {
        let (status, body) = self.get(&format!("/api/sessions/interactions/{id}")).await;
        assert_eq!(status, 200, "{body}");
        body["interaction"].clone()
    }

    pub async fn turns(&self, session_id: &str) -> Value {
        let (status, body) = self.get(&format!("/api/sessions/{session_id}/turns")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// Wait until the interaction is `resolved` (polls with a deadline).
    pub async fn wait_resolved(&self, id: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let last = self.interaction(id).await;
            if last["status"] == "resolved" {
                return last;
            }
            assert!(
                Instant::now() < deadline,
                "interaction {id} never resolved: {last}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A store of its own for a test that works below HTTP: a SQLite file `name` in a
/// temporary folder (kept while the `TempDir` lives), or, with
/// `GATEHOUSE_TEST_DATABASE_URL=postgres://.../db`, a fresh Postgres database (the resume
/// queue is global, so tests must not share one).
pub async fn fresh_store(
    name: &str,
) -> (
    tempfile::TempDir,
    gatehouse_server::interactions::store::InteractionStore,
) {
    let dir = tempfile::tempdir().unwrap();
    let url = match std::env::var("GATEHOUSE_TEST_DATABASE_URL") {
        Ok(url) if url.starts_with("postgres") => fresh_postgres_database(&url).await,
        _ => format!("sqlite://{}", dir.path().join(name).display()),
    };
    let db = gatehouse_server::Database::connect(&url).await.unwrap();
    (
        dir,
        gatehouse_server::Stores::new(db, Vec::new()).interactions,
    )
}

/// An approval gate of agent session `s` in `project` (naming `turn_id`, if any),
/// approved through the store: its id (its resume job is queued).
pub async fn approved_gate(
    store: &gatehouse_server::interactions::store::InteractionStore,
    project: &str,
    token: &str,
    turn_id: Option<&str>,
) -> String {
    use gatehouse_server::interactions::store::{NewInteraction, RespondOutcome};
    use gatehouse_wire::interaction::{InteractionData, InteractionFlags, InteractionKind};
    let created = store
        .create_interaction(&NewInteraction {
            project_id: project.into(),
            session_id: "s".into(),
            turn_id: turn_id.map(str::to_string),
            token: token.into(),
            kind: InteractionKind::UserApproval,
            data: InteractionData::default(),
            flags: InteractionFlags::default(),
            tags: None,
            meta: None,
            created_by_id: None,
        })
        .await
        .unwrap();
    let mut answer = serde_json::Map::new();
    answer.insert("approved".into(), true.into());
    let outcome = store
        .respond(project, &created.record.id, &answer, "tester", None, None)
        .await
        .unwrap();
    assert!(matches!(outcome, RespondOutcome::Won { .. }));
    created.record.id
}

/// Create an empty database next to the one `url` names and return its URL.
pub async fn fresh_postgres_database(url: &str) -> String {
    testing::fresh_postgres_database(url)
        .await
        .expect("a fresh Postgres database")
}

pub async fn decode(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    let body = if text.is_empty() {
        Value::Null
    } else {
        serde_json::from_str(&text).unwrap_or(Value::String(text))
    };
    (status, body)
}

/// A config: model, permission default.
pub fn config(model: &str, permission: &str) -> Value {
    json!({"agent": {"llm": {"model": model}, "runner": {"permissions": {"default": permission}}}})
}

/// Poll `check` until it is true or `limit` passes.
pub async fn wait_until<F, Fut>(limit: Duration, mut check: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + limit;
    loop {
        if check().await {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

pub fn user(text: &str) -> Value {
    json!([{"role": "user", "content": text}])
}

/// Whether `tool` (from Debian's `package`) is on the PATH. When it is not: under
/// `CI=true` the test fails (`.ci/run` installs it), elsewhere one line says the test is
/// skipped and it passes.
#[allow(clippy::print_stderr)] // the one line saying the test is skipped
pub fn require_tool(tool: &str, package: &str) -> bool {
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|dir| dir.join(tool).is_file()));
    if found {
        return true;
    }
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI needs {tool} (apt-get install {package})"
    );
    eprintln!("skipped: {tool} is not installed (apt-get install {package})");
    false
}
