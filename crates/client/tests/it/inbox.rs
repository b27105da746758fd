//! One inbox across hosts (`gatehouse_client::Inbox`): two reference servers and a host
//! that is down, read page by page; the down host is reported with its typed error and
//! fails nothing else; a gate answered between two pages does not make the cursor skip
//! another.

use std::collections::BTreeSet;

use gatehouse_client::{Answer, Client, ErrorKind, HostState, Inbox, InboxCursor};
use gatehouse_wire::invoke::ToolTurn;
use serde_json::json;

use gatehouse_server::testing::TestServerOptions;

use crate::common::{client_for, databases, reference_server, reference_server_with};

/// Open `count` gates on `client`'s host (one turn each); their ids.
async fn open_gates(client: &Client, count: usize) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for n in 0..count {
        let turn = ToolTurn::new(format!("step {n}"), "Bash").args(json!({"command": "ls"}));
        let opened = client.service().invoke_tool(&turn).await.unwrap();
        ids.extend(opened.interaction_ids);
    }
    ids
}

/// A URL nothing listens on: a port bound, then let go.
fn dead_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("http://127.0.0.1:{port}")
}

#[tokio::test(flavor = "multi_thread")]
async fn two_servers_and_one_down_read_as_one_inbox() {
    let (team, home) = (reference_server().await, reference_server().await);
    let (team_client, home_client) = (client_for(&team), client_for(&home));
    let team_gates = open_gates(&team_client, 5).await;
    let home_gates = open_gates(&home_client, 3).await;
    let down = Client::builder(dead_url())
        .api_key("gatehouse-dev")
        .project_id(team.project_id.clone())
        .build()
        .unwrap();
    let inbox = Inbox::new()
        .host("team", team_client)
        .unwrap()
        .host("home", home_client)
        .unwrap()
        .host("down", down)
        .unwrap();

    let mut seen_team = BTreeSet::new();
    let mut seen_home = BTreeSet::new();
    let mut cursor: Option<InboxCursor> = None;
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(
            pages <= 5,
            "the inbox never read its live hosts to their end"
        );
        let page = inbox.pending(cursor.as_ref(), 2).await.unwrap();
        assert_eq!(page.hosts.len(), 3);
        let down_report = &page.hosts[2];
        assert_eq!(down_report.host, "down");
        match &down_report.state {
            HostState::Failed(error) => assert_eq!(error.kind(), ErrorKind::Transport, "{error}"),
            other => panic!("the down host was reported {other:?}"),
        }
        for gate in &page.gates {
            let id = gate.gate.id.clone().unwrap();
            let fresh = match gate.host.as_str() {
                "team" => seen_team.insert(id),
                "home" => seen_home.insert(id),
                other => panic!("a gate from host {other}"),
            };
            assert!(fresh, "a gate came twice: {gate:?}");
        }
        // Newest first across hosts.
        let times: Vec<_> = page
            .gates
            .iter()
            .map(|g| g.gate.created_at.clone())
            .collect();
        let mut sorted = times.clone();
        sorted.sort_by(|a, b| b.cmp(a));
        assert_eq!(times, sorted);
        // Through text and back, as an app keeps it.
        let next = page.next.expect("a failed host keeps the inbox open");
        let live_done = page.hosts[..2]
            .iter()
            .all(|report| matches!(report.state, HostState::Done));
        cursor = Some(InboxCursor::parse(next.as_str()).unwrap());
        if live_done {
            break;
        }
    }
    assert_eq!(seen_team, team_gates);
    assert_eq!(seen_home, home_gates);

    // Without the down host, the same cursor ends the inbox.
    let inbox = Inbox::new()
        .host("team", client_for(&team))
        .unwrap()
        .host("home", client_for(&home))
        .unwrap();
    let last = inbox.pending(cursor.as_ref(), 2).await.unwrap();
    assert!(last.gates.is_empty());
    assert!(last.next.is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_gate_answered_between_pages_skips_no_other() {
    for database_url in databases().await {
        a_gate_answered_between_pages_skips_no_other_on(database_url).await;
    }
}

async fn a_gate_answered_between_pages_skips_no_other_on(database_url: Option<String>) {
    let server = reference_server_with(TestServerOptions {
        database_url,
        ..TestServerOptions::default()
    })
    .await;
    let client = client_for(&server);
    let gates = open_gates(&client, 6).await;
    let inbox = Inbox::new().host("only", client.clone()).unwrap();

    let first = inbox.pending(None, 3).await.unwrap();
    assert_eq!(first.gates.len(), 3);
    let mut seen: BTreeSet<String> = first
        .gates
        .iter()
        .map(|g| g.gate.id.clone().unwrap())
        .collect();
    // The person answers the last gate they saw (the cursor's own row) before scrolling on.
    let last_seen = first.gates.last().unwrap().gate.id.clone().unwrap();
    client
        .interactions()
        .respond(&last_seen, &Answer::approve())
        .await
        .unwrap();
    let mut cursor = first.next;
    while let Some(at) = cursor {
        let page = inbox.pending(Some(&at), 3).await.unwrap();
        for gate in page.gates {
            assert!(seen.insert(gate.gate.id.unwrap()), "a gate came twice");
        }
        cursor = page.next;
    }
    assert_eq!(seen, gates);
}

#[tokio::test]
async fn bad_input_is_a_config_error_and_sends_nothing() {
    let client = Client::builder(dead_url()).build().unwrap();
    let inbox = Inbox::new().host("a", client.clone()).unwrap();
    let duplicate = Inbox::new()
        .host("a", client.clone())
        .unwrap()
        .host("a", client.clone());
    assert_eq!(duplicate.unwrap_err().kind(), ErrorKind::Config);
    assert_eq!(
        Inbox::new().host(" ", client.clone()).unwrap_err().kind(),
        ErrorKind::Config
    );
    for text in ["", "{}", "not json", r#"{"v":9,"hosts":{}}"#] {
        assert_eq!(
            InboxCursor::parse(text).unwrap_err().kind(),
            ErrorKind::Config,
            "{text:?}"
        );
    }
    assert_eq!(
        inbox.pending(None, 0).await.unwrap_err().kind(),
        ErrorKind::Config
    );
    assert_eq!(
        inbox.pending(None, 501).await.unwrap_err().kind(),
        ErrorKind::Config
    );
}
