//! Session interactions (CONTRACT.md A4, A5, A7, C1, C4): query, get, respond with
//! safe retries, approve-all in parallel, the runner's create/transition/cancel-stale,
//! and the watch stream.

use futures::StreamExt;
use gatehouse_wire::batch::{
    BatchAnswer, BatchError, BatchOutcome, BatchRespondRequest, BatchRespondResponse, BatchResult,
    MAX_BATCH_ANSWERS,
};
use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::interaction::{
    CancelStaleRequest, CancelStaleResponse, CreateInteractionRequest, InteractionQuery,
    InteractionQueryRequest, InteractionResponse, InteractionStatus, InteractionsResponse,
    RespondRequest, SessionInteraction, TransitionRequest, Windowing,
};
use gatehouse_wire::sessions::respond::MAX_ANSWERS;
use gatehouse_wire::sessions::{
    SessionCommandRef, SessionExecutionState, SessionInteractionAnswerRequest,
    SessionInteractionContinuationExecution, SessionInteractionContinuationResponse,
    SessionInteractionRespondRequest,
};
use gatehouse_wire::JsonObject;
use std::collections::HashSet;
use tracing::Instrument;

use crate::client::Client;
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::retry::{with_retries, Failed};
use crate::transport::{Call, Replay};
use crate::upstream::AgentaContract;
use crate::watch::WatchStream;

/// Page size [`Interactions::query_all`] asks for when walking pages.
///
/// ```
/// assert_eq!(gatehouse_client::DEFAULT_PAGE_SIZE, 100);
/// ```
pub const DEFAULT_PAGE_SIZE: u32 = 100;
/// Default number of responds [`Interactions::approve_all`] keeps in flight.
///
/// ```
/// assert_eq!(gatehouse_client::DEFAULT_APPROVE_ALL_CONCURRENCY, 8);
/// ```
pub const DEFAULT_APPROVE_ALL_CONCURRENCY: usize = 8;
/// Most pages [`Interactions::query_all`] reads before it stops as a safeguard.
const MAX_PAGES: usize = 10_000;

/// An answer to a gate: the `answer` object of a respond body.
///
/// For a `user_approval` gate use [`Answer::approve`] or [`Answer::deny`]; for other
/// kinds, [`Answer::custom`] takes any object.
///
/// ```
/// use gatehouse_client::Answer;
/// let yes = Answer::approve().tool_call_id("toolu_01");
/// assert_eq!(yes.approved(), Some(true));
/// let no = Answer::deny("not on prod, please");
/// assert_eq!(serde_json::Value::Object(no.to_object()), serde_json::json!({"approved": false, "message": "not on prod, please"}));
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    object: JsonObject,
}

impl Answer {
    /// `{"approved": true}`.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::Answer::approve().approved(), Some(true));
    /// ```
    pub fn approve() -> Self {
        Self::approval(true)
    }

    /// `{"approved": false, "message": message}`; a blank message is left out.
    ///
    /// ```
    /// let a = gatehouse_client::Answer::deny("");
    /// assert!(!a.to_object().contains_key("message"));
    /// ```
    pub fn deny(message: impl Into<String>) -> Self {
        let message = message.into();
        let answer = Self::approval(false);
        if message.trim().is_empty() {
            answer
        } else {
            answer.message(message)
        }
    }

    /// `{"approved": approved}`.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::Answer::approval(false).approved(), Some(false));
    /// ```
    pub fn approval(approved: bool) -> Self {
        let mut object = JsonObject::new();
        object.insert("approved".to_string(), serde_json::Value::Bool(approved));
        Self { object }
    }

    /// Any answer object (for `user_input` and `client_tool` gates).
    ///
    /// ```
    /// let mut obj = serde_json::Map::new();
    /// obj.insert("text".into(), "blue".into());
    /// let a = gatehouse_client::Answer::custom(obj);
    /// assert_eq!(a.approved(), None);
    /// ```
    pub fn custom(object: JsonObject) -> Self {
        Self { object }
    }

    /// Name the tool call being answered (overrides the row's, A6 precedence).
    ///
    /// ```
    /// let a = gatehouse_client::Answer::approve().tool_call_id("toolu_01");
    /// assert_eq!(a.to_object()["tool_call_id"], "toolu_01");
    /// ```
    pub fn tool_call_id(mut self, id: impl Into<String>) -> Self {
        self.object.insert(
            "tool_call_id".to_string(),
            serde_json::Value::String(id.into()),
        );
        self
    }

    /// A message for the agent; a non-blank one becomes a trailing user message.
    ///
    /// ```
    /// let a = gatehouse_client::Answer::approve().message("go ahead");
    /// assert_eq!(a.to_object()["message"], "go ahead");
    /// ```
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.object.insert(
            "message".to_string(),
            serde_json::Value::String(message.into()),
        );
        self
    }

    /// The verdict of an approval answer (`None` for a custom answer without `approved`).
    ///
    /// ```
    /// assert_eq!(gatehouse_client::Answer::deny("no").approved(), Some(false));
    /// ```
    pub fn approved(&self) -> Option<bool> {
        self.object.get("approved").and_then(|v| v.as_bool())
    }

    /// The answer object as sent.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::Answer::approve().to_object().len(), 1);
    /// ```
    pub fn to_object(&self) -> JsonObject {
        self.object.clone()
    }

    /// The same answer without a `tool_call_id` (approve-all answers each gate for its own call).
    fn without_tool_call_id(&self) -> Self {
        let mut object = self.object.clone();
        object.remove("tool_call_id");
        Self { object }
    }

    /// How the answer `row` records (if any) compares with this one: its
    /// `data.resolution.answer` holds every key of this answer with the same value
    /// (`Same`) or not (`Different`); without one, a `verdict` of `approved`/`denied`
    /// (a runner's resolution) that contradicts this answer's `approved` is `Different`,
    /// and one that agrees shows no more than `Unrecorded` (a verdict is not the answer).
    /// A row that is neither responded nor resolved holds no answer.
    fn compare_with(&self, row: &SessionInteraction) -> RecordedAnswer {
        if !matches!(
            row.status,
            Some(InteractionStatus::Responded) | Some(InteractionStatus::Resolved)
        ) {
            return RecordedAnswer::NotAnswered;
        }
        let Some(resolution) = row.data.as_ref().and_then(|d| d.resolution.as_ref()) else {
            return RecordedAnswer::Unrecorded;
        };
        if let Some(stored) = resolution.get("answer").and_then(|a| a.as_object()) {
            let same = self
                .object
                .iter()
                .all(|(key, value)| stored.get(key) == Some(value));
            return if same {
                RecordedAnswer::Same
            } else {
                RecordedAnswer::Different
            };
        }
        let verdict = match resolution.get("verdict").and_then(|v| v.as_str()) {
            Some("approved") => Some(true),
            Some("denied") => Some(false),
            _ => None,
        };
        match (verdict, self.approved()) {
            (Some(verdict), Some(ours)) if verdict != ours => RecordedAnswer::Different,
            _ => RecordedAnswer::Unrecorded,
        }
    }
}

/// What an answered row records, compared with the answer a client sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RecordedAnswer {
    /// The row is not answered (pending, cancelled, or a status this version does not know).
    NotAnswered,
    /// Answered, and no answer is recorded that could be compared (Agenta leaves
    /// `data.resolution` null on respond: the answer goes to a queue).
    Unrecorded,
    /// Answered with an answer equal to ours.
    Same,
    /// Answered with an answer that differs from ours: someone else's.
    Different,
}

/// Whose answer a row read back after an ambiguous respond shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Settled {
    /// Ours: the call succeeds with the row.
    Ours,
    /// Someone else's: [`Error::AlreadyAnswered`].
    SomeoneElses,
    /// Answered, by whom the row cannot show ([`Error::AnswerOwnerUnknown`], with why).
    OwnerUnknown(&'static str),
    /// Not answered: the error of the respond stands.
    NotAnswered,
}

