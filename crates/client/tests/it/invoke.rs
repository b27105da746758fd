//! `client.service().invoke_tool(...)`: the common turn (one tool under one permission)
//! against the reference server, on SQLite and again on PostgreSQL when
//! `GATEHOUSE_TEST_DATABASE_URL=postgres://...` is set.

use gatehouse_client::Answer;
use gatehouse_server::testing::TestServerOptions;
use gatehouse_wire::interaction::InteractionStatus;
use gatehouse_wire::invoke::{ToolTurn, TurnStatus, TOOL_TURN_MODEL};
use gatehouse_wire::run::RulePermission;
use serde_json::json;

use crate::common::{client_for, databases, reference_server_with};

#[tokio::test(flavor = "multi_thread")]
async fn invoke_tool_opens_a_gate_to_answer() {
    for database_url in databases().await {
        let server = reference_server_with(TestServerOptions {
            database_url,
            ..TestServerOptions::default()
        })
        .await;
        let client = client_for(&server);
        let session = uuid::Uuid::new_v4().to_string();
        let turn = ToolTurn::new("clean up /tmp", "Bash")
            .session(session.as_str())
            .args(json!({"command": "rm -rf /tmp/cache"}));

        let opened = client.service().invoke_tool(&turn).await.unwrap();
        assert_eq!(opened.status, TurnStatus::Parked, "{opened:?}");
        assert_eq!(opened.session_id, session);
        assert_eq!(opened.model.as_deref(), Some(TOOL_TURN_MODEL));
        assert_eq!(opened.interaction_ids.len(), 1);

        let pending = client
            .interactions()
            .list_pending(Some(&session))
            .await
            .unwrap();
        assert_eq!(pending.len(), 1);
        let gate = &pending[0];
        assert_eq!(gate.id.as_deref(), Some(opened.interaction_ids[0].as_str()));
        let request = gate.data.as_ref().unwrap().request.as_ref().unwrap();
        assert_eq!(request.tool.as_deref(), Some("Bash"));
        assert_eq!(
            request.args.as_ref(),
            Some(&json!({"command": "rm -rf /tmp/cache"}))
        );

        let answered = client
            .interactions()
            .respond(&opened.interaction_ids[0], &Answer::approve())
            .await
            .unwrap();
        assert_ne!(answered.status, Some(InteractionStatus::Pending));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invoke_tool_follows_its_permission_and_equals_the_full_body() {
    let server = reference_server_with(TestServerOptions::default()).await;
    let client = client_for(&server);

    let allowed = ToolTurn::new("read it", "Read").permission(RulePermission::Allow);
    let ran = client.service().invoke_tool(&allowed).await.unwrap();
    assert_eq!(ran.status, TurnStatus::Completed, "{ran:?}");
    assert!(ran.interaction_ids.is_empty());
    assert!(
        ran.output.as_deref().unwrap().contains("ran Read"),
        "{ran:?}"
    );

    let denied = ToolTurn::new("delete it", "Bash")
        .permission(RulePermission::Deny)
        .model("model-x");
    let skipped = client.service().invoke_tool(&denied).await.unwrap();
    assert_eq!(skipped.status, TurnStatus::Completed, "{skipped:?}");
    assert!(skipped.interaction_ids.is_empty());
    assert_eq!(skipped.model.as_deref(), Some("model-x"));
    assert!(
        !skipped.output.as_deref().unwrap().contains("ran Bash"),
        "{skipped:?}"
    );

    // The builder is the full body's shorthand: the same turn through `invoke`.
    let full = client
        .service()
        .invoke(&ToolTurn::new("again", "Edit").to_request())
        .await
        .unwrap();
    assert_eq!(full.status, TurnStatus::Parked);
}
