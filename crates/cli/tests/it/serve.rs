//! `gatehouse serve`: the listening line, a working API, one log line per request,
//! a clean stop on SIGTERM, and bad flags.

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};

use crate::common::BIN;

struct Served {
    child: Child,
    base_url: String,
    /// The server's standard output after its listening line and its standard error,
    /// each read as it comes by a thread of its own: a pipe nobody reads fills at
    /// 64 KiB and blocks the server mid-write (`RUST_LOG=debug` logs every statement).
    output: [std::thread::JoinHandle<String>; 2],
    _dir: tempfile::TempDir,
}

impl Served {
    /// `child` (stdout and stderr piped) once it printed its listening line.
    fn started(mut child: Child, dir: tempfile::TempDir) -> Served {
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let base_url = line
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("unexpected first line {line:?}"))
            .trim_end()
            .to_string();
        let stderr = child.stderr.take().unwrap();
        Served {
            child,
            base_url,
            output: [read_all(stdout), read_all(stderr)],
            _dir: dir,
        }
    }
}

/// Everything `from` gives until it ends, read on a thread of its own.
fn read_all(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut text = String::new();
        let _ = from.read_to_string(&mut text);
        text
    })
}

fn serve(extra: &[&str]) -> Served {
    serve_with_env(extra, &[])
}

/// `gatehouse serve` on a fresh SQLite file with `extra` flags and `env` set (neither
/// `GATEHOUSE_API_KEYS` nor `RUST_LOG` inherited), once it printed its listening line.
fn serve_with_env(extra: &[&str], env: &[(&str, &str)]) -> Served {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("serve.db").display());
    let child = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--database-url", &db])
        .args(extra)
        .env_remove("GATEHOUSE_API_KEYS")
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    Served::started(child, dir)
}

#[cfg(unix)]
fn terminate(mut served: Served, signal: &str) -> (Option<i32>, String, String) {
    let status = Command::new("kill")
        .args([signal, &served.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let exit = served.child.wait().unwrap();
    let [stdout, stderr] = served.output;
    (exit.code(), stdout.join().unwrap(), stderr.join().unwrap())
}

fn client(url: &str, key: &str) -> gatehouse_client::Client {
    gatehouse_client::Client::builder(url)
        .api_key(key)
        .project_id(uuid::Uuid::new_v4().to_string())
        .build()
        .unwrap()
}

#[cfg(unix)]
#[tokio::test]
async fn serve_prints_the_listening_line_answers_logs_and_stops_cleanly() {
    let served = serve(&["--api-key", "alice=s3cret-alice"]);
    let port_part = served.base_url.strip_prefix("http://127.0.0.1:").unwrap();
    assert!(port_part.parse::<u16>().unwrap() > 0, "{}", served.base_url);

    let alice = client(&served.base_url, "s3cret-alice");
    let caps = alice.capabilities().get().await.unwrap();
    assert_eq!(caps.service, "gatehouse");
    assert!(caps
        .capabilities
        .contains(&gatehouse_wire::capabilities::Capability::Interactions));
    let rows = alice.interactions().list_pending(None).await.unwrap();
    assert!(rows.is_empty());

    let stranger = client(&served.base_url, "wrong-key");
    let err = stranger
        .interactions()
        .list_pending(None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, gatehouse_client::Error::Unauthorized { .. }),
        "{err}"
    );

    let (code, stdout, stderr) = terminate(served, "-TERM");
    assert_eq!(code, Some(0), "stderr:\n{stderr}");
    // Exactly one line on stdout: the listening line (already read).
    assert_eq!(stdout, "");
    let request_lines: Vec<&str> = stderr.lines().filter(|l| l.contains("request")).collect();
    assert!(
        request_lines
            .iter()
            .any(|l| l.contains("/api/capabilities") && l.contains("200")),
        "{stderr}"
    );
    assert!(
        request_lines
            .iter()
            .any(|l| l.contains("/api/sessions/interactions/query") && l.contains("401")),
        "{stderr}"
    );
    assert!(
        !stderr.contains("s3cret-alice"),
        "the key leaked into the log"
    );
    assert!(stderr.contains("stopped"), "{stderr}");
}

#[cfg(unix)]
#[tokio::test]
async fn serve_reads_keys_from_the_environment_and_can_leave_execution_out() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("env.db").display());
    let child = Command::new(BIN)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--database-url",
            &db,
            "--no-execution",
        ])
        .env("GATEHOUSE_API_KEYS", "bob=key-b, key-c")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let served = Served::started(child, dir);
    let url = served.base_url.clone();
    for key in ["key-b", "key-c"] {
        client(&url, key)
            .interactions()
            .list_pending(None)
            .await
            .unwrap();
    }
    let caps = client(&url, "key-b").capabilities().get().await.unwrap();
    assert!(!caps
        .capabilities
        .contains(&gatehouse_wire::capabilities::Capability::Execution));
    // Ctrl-C (SIGINT) stops it cleanly too.
    let (code, _, stderr) = terminate(served, "-INT");
    assert_eq!(code, Some(0), "{stderr}");
}