/// What `recorded` shows. `honours_idempotency_key`: the host replays a re-send under
/// the same key and records the answer it took (Gatehouse's server), so an equal
/// recorded answer is ours; on a host that ignores the key (Agenta) an equal answer
/// may be another device's, sent as well.
fn settle(recorded: RecordedAnswer, honours_idempotency_key: bool) -> Settled {
    match recorded {
        RecordedAnswer::Same if honours_idempotency_key => Settled::Ours,
        RecordedAnswer::Same => Settled::OwnerUnknown(
            "the row records an answer equal to ours, which another device may have sent too; \
             this host ignores Idempotency-Key",
        ),
        RecordedAnswer::Unrecorded => {
            Settled::OwnerUnknown("the row is answered and records no answer to compare with ours")
        }
        RecordedAnswer::Different => Settled::SomeoneElses,
        RecordedAnswer::NotAnswered => Settled::NotAnswered,
    }
}

/// The outcome of [`Interactions::approve_all`]: one entry per distinct target, in the
/// order given. One failing target never hides another's result.
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client, ids: Vec<String>) {
/// let report = client.interactions().approve_all(&ids, &gatehouse_client::Answer::approve()).await;
/// if report.all_already_answered() {
///     println!("someone else got there first; back to idle");
/// }
/// for (id, err) in &report.failed {
///     eprintln!("{id}: {err}");
/// }
/// # }
/// ```
#[derive(Debug, Clone, Default)]
pub struct ApproveAllReport {
    /// Rows this call answered (after the flip).
    pub answered: Vec<SessionInteraction>,
    /// Ids that were no longer pending (409): settled elsewhere, not a failure.
    pub already_answered: Vec<String>,
    /// Ids whose respond failed otherwise, each with its error.
    pub failed: Vec<(String, Error)>,
}

impl ApproveAllReport {
    /// True when there was at least one target and every target was already answered:
    /// the screen can go back to idle at once (A7).
    ///
    /// ```
    /// let mut report = gatehouse_client::ApproveAllReport::default();
    /// assert!(!report.all_already_answered());
    /// report.already_answered.push("a".into());
    /// assert!(report.all_already_answered());
    /// ```
    pub fn all_already_answered(&self) -> bool {
        !self.already_answered.is_empty() && self.answered.is_empty() && self.failed.is_empty()
    }

    /// Number of targets reported.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::ApproveAllReport::default().total(), 0);
    /// ```
    pub fn total(&self) -> usize {
        self.answered.len() + self.already_answered.len() + self.failed.len()
    }
}

/// One gate's result in a [`TurnApproveReport`].
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct GateOutcome {
    /// The gate.
    pub id: String,
    /// Its turn, as its row said.
    pub turn_id: Option<String>,
    /// What the request that answered it did, or why it failed
    /// ([`Error::AlreadyAnswered`]: settled elsewhere).
    pub result: Result<RespondOutcome>,
}

/// The outcome of [`Interactions::approve_gates`]: one entry per distinct gate.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct TurnApproveReport {
    /// Each gate, grouped by the request that answered it.
    pub gates: Vec<GateOutcome>,
}

impl TurnApproveReport {
    /// The gates whose answer was recorded (by this call, or the same verdict before).
    ///
    /// ```
    /// assert_eq!(gatehouse_client::TurnApproveReport::default().answered().count(), 0);
    /// ```
    pub fn answered(&self) -> impl Iterator<Item = &GateOutcome> {
        self.gates.iter().filter(|gate| gate.result.is_ok())
    }

    /// The gates that failed, each with its error.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::TurnApproveReport::default().failed().count(), 0);
    /// ```
    pub fn failed(&self) -> impl Iterator<Item = (&str, &Error)> {
        self.gates.iter().filter_map(|gate| {
            gate.result
                .as_ref()
                .err()
                .map(|err| (gate.id.as_str(), err))
        })
    }
}

/// How to send a respond ([`Interactions::respond_outcome`]).
///
/// ```
/// let options = gatehouse_client::RespondOptions::new()
///     .idempotency_key("respond-7f1c2b")
///     .expected_execution_id("7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6")
///     .session_id("sess_demo_01");
/// assert_eq!(options.idempotency_key.as_deref(), Some("respond-7f1c2b"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct RespondOptions {
    /// The `Idempotency-Key` (default: a fresh UUID). Reuse it to retry the same answer,
    /// e.g. after an app restart; every re-send of one call uses the same key.
    pub idempotency_key: Option<String>,
    /// The execution (turn) the person saw the gate in: the row's `turn_id`. A durable
    /// host refuses the answer with [`Error::StaleExecution`] when the gate belongs to
    /// another one, so an answer never lands on a turn the person did not see.
    pub expected_execution_id: Option<String>,
    /// The gate's session: lets the client read the host's contract from the session's
    /// snapshot when it is not known yet (Agenta hosts have no discovery route).
    pub session_id: Option<String>,
    /// The gate digest of the row as the person saw it (CONTRACT.md C8;
    /// [`SessionInteraction::computed_digest`]): a host that checks it (capability
    /// `answer_digest`) records the answer only while the gate is still that one, else
    /// [`Error::StaleGate`] and nothing recorded. Sent only to such a host: on any
    /// other (Agenta, an older Gatehouse) the answer is not bound to what was shown.
    pub digest: Option<String>,
}

impl RespondOptions {
    /// No key (a fresh one per call), no expectation, no session.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::RespondOptions::new(), Default::default());
    /// ```
    pub fn new() -> Self {
        Self::default()
    }

    /// The options a gate's row gives: its turn expected, its session, and the digest
    /// of the row as read (computed here from its id, revision and request).
    ///
    /// ```
    /// let row: gatehouse_wire::interaction::SessionInteraction = serde_json::from_value(serde_json::json!({
    ///     "id": "i1", "session_id": "s1", "turn_id": "t1", "token": "tok", "kind": "user_approval", "status": "pending"
    /// })).unwrap();
    /// let options = gatehouse_client::RespondOptions::for_gate(&row);
    /// assert_eq!(options.expected_execution_id.as_deref(), Some("t1"));
    /// assert_eq!(options.session_id.as_deref(), Some("s1"));
    /// ```
    pub fn for_gate(gate: &SessionInteraction) -> Self {
        Self {
            idempotency_key: None,
            expected_execution_id: gate.turn_id.clone(),
            session_id: Some(gate.session_id.clone()),
            digest: gate.computed_digest(),
        }
    }

    /// Bind the answer to the gate whose digest is `digest` (C8).
    ///
    /// ```
    /// let o = gatehouse_client::RespondOptions::new().digest("sha256:00");
    /// assert_eq!(o.digest.as_deref(), Some("sha256:00"));
    /// ```
    pub fn digest(mut self, digest: impl Into<String>) -> Self {
        self.digest = Some(digest.into());
        self
    }

    /// Send under `key`.
    ///
    /// ```
    /// let o = gatehouse_client::RespondOptions::new().idempotency_key("k");
    /// assert_eq!(o.idempotency_key.as_deref(), Some("k"));
    /// ```
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.idempotency_key = Some(key.into());
        self
    }

    /// Expect the gate in `execution_id` (its row's `turn_id`).
    ///
    /// ```
    /// let o = gatehouse_client::RespondOptions::new().expected_execution_id("t1");
    /// assert_eq!(o.expected_execution_id.as_deref(), Some("t1"));
    /// ```
    pub fn expected_execution_id(mut self, execution_id: impl Into<String>) -> Self {
        self.expected_execution_id = Some(execution_id.into());
        self
    }

    /// The gate's session.
    ///
    /// ```
    /// let o = gatehouse_client::RespondOptions::new().session_id("s1");
    /// assert_eq!(o.session_id.as_deref(), Some("s1"));
    /// ```
    pub fn session_id(mut self, session_id: impl Into<String>) -> Self {
        self.session_id = Some(session_id.into());
        self
    }
}

