//! The service tier of a Gatehouse control plane: invoke a turn (Agenta's invoke body),
//! list a session's turns, commit a workflow revision, and list the webhook outbox. These are the reference
//! control plane's own routes (capability [`Capability::Invoke`](gatehouse_wire::capabilities::Capability::Invoke)).

use gatehouse_wire::invoke::{
    CommitRevisionRequest, CommitRevisionResponse, InvokeRequest, InvokeResponse, ToolTurn,
    TurnsResponse,
};
use gatehouse_wire::webhooks::WebhookDeliveriesResponse;

use crate::client::Client;
use crate::error::{Operation, Result};
use crate::transport::Call;

impl Client {
    /// The service tier (the reference control plane's own routes): invoke a turn, list
    /// a session's turns, commit a workflow revision.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let turns = client.service().turns("48268312-0000-7000-8000-000000000000").await?;
    /// # let _ = turns; Ok(()) }
    /// ```
    pub fn service(&self) -> Service {
        Service::new(self.clone())
    }
}

/// The service-tier endpoints. Obtain with [`Client::service`]; cheap to create.
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
/// let turns = client.service().turns("48268312-0000-7000-8000-000000000000").await?;
/// println!("{} turns", turns.count);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Service {
    client: Client,
}

impl Service {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// Run a turn (`POST /api/invoke`). A turn that stops at an approval gate answers
    /// `status: parked` with the ids of the gates it opened. Never replayed on failure
    /// (an invoke is not idempotent).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::invoke::{InvokeData, InvokeInputs, InvokeRequest};
    /// use gatehouse_wire::run::ChatMessage;
    /// let request = InvokeRequest {
    ///     session_id: Some("48268312-0000-7000-8000-000000000000".into()),
    ///     references: None,
    ///     data: InvokeData {
    ///         inputs: InvokeInputs { messages: vec![ChatMessage::text("user", "hi")], ..Default::default() },
    ///         ..Default::default()
    ///     },
    /// };
    /// let answer = client.service().invoke(&request).await?;
    /// println!("{:?} under {:?}", answer.status, answer.model);
    /// # Ok(()) }
    /// ```
    pub async fn invoke(&self, request: &InvokeRequest) -> Result<InvokeResponse> {
        let call = Call::new(Operation::Invoke, &[]).json_body(request)?;
        self.client.call_json(&call).await
    }

    /// Run the common turn (`POST /api/invoke`): the deterministic agent is asked
    /// `turn`'s prompt and calls its one tool under its permission. With `ask` (the
    /// default) it parks at an approval gate, whose id is in `interaction_ids`: a gate to
    /// answer in a test, an example or a quick start. Any other turn: [`Service::invoke`].
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::wire::invoke::ToolTurn;
    /// let turn = ToolTurn::new("clean up /tmp", "Bash")
    ///     .session("48268312-0000-7000-8000-000000000000")
    ///     .args(serde_json::json!({"command": "rm -rf /tmp/cache"}));
    /// let opened = client.service().invoke_tool(&turn).await?;
    /// println!("gates to answer: {:?}", opened.interaction_ids);
    /// # Ok(()) }
    /// ```
    pub async fn invoke_tool(&self, turn: &ToolTurn) -> Result<InvokeResponse> {
        self.invoke(&turn.to_request()).await
    }

    /// A session's turns, oldest first (`GET /api/sessions/{session_id}/turns`), each
    /// with the model it ran under and whether it was a resume.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// for turn in client.service().turns("48268312-0000-7000-8000-000000000000").await?.turns {
    ///     println!("{} {:?} resumed={}", turn.turn_id, turn.model, turn.resumed);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn turns(&self, session_id: &str) -> Result<TurnsResponse> {
        let call = Call::new(Operation::ListTurns, &[session_id]);
        self.client.call_json(&call).await
    }

    /// Commit a workflow revision (`POST /api/workflows/revisions/commit`): creates the
    /// workflow and variant when missing and moves the variant's HEAD to the new revision.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::invoke::{CommitRevisionRequest, SlugRef};
    /// let mut parameters = serde_json::Map::new();
    /// parameters.insert("agent".into(), serde_json::json!({"llm": {"model": "openai/gpt-5"}}));
    /// let committed = client.service().commit_revision(&CommitRevisionRequest {
    ///     workflow: SlugRef { slug: "support-agent".into() },
    ///     variant: SlugRef { slug: "support-agent.default".into() },
    ///     parameters,
    /// }).await?;
    /// println!("HEAD is now v{}", committed.revision.version);
    /// # Ok(()) }
    /// ```
    pub async fn commit_revision(
        &self,
        request: &CommitRevisionRequest,
    ) -> Result<CommitRevisionResponse> {
        let call = Call::new(Operation::CommitRevision, &[]).json_body(request)?;
        self.client.call_json(&call).await
    }

    /// The webhook outbox of the project, newest first (`GET /api/webhooks/deliveries`):
    /// each event for each endpoint, with its state (`pending`, `delivered`, `failed`),
    /// attempts, next attempt and last error. `state` keeps only one state; `limit`
    /// (default 100, at most 1000) bounds the list.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// for d in client.service().webhook_deliveries(Some("pending"), None).await?.deliveries {
    ///     println!("{} {} attempts={} next={:?}", d.event_id, d.event_type, d.attempts, d.next_attempt_at);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn webhook_deliveries(
        &self,
        state: Option<&str>,
        limit: Option<u32>,
    ) -> Result<WebhookDeliveriesResponse> {
        let mut call = Call::new(Operation::ListWebhookDeliveries, &[]);
        if let Some(state) = state {
            call.query.push(("state", state.to_string()));
        }
        if let Some(limit) = limit {
            call.query.push(("limit", limit.to_string()));
        }
        self.client.call_json(&call).await
    }
}