#[test]
fn serve_bad_flags() {
    let empty_secret = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--api-key", "alice="])
        .output()
        .unwrap();
    assert_eq!(empty_secret.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&empty_secret.stderr).contains("secret is empty"));

    let bad_bind = Command::new(BIN)
        .args(["serve", "--bind", "not-an-address"])
        .output()
        .unwrap();
    assert_eq!(bad_bind.status.code(), Some(2));
}

#[test]
fn serve_reports_an_address_in_use() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("busy.db").display());
    let out = Command::new(BIN)
        .args(["serve", "--bind", &addr, "--database-url", &db])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot start the server") && stderr.contains(&addr),
        "{stderr}"
    );
    assert!(out.stdout.is_empty());
}

/// Keys bound to projects (`ACTOR=SECRET@P1+P2`, `@*` for every project): a key acts
/// only in its projects (403 elsewhere); unbound keys still work, with a startup warning
/// naming their actor (never the secret). The connection limits and the database wait
/// are flags.
#[cfg(unix)]
#[tokio::test]
async fn serve_binds_keys_to_projects() {
    let p1 = uuid::Uuid::new_v4().to_string();
    let p2 = uuid::Uuid::new_v4().to_string();
    let p3 = uuid::Uuid::new_v4().to_string();
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("bound.db").display());
    let child = Command::new(BIN)
        .args([
            "serve",
            "--bind",
            "127.0.0.1:0",
            "--database-url",
            &db,
            "--header-read-timeout",
            "5",
            "--max-connections-per-client",
            "32",
            "--db-acquire-timeout",
            "3",
        ])
        .env(
            "GATEHOUSE_API_KEYS",
            format!("phone=key-phone@{p1}+{p2}, root=key-root@*, legacy=key-legacy"),
        )
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let served = Served::started(child, dir);
    let url = served.base_url.clone();
    let in_project = |key: &str, project: &str| {
        gatehouse_client::Client::builder(&url)
            .api_key(key)
            .project_id(project)
            .build()
            .unwrap()
    };
    for project in [&p1, &p2] {
        in_project("key-phone", project)
            .interactions()
            .list_pending(None)
            .await
            .unwrap();
    }
    let err = in_project("key-phone", &p3)
        .interactions()
        .list_pending(None)
        .await
        .unwrap_err();
    assert!(
        matches!(err, gatehouse_client::Error::Forbidden { .. }),
        "{err}"
    );
    for key in ["key-root", "key-legacy"] {
        in_project(key, &p3)
            .interactions()
            .list_pending(None)
            .await
            .unwrap();
    }
    let (code, _, stderr) = terminate(served, "-TERM");
    assert_eq!(code, Some(0), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("not bound to projects"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(warnings[0].contains("legacy"), "{stderr}");
    assert!(!stderr.contains("key-legacy") && !stderr.contains("key-phone"));
}

#[test]
fn serve_refuses_a_bad_key_binding_or_limit() {
    for args in [
        vec!["--api-key", "alice=s3cret@not a project"],
        vec!["--api-key", "alice=s3cret@"],
        vec!["--header-read-timeout", "0"],
        vec!["--max-connections-per-client", "-1"],
        vec!["--db-acquire-timeout", "0"],
        vec!["--cors-origin", "app.example.com"],
        vec!["--cors-origin", "https://app.example.com/path"],
        vec!["--log-format", "xml"],
        vec!["--metrics", "maybe"],
    ] {
        let out = Command::new(BIN)
            .args(["serve", "--bind", "127.0.0.1:0"])
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("s3cret"), "{stderr}");
    }
}