/// What an answer did ([`Interactions::respond_outcome`]). On a durable host the 202
/// says it; on a legacy host the answer was recorded and nothing more is known.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RespondOutcome {
    /// The answer was recorded and continues the turn: `command` (`continue_interaction`)
    /// drives `execution`, a new execution (`pending_delivery`, `running`; `recoverable`
    /// when its delivery failed after the commit: [`Sessions::resume_continuation`](crate::Sessions::resume_continuation)
    /// delivers it again).
    Continued {
        /// The answered row.
        interaction: SessionInteraction,
        /// The continuation command, in its state when answered.
        command: SessionCommandRef,
        /// The execution that continues the turn.
        execution: SessionInteractionContinuationExecution,
    },
    /// The same verdict was already recorded (another device, another key): nothing new
    /// was created. `execution` is the source turn (`terminal` once continued).
    AlreadyRecorded {
        /// The row as it stands.
        interaction: SessionInteraction,
        /// The source turn.
        execution: SessionInteractionContinuationExecution,
    },
    /// Recorded; the turn waits for its other gates (`awaiting_interactions`): the
    /// answer that completes the set continues it.
    AwaitingOtherGates {
        /// The answered row.
        interaction: SessionInteraction,
        /// The source turn.
        execution: SessionInteractionContinuationExecution,
    },
    /// A legacy host recorded the answer (200 `{count, interaction}`); it says nothing
    /// of the continuation.
    Answered {
        /// The row after the answer.
        interaction: SessionInteraction,
    },
}

impl RespondOutcome {
    /// The answered row.
    ///
    /// ```
    /// let row: gatehouse_wire::interaction::SessionInteraction = serde_json::from_value(serde_json::json!({
    ///     "id": "i1", "session_id": "s1", "token": "tok", "kind": "user_approval", "status": "responded"
    /// })).unwrap();
    /// let outcome = gatehouse_client::RespondOutcome::Answered { interaction: row };
    /// assert_eq!(outcome.interaction().id.as_deref(), Some("i1"));
    /// ```
    pub fn interaction(&self) -> &SessionInteraction {
        match self {
            Self::Continued { interaction, .. }
            | Self::AlreadyRecorded { interaction, .. }
            | Self::AwaitingOtherGates { interaction, .. }
            | Self::Answered { interaction } => interaction,
        }
    }

    /// The row, owned.
    fn into_interaction(self) -> SessionInteraction {
        match self {
            Self::Continued { interaction, .. }
            | Self::AlreadyRecorded { interaction, .. }
            | Self::AwaitingOtherGates { interaction, .. }
            | Self::Answered { interaction } => interaction,
        }
    }

    /// Read a durable 202: a command means a continuation; none, the turn waiting for
    /// its other gates, or (any other state) the same verdict recorded before.
    fn of_continuation(response: SessionInteractionContinuationResponse) -> Self {
        let SessionInteractionContinuationResponse {
            interaction,
            command,
            execution,
            ..
        } = response;
        match command {
            Some(command) => Self::Continued {
                interaction,
                command,
                execution,
            },
            None if execution.state == SessionExecutionState::AwaitingInteractions => {
                Self::AwaitingOtherGates {
                    interaction,
                    execution,
                }
            }
            None => Self::AlreadyRecorded {
                interaction,
                execution,
            },
        }
    }
}

impl Client {
    /// The session-interaction endpoints (A5): query, get, respond, approve-all, watch.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let row = client.interactions().get("019fac94-0000-7000-8000-000000000001").await?;
    /// # let _ = row; Ok(()) }
    /// ```
    pub fn interactions(&self) -> Interactions {
        Interactions::new(self.clone())
    }
}

/// The interaction endpoints. Obtain with [`Client::interactions`]; cheap to create.
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
/// use gatehouse_client::Answer;
/// let interactions = client.interactions();
/// for gate in interactions.list_pending(Some("48268312-0000-7000-8000-000000000000")).await? {
///     if let Some(id) = gate.id.as_deref() {
///         interactions.respond(id, &Answer::approve()).await?;
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Interactions {
    client: Client,
}

/// The pages of a query, read one at a time ([`Interactions::pages`]): the cursor is the
/// last row's id (`windowing.next`). Paging stops, with an error, on a page a server
/// that pages honestly never sends: more rows than the page size asked for, a full page
/// whose last row has no id, or a page already seen (its cursor repeats); and after
/// 10,000 pages, quietly. Only the cursors seen are kept, not the rows.
#[derive(Debug)]
pub struct InteractionPages {
    interactions: Interactions,
    query: InteractionQuery,
    windowing: Windowing,
    limit: u32,
    seen_cursors: HashSet<String>,
    pages_read: usize,
    done: bool,
}

impl InteractionPages {
    /// The next page, or `None` after the last one (a page shorter than the page size).
    pub async fn next_page(&mut self) -> Result<Option<Vec<SessionInteraction>>> {
        if self.done || self.pages_read >= MAX_PAGES {
            return Ok(None);
        }
        self.pages_read += 1;
        let page = match self
            .interactions
            .query(&self.query, Some(&self.windowing))
            .await
        {
            Ok(page) => page.interactions,
            Err(err) => {
                self.done = true;
                return Err(err);
            }
        };
        let limit = self.limit as usize;
        if page.len() > limit {
            self.done = true;
            return Err(paging_error(
                "interactions",
                format!(
                    "the server returned {} rows for a page of at most {limit}; paging stopped",
                    page.len()
                ),
            ));
        }
        if page.len() < limit {
            self.done = true;
            return Ok(Some(page));
        }
        let Some(cursor) = page.last().and_then(|row| row.id.clone()) else {
            self.done = true;
            return Err(paging_error(
                "interactions[-1].id",
                "a full page ended with a row without id; cannot page on".to_string(),
            ));
        };
        if !self.seen_cursors.insert(cursor.clone()) {
            self.done = true;
            return Err(paging_error(
                "interactions",
                "the server returned the same page twice; paging stopped".to_string(),
            ));
        }
        self.windowing.next = Some(cursor);
        Ok(Some(page))
    }
}

/// A page no honest server sends: a decode error of the query, naming where.
fn paging_error(path: &str, reason: String) -> Error {
    Error::Decode {
        operation: Operation::QueryInteractions,
        status: 200,
        path: path.to_string(),
        reason,
        snippet: String::new(),
    }
}

impl Interactions {
    pub(crate) fn new(client: Client) -> Self {
        Self { client }
    }

    /// One page of rows matching `query` (`POST /api/sessions/interactions/query`).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::interaction::{InteractionQuery, InteractionStatus, Windowing};
    /// let query = InteractionQuery { status: Some(InteractionStatus::Pending), ..Default::default() };
    /// let page = client.interactions().query(&query, Some(&Windowing { limit: Some(20), ..Default::default() })).await?;
    /// println!("{} rows", page.count);
    /// # Ok(()) }
    /// ```
    pub async fn query(
        &self,
        query: &InteractionQuery,
        windowing: Option<&Windowing>,
    ) -> Result<InteractionsResponse> {
        let body = InteractionQueryRequest {
            query: Some(query.clone()),
            windowing: windowing.cloned(),
        };
        let call = Call::new(Operation::QueryInteractions, &[]).json_body(&body)?;
        let page: InteractionsResponse = self.client.call_json(&call).await?;
        self.check_project(Operation::QueryInteractions, &page.interactions)?;
        Ok(page)
    }

    /// Every row matching `query`, walking the pages (cursor `windowing.next` = the
    /// last row's id) with [`DEFAULT_PAGE_SIZE`] rows per page.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::interaction::InteractionQuery;
    /// let all = client.interactions().query_all(&InteractionQuery::default()).await?;
    /// # let _ = all; Ok(()) }
    /// ```
    pub async fn query_all(&self, query: &InteractionQuery) -> Result<Vec<SessionInteraction>> {
        self.query_all_with(
            query,
            Windowing {
                limit: Some(DEFAULT_PAGE_SIZE),
                ..Windowing::default()
            },
        )
        .await
    }

