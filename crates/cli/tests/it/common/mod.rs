//! Setup shared by the CLI tests: the binary, a command pointed at a test server, a
//! client of that server, a turn parked at its gate, and the Agenta fixtures.

use std::path::PathBuf;
use std::process::{Command, Output};

use gatehouse_server::testing::TestServer;
use gatehouse_wire::invoke::{InvokeData, InvokeInputs, InvokeRequest, InvokeResponse, TurnStatus};
use gatehouse_wire::run::ChatMessage;
use serde_json::Value;

/// The `gatehouse` binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_gatehouse");

/// `gatehouse` with `GATEHOUSE_URL`, `GATEHOUSE_API_KEY` and `GATEHOUSE_PROJECT` set
/// for `server`.
pub fn gatehouse(server: &TestServer) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env("GATEHOUSE_URL", &server.base_url)
        .env("GATEHOUSE_API_KEY", &server.api_key)
        .env("GATEHOUSE_PROJECT", &server.project_id);
    cmd
}

/// `gatehouse` with no connection setting taken from the environment (each test names
/// its own with flags).
pub fn gatehouse_without_env() -> Command {
    let mut cmd = Command::new(BIN);
    for var in [
        "GATEHOUSE_URL",
        "GATEHOUSE_API_KEY",
        "GATEHOUSE_PROJECT",
        "GATEHOUSE_UPSTREAM",
        "GATEHOUSE_TENANT",
        "GATEHOUSE_PARTICIPANT",
    ] {
        cmd.env_remove(var);
    }
    cmd
}

/// Run `gatehouse <args>` against `server` to completion.
pub fn run(server: &TestServer, args: &[&str]) -> Output {
    gatehouse(server).args(args).output().unwrap()
}

/// Command output as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A client of `server`, with its key and project.
pub fn client(server: &TestServer) -> gatehouse_client::Client {
    gatehouse_client::Client::builder(&server.base_url)
        .api_key(&server.api_key)
        .project_id(&server.project_id)
        .build()
        .unwrap()
}

/// Invoke a turn on `session` under the agent config `agent` (sent inline as
/// `data.parameters.agent`) with `messages`, and check that it parked at a gate.
pub async fn invoke_parked(
    server: &TestServer,
    session: &str,
    agent: Value,
    messages: Vec<ChatMessage>,
) -> InvokeResponse {
    let mut parameters = serde_json::Map::new();
    parameters.insert("agent".into(), agent);
    let answer = client(server)
        .service()
        .invoke(&InvokeRequest {
            session_id: Some(session.to_string()),
            references: None,
            data: InvokeData {
                inputs: InvokeInputs {
                    messages,
                    ..Default::default()
                },
                parameters: Some(parameters),
                ..Default::default()
            },
        })
        .await
        .unwrap();
    assert_eq!(answer.status, TurnStatus::Parked);
    answer
}

/// An Agenta fixture file for the upstream conformance suite `suite`, where the
/// conformance suites find it (`gatehouse_fixtures`); `None` (the suite is skipped, one
/// line says so) when the fixtures are absent outside CI.
pub fn agenta_fixture(suite: &str, name: &str) -> Option<PathBuf> {
    gatehouse_fixtures::require_file(gatehouse_fixtures::Upstream::Agenta, suite, name)
}

/// One of the project's own sample documents (`tests/data/samples/<file>` at the
/// workspace root; see its README).
pub fn own_sample(file: &str) -> PathBuf {
    gatehouse_fixtures::workspace_root()
        .join("tests/data/samples")
        .join(file)
}
