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
use gatehouse_wire::JsonObject;
use std::collections::HashSet;
use tracing::Instrument;

use crate::client::Client;
use crate::error::{Error, ErrorKind, Operation, Result};
use crate::retry::{with_retries, Failed};
use crate::transport::{Call, Replay};
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
        mut windowing: Windowing,
    ) -> Result<Vec<SessionInteraction>> {
        let limit = windowing
            .limit
            .filter(|l| *l > 0)
            .unwrap_or(DEFAULT_PAGE_SIZE);
        windowing.limit = Some(limit);
        let mut rows: Vec<SessionInteraction> = Vec::new();
        let mut seen_cursors: HashSet<String> = HashSet::new();
        for _ in 0..MAX_PAGES {
            let page = self.query(query, Some(&windowing)).await?;
            let page_len = page.interactions.len();
            let cursor = page.interactions.last().and_then(|row| row.id.clone());
            rows.extend(page.interactions);
            if page_len < limit as usize {
                return Ok(rows);
            }
            let Some(cursor) = cursor else {
                return Err(Error::Decode {
                    operation: Operation::QueryInteractions,
                    status: 200,
                    path: "interactions[-1].id".to_string(),
                    reason: "a full page ended with a row without id; cannot page on".to_string(),
                    snippet: String::new(),
                });
            };
            if !seen_cursors.insert(cursor.clone()) {
                return Err(Error::Decode {
                    operation: Operation::QueryInteractions,
                    status: 200,
                    path: "interactions".to_string(),
                    reason: "the server returned the same page twice; paging stopped".to_string(),
                    snippet: String::new(),
                });
            }
            windowing.next = Some(cursor);
        }
        Ok(rows)
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
        let span =
            tracing::info_span!("gatehouse_respond", operation = %Operation::RespondInteraction);
        self.respond_inner(id, answer, idempotency_key)
            .instrument(span)
            .await
    }

    async fn respond_inner(
        &self,
        id: &str,
        answer: &Answer,
        idempotency_key: &str,
    ) -> Result<SessionInteraction> {
        let op = Operation::RespondInteraction;
        let body = RespondRequest {
            answer: Some(answer.to_object()),
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
    /// gate is answered for its own tool call.
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
            let outcomes: Vec<(String, Result<SessionInteraction>)> = if batched {
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