    /// Like [`query_all`](Self::query_all) with a starting window (its `limit` is the
    /// page size, default [`DEFAULT_PAGE_SIZE`]; its `order`, `oldest` and `newest` are
    /// kept on every page).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::interaction::{InteractionQuery, Order, Windowing};
    /// let window = Windowing { limit: Some(10), order: Some(Order::Descending), ..Default::default() };
    /// let all = client.interactions().query_all_with(&InteractionQuery::default(), window).await?;
    /// # let _ = all; Ok(()) }
    /// ```
    pub async fn query_all_with(
        &self,
        query: &InteractionQuery,
        windowing: Windowing,
    ) -> Result<Vec<SessionInteraction>> {
        let mut pages = self.pages(query, windowing);
        let mut rows: Vec<SessionInteraction> = Vec::new();
        while let Some(page) = pages.next_page().await? {
            rows.extend(page);
        }
        Ok(rows)
    }

    /// The pages of rows matching `query`, one at a time, for a caller that hands each
    /// page on (prints it, answers it) instead of keeping every row: see
    /// [`InteractionPages`]. `windowing` is read as in [`query_all_with`](Self::query_all_with).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::interaction::{InteractionQuery, Windowing};
    /// let mut pages = client.interactions().pages(&InteractionQuery::default(), Windowing::default());
    /// while let Some(page) = pages.next_page().await? {
    ///     println!("{} rows", page.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn pages(&self, query: &InteractionQuery, mut windowing: Windowing) -> InteractionPages {
        let limit = windowing
            .limit
            .filter(|l| *l > 0)
            .unwrap_or(DEFAULT_PAGE_SIZE);
        windowing.limit = Some(limit);
        InteractionPages {
            interactions: self.clone(),
            query: query.clone(),
            windowing,
            limit,
            seen_cursors: HashSet::new(),
            pages_read: 0,
            done: false,
        }
    }

    /// Every pending gate, of one session or of the whole project, all pages.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let pending = client.interactions().list_pending(None).await?;
    /// # let _ = pending; Ok(()) }
    /// ```
    pub async fn list_pending(&self, session_id: Option<&str>) -> Result<Vec<SessionInteraction>> {
        let query = InteractionQuery {
            session_id: session_id.map(str::to_string),
            status: Some(InteractionStatus::Pending),
            ..InteractionQuery::default()
        };
        self.query_all(&query).await
    }

    /// One row by id (`GET /api/sessions/interactions/{id}`); [`Error::NotFound`] when
    /// there is none.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let row = client.interactions().get("019fac94-0000-7000-8000-000000000001").await?;
    /// println!("{:?}", row.status);
    /// # Ok(()) }
    /// ```
    pub async fn get(&self, id: &str) -> Result<SessionInteraction> {
        let call = Call::new(Operation::GetInteraction, &[id]);
        let response: InteractionResponse = self.client.call_json(&call).await?;
        let row = row_of(Operation::GetInteraction, response)?;
        self.check_project(Operation::GetInteraction, std::slice::from_ref(&row))?;
        Ok(row)
    }

    /// [`Error::ProjectMismatch`] when one of `rows` names another project than the one
    /// this client asks for: Agenta, under an API key, answers for the key's own project
    /// whatever `?project_id=` says, and such rows must never pass for the asked
    /// project's. A row without `project_id`, or a client without a project, passes.
    fn check_project(&self, operation: Operation, rows: &[SessionInteraction]) -> Result<()> {
        let Some(asked) = self.client.project_id() else {
            return Ok(());
        };
        let foreign = rows
            .iter()
            .filter_map(|row| row.project_id.as_deref())
            .find(|answered| !same_project(asked, answered));
        match foreign {
            None => Ok(()),
            Some(answered) => Err(Error::ProjectMismatch {
                operation,
                asked: self.client.transport().scrub(asked),
                answered: self.client.transport().scrub(answered),
            }),
        }
    }

    /// Answer a gate (`POST /api/sessions/interactions/{id}/respond`) with a fresh
    /// `Idempotency-Key`. See [`respond_with_idempotency_key`](Self::respond_with_idempotency_key).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::{Answer, Error};
    /// match client.interactions().respond("019fac94-0000-7000-8000-000000000001", &Answer::deny("not now")).await {
    ///     Ok(row) => println!("now {:?}", row.status),
    ///     Err(Error::AlreadyAnswered { .. }) => println!("already settled"),
    ///     Err(other) => return Err(other),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn respond(&self, id: &str, answer: &Answer) -> Result<SessionInteraction> {
        let key = uuid::Uuid::new_v4().to_string();
        self.respond_with_idempotency_key(id, answer, &key).await
    }

    /// Answer a gate under a caller-chosen `Idempotency-Key` (reuse the same key when
    /// retrying the same answer, e.g. after an app restart).
    ///
    /// On a host known to speak Agenta's durable contract (pinned, or learned from its
    /// capabilities) this sends the durable respond under the key and returns its row;
    /// [`respond_outcome`](Self::respond_outcome) also says whether the turn continues.
    /// What follows is the legacy respond.
    ///
    /// Never blindly replayed: only after a failure that leaves the outcome unknown
    /// (transport error, timeout, 429, 5xx) is the request re-sent, with the same key,
    /// under the client's retry policy; a server that honours the key answers the
    /// re-send with the same 200. If a re-send gets 409, or every re-send failed, the
    /// row is read back, and it decides:
    /// - it records this answer, on a host that honours the key (Gatehouse's server):
    ///   the call succeeds with that row;
    /// - it records an answer that differs from this one: [`Error::AlreadyAnswered`];
    /// - it is answered but cannot show whose answer landed (no answer recorded, as
    ///   Agenta leaves it; or one equal to this one on a host that ignores the key,
    ///   which another device may have sent): [`Error::AnswerOwnerUnknown`];
    /// - it is not answered: the respond's own error.
    ///
    /// So a caller never sees its own landed answer as [`Error::AlreadyAnswered`].
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// let key = "5b7f0d0e-4d0c-4a9b-9b8f-0c1d2e3f4a5b";
    /// client.interactions().respond_with_idempotency_key("019fac94-0000-7000-8000-000000000001", &gatehouse_client::Answer::approve(), key).await?;
    /// # Ok(()) }
    /// ```
    pub async fn respond_with_idempotency_key(
        &self,
        id: &str,
        answer: &Answer,
        idempotency_key: &str,
    ) -> Result<SessionInteraction> {
        // The host's contract from its capabilities (asked once, then cached); a host
        // that cannot say is answered as it always was, with the legacy respond.
        let contract = self
            .client
            .sessions()
            .contract(None)
            .await
            .unwrap_or(AgentaContract::Legacy);
        if contract == AgentaContract::Durable {
            let body = SessionInteractionRespondRequest::single(answer.to_object());
            return self
                .respond_durable(id, &body, idempotency_key)
                .await
                .map(RespondOutcome::into_interaction);
        }
        let span =
            tracing::info_span!("gatehouse_respond", operation = %Operation::RespondInteraction);
        self.respond_inner(id, answer, idempotency_key, None)
            .instrument(span)
            .await
    }

    /// The digest to send: `digest` when the host checks one (capability
    /// `answer_digest`), else none (a host without it would ignore the field).
    async fn digest_to_send(&self, digest: Option<&str>) -> Option<String> {
        let digest = digest?;
        let checks = self
            .client
            .capabilities()
            .require(Capability::AnswerDigest)
            .await
            .is_ok();
        if !checks {
            tracing::debug!("the host does not check answer digests; the answer is not bound");
        }
        checks.then(|| digest.to_string())
    }

    /// Answer a gate and say what the answer did: the method to use on hosts that may
    /// speak Agenta's durable contract (it works on every host).
    ///
    /// The contract comes from the host's capabilities ([`Sessions::contract`](crate::Sessions::contract),
    /// with `options.session_id`; pinned by
    /// [`ClientBuilder::agenta_contract`](crate::ClientBuilder::agenta_contract)). On a
    /// durable host the respond always carries an `Idempotency-Key` (`options`' or a
    /// fresh one; every re-send after an unknown outcome uses the same), and
    /// `options.expected_execution_id` when given; its 202 becomes
    /// [`RespondOutcome::Continued`], [`RespondOutcome::AlreadyRecorded`] or
    /// [`RespondOutcome::AwaitingOtherGates`]. Its refusals: [`Error::AlreadyAnswered`]
    /// (the row's status: answered differently, cancelled), [`Error::TurnNotContinuable`]
    /// (the turn stops or was settled), [`Error::StaleExecution`] (the gate is in another
    /// turn than expected: the current one said), [`Error::IdempotencyKeyReused`] (never
    /// retried), [`Error::Validation`] (field and reason). On a legacy host it is
    /// [`respond_with_idempotency_key`](Self::respond_with_idempotency_key) and answers
    /// [`RespondOutcome::Answered`].
    ///
    /// [`respond`](Self::respond) keeps its signature (it returns the row, on both kinds
    /// of host once the contract is known); use this one, or [`respond_to`](Self::respond_to)
    /// with the gate's row, to learn whether the turn continues.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::{Answer, RespondOptions, RespondOutcome};
    /// let options = RespondOptions::new().session_id("sess_demo_01").expected_execution_id("7d3f2c1e-5b6a-4c8d-9e0f-a1b2c3d4e5f6");
    /// match client.interactions().respond_outcome("0196a001-0000-7000-8000-000000000001", &Answer::approve(), &options).await? {
    ///     RespondOutcome::Continued { execution, .. } => println!("continues as {}", execution.id),
    ///     RespondOutcome::AwaitingOtherGates { .. } => println!("answer the turn's other gates"),
    ///     other => println!("{other:?}"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn respond_outcome(
        &self,
        id: &str,
        answer: &Answer,
        options: &RespondOptions,
    ) -> Result<RespondOutcome> {
        let key = options
            .idempotency_key
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let contract = self
            .client
            .sessions()
            .contract(options.session_id.as_deref())
            .await?;
        let digest = self.digest_to_send(options.digest.as_deref()).await;
        if contract == AgentaContract::Durable {
            let mut body = SessionInteractionRespondRequest::single(answer.to_object());
            body.expected_execution_id = options.expected_execution_id.clone();
            body.digest = digest;
            return self.respond_durable(id, &body, &key).await;
        }
        let span =
            tracing::info_span!("gatehouse_respond", operation = %Operation::RespondInteraction);
        self.respond_inner(id, answer, &key, digest)
            .instrument(span)
            .await
            .map(|interaction| RespondOutcome::Answered { interaction })
    }

    /// [`respond_outcome`](Self::respond_outcome) for a gate read from the host: its id,
    /// its turn expected (the answer never lands on a turn the person did not see), its
    /// session for the contract; a fresh key.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::Answer;
    /// for gate in client.interactions().list_pending(Some("sess_demo_01")).await? {
    ///     let outcome = client.interactions().respond_to(&gate, &Answer::approve()).await?;
    ///     println!("{outcome:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn respond_to(
        &self,
        gate: &SessionInteraction,
        answer: &Answer,
    ) -> Result<RespondOutcome> {
        let id = gate_id(gate, Operation::RespondInteractionDurable)?;
        self.respond_outcome(id, answer, &RespondOptions::for_gate(gate))
            .await
    }

    /// One durable respond under `key` (re-sent with it when the outcome is unknown).
    async fn respond_durable(
        &self,
        id: &str,
        body: &SessionInteractionRespondRequest,
        key: &str,
    ) -> Result<RespondOutcome> {
        let op = Operation::RespondInteractionDurable;
        let span = tracing::info_span!("gatehouse_respond", operation = %op);
        async {
            let mut call = Call::new(op, &[id]).json_body(body)?;
            call.idempotency_key = Some(key.to_string());
            // Safe to re-send: the same key and body replay the recorded answer.
            call.replay = Replay::Safe;
            let answered = self.client.send(&call).await?;
            let status = answered.status.as_u16();
            match self
                .client
                .transport()
                .json::<SessionInteractionContinuationResponse>(op, answered)
                .await
            {
                Ok(response) => Ok(RespondOutcome::of_continuation(response)),
                // A 2xx: the answer is recorded, whatever its body says.
                Err(Error::Decode {
                    path,
                    reason,
                    snippet,
                    ..
                }) => Err(Error::AcceptedUnreadable {
                    operation: op,
                    status,
                    operation_id: Some(key.to_string()),
                    path,
                    reason,
                    snippet,
                }),
                Err(other) => Err(other),
            }
        }
        .instrument(span)
        .await
    }

    async fn respond_inner(
        &self,
        id: &str,
        answer: &Answer,
        idempotency_key: &str,
        digest: Option<String>,
    ) -> Result<SessionInteraction> {
        let op = Operation::RespondInteraction;
        let body = RespondRequest {
            answer: Some(answer.to_object()),
            digest,
        };
        let mut call = Call::new(op, &[id]).json_body(&body)?;
        call.idempotency_key = Some(idempotency_key.to_string());
        call.replay = Replay::Never; // re-sends are decided here, not blindly
        let policy = self.client.transport().retry_policy();
        // True once an attempt failed in a way that may have landed the answer.
        let mut outcome_unknown = false;
        let result = with_retries(
            policy,
            policy.max_attempts.max(1),
            "respond outcome unknown; re-sending with the same idempotency key",
            |_attempt| async {
                self.client
                    .call_json::<InteractionResponse>(&call)
                    .await
                    .map_err(|error| {
                        let retry_after = match &error {
                            Error::RateLimited { retry_after, .. } => *retry_after,
                            _ => None,
                        };
                        Failed { error, retry_after }
                    })
            },
            |error| outcome_unknown |= !matches!(error, Error::RateLimited { .. }),
        )
        .await;
        match result {
            Ok(response) => row_of(op, response),
            // Every re-send failed, or one met a 409 after an earlier try may have
            // landed: the row tells whether our answer is there.
            Err(err)
                if outcome_unknown
                    && (err.is_retryable()
                        || matches!(
                            err,
                            Error::AlreadyAnswered { .. } | Error::Conflict { .. }
                        )) =>
            {
                self.settle_from_row(id, answer, err).await
            }
            Err(err) => Err(err),
        }
    }

    /// After an ambiguous respond: read the row back and say what it shows. Our answer
    /// there (on a host that honours `Idempotency-Key`) is success; an answer that
    /// differs from ours is [`Error::AlreadyAnswered`]; an answered row that cannot
    /// show whose answer landed is [`Error::AnswerOwnerUnknown`], never "already
    /// answered".
    async fn settle_from_row(
        &self,
        id: &str,
        answer: &Answer,
        err: Error,
    ) -> Result<SessionInteraction> {
        match self.get(id).await {
            Ok(row) => {
                let recorded = answer.compare_with(&row);
                let honours_key = self.client.upstream().honours_idempotency_key();
                let already_answered = || Error::AlreadyAnswered {
                    operation: Operation::RespondInteraction,
                    interaction_status: row.status.clone(),
                    detail: gatehouse_wire::error::messages::INTERACTION_NOT_PENDING.to_string(),
                };
                match settle(recorded, honours_key) {
                    Settled::Ours => {
                        tracing::info!(
                            "respond landed on an earlier attempt; the row holds our answer"
                        );
                        Ok(row)
                    }
                    Settled::SomeoneElses => Err(already_answered()),
                    Settled::OwnerUnknown(detail) => {
                        tracing::info!(
                            recorded = ?recorded,
                            "respond outcome lost; the gate is answered, by whom this host cannot show"
                        );
                        Err(Error::AnswerOwnerUnknown {
                            operation: Operation::RespondInteraction,
                            interaction_id: self.client.transport().scrub(id),
                            detail: detail.to_string(),
                        })
                    }
                    Settled::NotAnswered => match err {
                        // A cancel (or a status this version does not know) settled it.
                        Error::AlreadyAnswered { .. } | Error::Conflict { .. } => {
                            Err(already_answered())
                        }
                        other => Err(other),
                    },
                }
            }
            Err(read_err) => {
                tracing::debug!(
                    error = read_err.kind().as_str(),
                    "re-reading the row after an ambiguous respond failed"
                );
                match err {
                    // A 409 after a try that may have landed is no evidence of someone
                    // else's answer, and the row that could tell is out of reach.
                    Error::AlreadyAnswered { .. } | Error::Conflict { .. } => {
                        Err(Error::AnswerOwnerUnknown {
                            operation: Operation::RespondInteraction,
                            interaction_id: self.client.transport().scrub(id),
                            detail: format!(
                                "a re-send met 409 (no longer pending) and the row could not be \
                                 read back: {read_err}"
                            ),
                        })
                    }
                    other => Err(other),
                }
            }
        }
    }

    /// Answer many gates at once. Against a host that answers batches (capability
    /// `interaction_batch`, Gatehouse's server) the gates go in one request per
    /// [`MAX_BATCH_ANSWERS`](gatehouse_wire::batch::MAX_BATCH_ANSWERS) (one round trip
    /// for a phone's "approve all"); against any other host (Agenta) one respond per
    /// gate, at most [`DEFAULT_APPROVE_ALL_CONCURRENCY`] in flight. Either way each gate
    /// is answered exactly once and reported on its own; every gate carries its own
    /// idempotency key, so a retried batch (or a batch that failed and is answered gate
    /// by gate after it) replays what landed instead of reporting it already answered.
    /// A batch refused for the caller (unauthorized, forbidden, tenant rejected) is not
    /// re-sent gate by gate: every gate is reported failed with that refusal.
    /// Duplicate ids are answered once. A `tool_call_id` in `answer` is not sent: each
    /// gate is answered for its own tool call. On a host known to speak Agenta's durable
    /// contract without Gatehouse's batch, each gate is answered alone with the durable
    /// respond; [`approve_gates`](Self::approve_gates), given the rows, answers them one
    /// request per turn instead.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::Answer;
    /// let ids: Vec<String> = client.interactions().list_pending(None).await?
    ///     .into_iter().filter_map(|row| row.id).collect();
    /// let report = client.interactions().approve_all(&ids, &Answer::approve()).await;
    /// println!("{} answered, {} already answered, {} failed", report.answered.len(), report.already_answered.len(), report.failed.len());
    /// # Ok(()) }
    /// ```
    pub async fn approve_all(&self, ids: &[String], answer: &Answer) -> ApproveAllReport {
        self.approve_all_with(ids, answer, DEFAULT_APPROVE_ALL_CONCURRENCY)
            .await
    }

    /// [`approve_all`](Self::approve_all) with an explicit bound on requests in flight
    /// (single responds, or batches; 0 is taken as 1).
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client, ids: Vec<String>) {
    /// let report = client.interactions().approve_all_with(&ids, &gatehouse_client::Answer::approve(), 2).await;
    /// # let _ = report; }
    /// ```
    pub async fn approve_all_with(
        &self,
        ids: &[String],
        answer: &Answer,
        concurrency: usize,
    ) -> ApproveAllReport {
        let span = tracing::info_span!(
            "gatehouse_approve_all",
            targets = ids.len(),
            concurrency = concurrency.max(1)
        );
        async {
            let (outcomes, batched) = self.legacy_outcomes(ids, answer, concurrency).await;
            let mut report = ApproveAllReport::default();
            for (id, result) in outcomes {
                match result {
                    Ok(row) => report.answered.push(row),
                    Err(Error::AlreadyAnswered { .. }) => report.already_answered.push(id),
                    Err(err) => report.failed.push((id, err)),
                }
            }
            tracing::info!(
                answered = report.answered.len(),
                already_answered = report.already_answered.len(),
                failed = report.failed.len(),
                batched,
                "approve-all done"
            );
            report
        }
        .instrument(span)
        .await
    }

    /// Each distinct gate of `ids` answered with Gatehouse's batch when the host serves
    /// it, else one respond per gate; and whether the batch was used.
    async fn legacy_outcomes(
        &self,
        ids: &[String],
        answer: &Answer,
        concurrency: usize,
    ) -> (Vec<(String, Result<SessionInteraction>)>, bool) {
        let answer = answer.without_tool_call_id();
        let mut seen = HashSet::new();
        // Each gate with the idempotency key every attempt at answering it uses.
        let targets: Vec<(String, String)> = ids
            .iter()
            .filter(|id| seen.insert(id.as_str()))
            .map(|id| (id.clone(), uuid::Uuid::new_v4().to_string()))
            .collect();
        let batched = !targets.is_empty()
            && self
                .client
                .capabilities()
                .require(Capability::InteractionBatch)
                .await
                .is_ok();
        let outcomes = if batched {
            let chunks: Vec<Vec<(String, String)>> = targets
                .chunks(MAX_BATCH_ANSWERS)
                .map(<[(String, String)]>::to_vec)
                .collect();
            futures::stream::iter(chunks.into_iter().map(|chunk| {
                let answer = answer.clone();
                async move { self.answer_batch(&chunk, &answer).await }
            }))
            .buffered(concurrency.max(1))
            .collect::<Vec<_>>()
            .await
            .into_iter()
            .flatten()
            .collect()
        } else {
            self.answer_one_by_one(&targets, &answer, concurrency).await
        };
        (outcomes, batched)
    }

    /// Answer many gates read from the host, each reported on its own. On a host that
    /// speaks Agenta's durable contract the gates are grouped by turn (their session and
    /// `turn_id`): one respond with `answers[]` per turn (at most
    /// [`MAX_ANSWERS`](gatehouse_wire::sessions::respond::MAX_ANSWERS) gates a request; more go in
    /// further requests), expecting that turn, under its own `Idempotency-Key`: the turn
    /// continues once, with every answer. A gate without a turn is answered alone. Each
    /// gate of a request gets that request's outcome (or its error): its
    /// [`RespondOutcome::interaction`] is the request's first gate, the one the host
    /// returns. On any other host it is [`approve_all_with`](Self::approve_all_with)
    /// (Gatehouse's batch, or one respond per gate), each answered gate
    /// [`RespondOutcome::Answered`] with its row. Duplicate ids are answered once; a
    /// `tool_call_id` in `answer` is not sent.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_client::Answer;
    /// let gates = client.interactions().list_pending(Some("sess_demo_01")).await?;
    /// let report = client.interactions().approve_gates(&gates, &Answer::approve()).await;
    /// for gate in &report.gates {
    ///     println!("{}: {:?}", gate.id, gate.result.as_ref().map(|_| "answered"));
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn approve_gates(
        &self,
        gates: &[SessionInteraction],
        answer: &Answer,
    ) -> TurnApproveReport {
        let span = tracing::info_span!("gatehouse_approve_gates", targets = gates.len());
        async {
            let answer = answer.without_tool_call_id();
            let mut seen = HashSet::new();
            let gates: Vec<&SessionInteraction> = gates
                .iter()
                .filter(|gate| gate.id.as_deref().is_some_and(|id| seen.insert(id)))
                .collect();
            let Some(first) = gates.first() else {
                return TurnApproveReport::default();
            };
            let contract = self
                .client
                .sessions()
                .contract(Some(&first.session_id))
                .await;
            let report = match contract {
                Ok(AgentaContract::Durable) => self.answer_by_turn(&gates, &answer).await,
                Ok(_) => {
                    let turns: std::collections::HashMap<String, Option<String>> = gates
                        .iter()
                        .filter_map(|g| Some((g.id.clone()?, g.turn_id.clone())))
                        .collect();
                    let ids: Vec<String> = gates.iter().filter_map(|g| g.id.clone()).collect();
                    let (outcomes, _) = self
                        .legacy_outcomes(&ids, &answer, DEFAULT_APPROVE_ALL_CONCURRENCY)
                        .await;
                    let gates = outcomes
                        .into_iter()
                        .map(|(id, result)| GateOutcome {
                            turn_id: turns.get(&id).cloned().flatten(),
                            id,
                            result: result
                                .map(|interaction| RespondOutcome::Answered { interaction }),
                        })
                        .collect();
                    TurnApproveReport { gates }
                }
                Err(err) => TurnApproveReport {
                    gates: gates
                        .iter()
                        .filter_map(|g| {
                            Some(GateOutcome {
                                id: g.id.clone()?,
                                turn_id: g.turn_id.clone(),
                                result: Err(err.clone()),
                            })
                        })
                        .collect(),
                },
            };
            tracing::info!(gates = report.gates.len(), "approve-gates done");
            report
        }
        .instrument(span)
        .await
    }

    /// The durable answer of `gates`: one `answers[]` respond per turn and chunk, at most
    /// [`DEFAULT_APPROVE_ALL_CONCURRENCY`] in flight; gates without a turn alone.
    async fn answer_by_turn(
        &self,
        gates: &[&SessionInteraction],
        answer: &Answer,
    ) -> TurnApproveReport {
        // Turns in the order their first gate came.
        let mut turns: Vec<(Option<Turn>, Vec<&SessionInteraction>)> = Vec::new();
        for gate in gates {
            let turn = gate
                .turn_id
                .clone()
                .map(|turn| (gate.session_id.clone(), turn));
            match turns.iter_mut().find(|(t, _)| turn.is_some() && *t == turn) {
                Some((_, members)) => members.push(gate),
                None => turns.push((turn, vec![gate])),
            }
        }
        let mut requests: Vec<(Option<String>, Vec<String>)> = Vec::new();
        for (turn, members) in turns {
            let ids: Vec<String> = members.iter().filter_map(|g| g.id.clone()).collect();
            for chunk in ids.chunks(MAX_ANSWERS) {
                requests.push((turn.as_ref().map(|(_, t)| t.clone()), chunk.to_vec()));
            }
        }
        let results: Vec<Vec<GateOutcome>> =
            futures::stream::iter(requests.into_iter().map(|(turn, ids)| async move {
                let key = uuid::Uuid::new_v4().to_string();
                let body = if turn.is_some() {
                    SessionInteractionRespondRequest::many(
                        ids.iter()
                            .map(|id| SessionInteractionAnswerRequest {
                                interaction_id: id.clone(),
                                answer: answer.to_object(),
                                extra: JsonObject::new(),
                            })
                            .collect(),
                    )
                } else {
                    SessionInteractionRespondRequest::single(answer.to_object())
                };
                let body = SessionInteractionRespondRequest {
                    expected_execution_id: turn.clone(),
                    ..body
                };
                let result = match ids.first() {
                    Some(anchor) => self.respond_durable(anchor, &body, &key).await,
                    None => return Vec::new(),
                };
                ids.into_iter()
                    .map(|id| GateOutcome {
                        id,
                        turn_id: turn.clone(),
                        result: result.clone(),
                    })
                    .collect()
            }))
            .buffered(DEFAULT_APPROVE_ALL_CONCURRENCY)
            .collect()
            .await;
        TurnApproveReport {
            gates: results.into_iter().flatten().collect(),
        }
    }

    /// One respond per gate, at most `concurrency` in flight, each under its key.
    async fn answer_one_by_one(
        &self,
        targets: &[(String, String)],
        answer: &Answer,
        concurrency: usize,
    ) -> Vec<(String, Result<SessionInteraction>)> {
        let targets: Vec<(String, String)> = targets.to_vec();
        futures::stream::iter(targets.into_iter().map(|(id, key)| {
            let answer = answer.clone();
            async move {
                let result = self.respond_with_idempotency_key(&id, &answer, &key).await;
                (id, result)
            }
        }))
        .buffered(concurrency.max(1))
        .collect()
        .await
    }

    /// One batch request for `chunk` (at most `MAX_BATCH_ANSWERS` gates). A batch the
    /// host cannot take (the route is absent, or the request failed as a whole) is
    /// answered gate by gate under the same keys: what the batch landed is replayed.
    async fn answer_batch(
        &self,
        chunk: &[(String, String)],
        answer: &Answer,
    ) -> Vec<(String, Result<SessionInteraction>)> {
        let op = Operation::RespondInteractions;
        let body = BatchRespondRequest {
            answers: chunk
                .iter()
                .map(|(id, key)| BatchAnswer {
                    id: id.clone(),
                    answer: Some(answer.to_object()),
                    idempotency_key: Some(key.clone()),
                    digest: None,
                })
                .collect(),
        };
        let answered: Result<BatchRespondResponse> = async {
            let mut call = Call::new(op, &[]).json_body(&body)?;
            // Safe to re-send: every item carries its idempotency key.
            call.replay = Replay::Safe;
            self.client.call_json(&call).await
        }
        .await;
        let response = match answered {
            Ok(response) => response,
            // Refused for who is asking, not for what: every single respond would be
            // refused the same way, so none is sent.
            Err(err) if refuses_the_caller(&err) => {
                return chunk
                    .iter()
                    .map(|(id, _)| (id.clone(), Err(err.clone())))
                    .collect();
            }
            Err(err) => {
                tracing::warn!(
                    error = err.kind().as_str(),
                    gates = chunk.len(),
                    "a batch answer failed as a whole; answering its gates one by one"
                );
                return self
                    .answer_one_by_one(chunk, answer, DEFAULT_APPROVE_ALL_CONCURRENCY)
                    .await;
            }
        };
        let mut results: std::collections::HashMap<String, BatchResult> = response
            .results
            .into_iter()
            .map(|result| (result.id.clone(), result))
            .collect();
        let mut outcomes = Vec::with_capacity(chunk.len());
        for (id, key) in chunk {
            let outcome = match results.remove(id) {
                Some(BatchResult {
                    outcome: BatchOutcome::Answered,
                    interaction: Some(row),
                    ..
                }) => Ok(row),
                Some(result) if result.outcome != BatchOutcome::Answered => {
                    Err(self.item_error(&result))
                }
                // Answered without its row, or missing from the answer: ask for it by
                // answering again under the same key (a replay when it landed).
                _ => self.respond_with_idempotency_key(id, answer, key).await,
            };
            outcomes.push((id.clone(), outcome));
        }
        outcomes
    }

    /// The error a batch item's outcome means, as a single respond would have got it.
    fn item_error(&self, result: &BatchResult) -> Error {
        let code = result.error.as_ref().and_then(BatchError::gatehouse_code);
        let status = match (&result.outcome, code) {
            (_, Some(code)) => code.http_status(),
            (BatchOutcome::AlreadyAnswered, None) => 409,
            (BatchOutcome::NotFound, None) => 404,
            _ => 422,
        };
        let detail = result
            .error
            .as_ref()
            .map(|e| e.detail.clone())
            .unwrap_or_else(|| result.outcome.to_string());
        let body = serde_json::json!({ "detail": detail, "code": code.map(|c| c.as_str()) });
        self.client.transport().classify_answer(
            Operation::RespondInteraction,
            status,
            body.to_string().as_bytes(),
        )
    }

    /// Open a gate (runner side, `POST /api/sessions/interactions/`). Idempotent on
    /// `(project, session_id, token)`: a re-post returns the existing row, so the
    /// client may retry it like a read.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::interaction::{CreateInteractionRequest, InteractionKind};
    /// let row = client.interactions().create(&CreateInteractionRequest {
    ///     session_id: "s-1".into(), turn_id: Some("t-1".into()), token: "tok-1".into(),
    ///     kind: InteractionKind::UserApproval, data: None, flags: None, tags: None, meta: None,
    /// }).await?;
    /// # let _ = row; Ok(()) }
    /// ```
    pub async fn create(&self, request: &CreateInteractionRequest) -> Result<SessionInteraction> {
        let mut call = Call::new(Operation::CreateInteraction, &[]).json_body(request)?;
        call.replay = Replay::Safe;
        let response: InteractionResponse = self.client.call_json(&call).await?;
        row_of(Operation::CreateInteraction, response)
    }

    /// Move a gate's status by token (runner side,
    /// `POST /api/sessions/interactions/transition`). Not retried.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::interaction::{InteractionStatus, Resolution, TransitionRequest, Verdict};
    /// let row = client.interactions().transition(&TransitionRequest {
    ///     session_id: "s-1".into(), token: "tok-1".into(), status: InteractionStatus::Resolved,
    ///     resolution: Some(Resolution { verdict: Verdict::Approved, tool_call_id: "toolu_01".into() }.to_object()),
    /// }).await?;
    /// # let _ = row; Ok(()) }
    /// ```
    pub async fn transition(&self, request: &TransitionRequest) -> Result<SessionInteraction> {
        let call = Call::new(Operation::TransitionInteraction, &[]).json_body(request)?;
        let response: InteractionResponse = self.client.call_json(&call).await?;
        row_of(Operation::TransitionInteraction, response)
    }

    /// Cancel the pending gates of stale turns (runner side,
    /// `POST /api/sessions/interactions/cancel-stale`); returns how many were cancelled.
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use gatehouse_wire::interaction::CancelStaleRequest;
    /// let n = client.interactions().cancel_stale(&CancelStaleRequest {
    ///     session_id: "s-1".into(), turn_id: "t-2".into(), tokens: None,
    /// }).await?;
    /// println!("{n} cancelled");
    /// # Ok(()) }
    /// ```
    pub async fn cancel_stale(&self, request: &CancelStaleRequest) -> Result<u64> {
        let call = Call::new(Operation::CancelStaleInteractions, &[]).json_body(request)?;
        let response: CancelStaleResponse = self.client.call_json(&call).await?;
        Ok(response.cancelled)
    }

    /// Watch a session's gates (`GET /api/sessions/streams/watch`, SSE). See [`WatchStream`].
    ///
    /// ```no_run
    /// # async fn demo(client: gatehouse_client::Client) -> Result<(), gatehouse_client::Error> {
    /// use futures::StreamExt;
    /// use gatehouse_client::WatchUpdate;
    /// let mut watch = client.interactions().watch("48268312-0000-7000-8000-000000000000");
    /// while let Some(update) = watch.next().await {
    ///     match update? {
    ///         WatchUpdate::Connected => { /* re-query: events are notifications, not a log */ }
    ///         WatchUpdate::Event(event) => println!("{event:?}"),
    ///         WatchUpdate::Reconnecting { error, .. } => eprintln!("connection lost: {error}"),
    ///         _ => {} // a kind of update newer than this code
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn watch(&self, session_id: &str) -> WatchStream {
        WatchStream::new(self.client.clone(), session_id.to_string())
    }
}