/// `--log-format json`: every stderr line is a JSON object; the lines of a request carry
/// its id (the client's `X-Request-Id`, or a generated one, answered in the header and
/// in error bodies); no line holds the API key, a wrong key tried, or a secret of a
/// request's config, even at `debug`.
#[cfg(unix)]
#[tokio::test]
async fn serve_logs_json_lines_with_request_ids_and_never_a_secret() {
    let key = "ops=key-9f1c2e7d-never-logged";
    let served = serve_with_env(
        &[],
        &[
            ("GATEHOUSE_LOG_FORMAT", "json"),
            ("GATEHOUSE_API_KEYS", key),
            ("RUST_LOG", "debug"),
        ],
    );
    let base_url = served.base_url.clone();
    let project = uuid::Uuid::new_v4();
    let http = reqwest::Client::new();
    let secret_header = "Bearer sk-live-51f0a9c3-secret-header";
    let secret_api_key = "sk-proj-7d2b-secret-api-key";
    let invoke = serde_json::json!({
        "session_id": "json-logs",
        "data": {
            "inputs": {"messages": [{"role": "user", "content": "go"}]},
            "parameters": {"agent": {
                "llm": {"model": "m-json", "api_key": secret_api_key},
                "runner": {"permissions": {"default": "ask"}},
                "mcps": [{"name": "notion", "headers": {"Authorization": secret_header}}]
            }}
        }
    });
    let response = http
        .post(format!("{base_url}/api/invoke?project_id={project}"))
        .header("Authorization", "ApiKey key-9f1c2e7d-never-logged")
        .header("X-Request-Id", "invoke-req-1")
        .json(&invoke)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(response.headers()["x-request-id"], "invoke-req-1");
    // A wrong key: 401, its id generated, in the header and the body.
    let response = http
        .post(format!(
            "{base_url}/api/sessions/interactions/query?project_id={project}"
        ))
        .header("Authorization", "Bearer wrong-key-3b8e-never-logged")
        .json(&serde_json::json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let generated = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["request_id"], generated.as_str(), "{body}");

    let (code, _, stderr) = terminate(served, "-TERM");
    assert_eq!(code, Some(0), "{stderr}");
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|err| panic!("not JSON ({err}): {line}"))
        })
        .collect();
    let request_id_of = |path: &str| -> Vec<String> {
        lines
            .iter()
            .filter(|l| l["fields"]["message"] == "request" && l["fields"]["path"] == path)
            .map(|l| l["span"]["request_id"].as_str().unwrap_or("").to_string())
            .collect()
    };
    assert_eq!(request_id_of("/api/invoke"), ["invoke-req-1"], "{stderr}");
    assert_eq!(
        request_id_of("/api/sessions/interactions/query"),
        [generated],
        "{stderr}"
    );
    // Lines logged while the invoke ran (its turn, the stripped secret) carry its id too.
    assert!(
        lines
            .iter()
            .any(|l| l["span"]["request_id"] == "invoke-req-1"
                && l["fields"]["message"] != "request"),
        "{stderr}"
    );
    for secret in [
        "key-9f1c2e7d-never-logged",
        "wrong-key-3b8e-never-logged",
        "sk-live-51f0a9c3-secret-header",
        secret_api_key,
    ] {
        assert!(!stderr.contains(secret), "{secret} leaked into the log");
    }
}

/// Issue 37, item 9: text-format logs write the request id bare in the `request` span,
/// so an `X-Request-Id` that could pass for span structure is replaced: the log holds
/// the id the client was answered, and nothing of the forged one.
#[cfg(unix)]
#[tokio::test]
async fn text_logs_never_show_a_request_id_that_forges_span_structure() {
    let served = serve_with_env(&[], &[("GATEHOUSE_LOG_FORMAT", "text")]);
    let forged = "x}:forged{request_id=evil";
    let response = reqwest::Client::new()
        .get(format!("{}/health", served.base_url))
        .header("X-Request-Id", forged)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let answered = response.headers()["x-request-id"]
        .to_str()
        .unwrap()
        .to_string();
    assert_ne!(answered, forged);
    let (code, _, stderr) = terminate(served, "-TERM");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains("forged"), "{stderr}");
    assert!(
        stderr.contains(&format!("request{{request_id={answered}}}")),
        "{stderr}"
    );
}

/// Issue 37, item 1: `--metrics-bind` moves `/metrics` to a listener of its own and
/// `--metrics-key` puts it behind a key, which no log line shows; an empty key is a
/// usage error.
#[cfg(unix)]
#[tokio::test]
async fn metrics_on_a_listener_of_their_own_behind_a_key() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let key = "metrics-key-5e1d-never-logged";
    let served = serve_with_env(
        &["--metrics-bind", &format!("127.0.0.1:{port}")],
        &[("GATEHOUSE_METRICS_KEY", key), ("RUST_LOG", "debug")],
    );
    let http = reqwest::Client::new();
    let on_api = http
        .get(format!("{}/metrics", served.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(on_api.status().as_u16(), 404);
    let metrics_url = format!("http://127.0.0.1:{port}/metrics");
    let keyless = http.get(&metrics_url).send().await.unwrap();
    assert_eq!(keyless.status().as_u16(), 401);
    let keyed = http
        .get(&metrics_url)
        .header("Authorization", format!("Bearer {key}"))
        .send()
        .await
        .unwrap();
    assert_eq!(keyed.status().as_u16(), 200);
    assert!(keyed
        .text()
        .await
        .unwrap()
        .contains("gatehouse_db_pool_connections"));
    let (code, _, stderr) = terminate(served, "-TERM");
    assert_eq!(code, Some(0), "{stderr}");
    assert!(!stderr.contains(key), "the metrics key leaked into the log");

    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite://{}", dir.path().join("empty-key.db").display());
    let out = Command::new(BIN)
        .args(["serve", "--bind", "127.0.0.1:0", "--database-url", &db])
        .args(["--metrics-key", " "])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
}