/// The row of a `{"count": 1, "interaction": row}` answer.
/// Whether `err` refuses the caller (its key, its tenant, its client settings) rather
/// than the request: the same refusal would meet every gate answered one by one.
fn refuses_the_caller(err: &Error) -> bool {
    matches!(
        err.kind(),
        ErrorKind::Unauthorized
            | ErrorKind::Forbidden
            | ErrorKind::TenantRejected
            | ErrorKind::Config
    )
}

/// True when two project ids name the same project: equal as UUIDs (any case or
/// spelling `uuid` reads), else equal as text.
fn same_project(a: &str, b: &str) -> bool {
    match (
        uuid::Uuid::parse_str(a.trim()),
        uuid::Uuid::parse_str(b.trim()),
    ) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// A turn: its session and its id.
type Turn = (String, String);

/// The id of a gate read from the host; a row without one cannot be answered.
fn gate_id(gate: &SessionInteraction, operation: Operation) -> Result<&str> {
    gate.id.as_deref().ok_or_else(|| Error::Config {
        operation,
        reason: "the gate's row has no id; it cannot be answered".to_string(),
    })
}

fn row_of(operation: Operation, response: InteractionResponse) -> Result<SessionInteraction> {
    response.interaction.ok_or_else(|| Error::Decode {
        operation,
        status: 200,
        path: "interaction".to_string(),
        reason: "missing field `interaction`".to_string(),
        snippet: String::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: &str, resolution: serde_json::Value) -> SessionInteraction {
        serde_json::from_value(serde_json::json!({
            "id": "i1", "session_id": "s", "token": "t", "kind": "user_approval",
            "status": status, "data": {"resolution": resolution}
        }))
        .unwrap()
    }

    #[test]
    fn compare_with_reads_the_recorded_answer() {
        use RecordedAnswer::*;
        let ours = Answer::approve().message("ok");
        let cases = [
            (
                "responded",
                serde_json::json!({"answer": {"approved": true, "message": "ok"}}),
                Same,
            ),
            (
                "resolved",
                serde_json::json!({"answer": {"approved": true, "message": "ok", "extra": 1}, "verdict": "approved"}),
                Same,
            ),
            (
                "responded",
                serde_json::json!({"answer": {"approved": false}}),
                Different,
            ),
            ("pending", serde_json::Value::Null, NotAnswered),
            ("cancelled", serde_json::Value::Null, NotAnswered),
            // Agenta's respond leaves the resolution null.
            ("responded", serde_json::Value::Null, Unrecorded),
            ("responded", serde_json::json!({}), Unrecorded),
            // A runner's resolution: a verdict, which only a contradiction makes telling.
            (
                "resolved",
                serde_json::json!({"verdict": "approved", "tool_call_id": "t"}),
                Unrecorded,
            ),
            (
                "resolved",
                serde_json::json!({"verdict": "denied", "tool_call_id": "t"}),
                Different,
            ),
            (
                "resolved",
                serde_json::json!({"verdict": "maybe"}),
                Unrecorded,
            ),
        ];
        for (status, resolution, want) in cases {
            assert_eq!(
                ours.compare_with(&row(status, resolution.clone())),
                want,
                "{status} {resolution}"
            );
        }
        let custom = Answer::custom(serde_json::Map::new());
        assert_eq!(
            custom.compare_with(&row("resolved", serde_json::json!({"verdict": "approved"}))),
            Unrecorded
        );
    }

    #[test]
    fn only_a_different_recorded_answer_is_someone_elses() {
        use RecordedAnswer::*;
        // Gatehouse's server (honours the key, records the answer): today's rule.
        assert_eq!(settle(Same, true), Settled::Ours);
        assert_eq!(settle(Different, true), Settled::SomeoneElses);
        assert_eq!(settle(NotAnswered, true), Settled::NotAnswered);
        assert!(matches!(settle(Unrecorded, true), Settled::OwnerUnknown(_)));
        // Agenta (ignores the key, records nothing on respond).
        assert!(matches!(settle(Same, false), Settled::OwnerUnknown(_)));
        assert!(matches!(
            settle(Unrecorded, false),
            Settled::OwnerUnknown(_)
        ));
        assert_eq!(settle(Different, false), Settled::SomeoneElses);
        assert_eq!(settle(NotAnswered, false), Settled::NotAnswered);
    }

    #[test]
    fn project_ids_compare_as_uuids() {
        let id = "01a24fc2-85bd-71c0-a94f-bf7579d38a32";
        assert!(same_project(id, id));
        assert!(same_project(id, &id.to_uppercase()));
        assert!(same_project(id, &id.replace('-', "")));
        assert!(!same_project(id, "74acd281-606f-4e43-b2a9-1f40f2dff3b3"));
        assert!(same_project("p1", "p1"));
        assert!(!same_project("p1", "P1"));
    }

    #[test]
    fn report_signals_all_already_answered_only_when_nothing_else_happened() {
        let mut report = ApproveAllReport::default();
        report.already_answered.push("a".into());
        report.failed.push((
            "b".into(),
            Error::NotFound {
                operation: Operation::RespondInteraction,
                detail: String::new(),
            },
        ));
        assert!(!report.all_already_answered());
        assert_eq!(report.total(), 2);
    }
}
