//! The one error type of the client: [`Error`], the [`Operation`] each failure names,
//! and [`Error::is_retryable`]. How an HTTP answer becomes an [`Error`] is in
//! [`crate::classify`]; how its texts are bounded and scrubbed, in [`crate::redact`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::error::GatehouseCode;
use gatehouse_wire::interaction::InteractionStatus;
use gatehouse_wire::sessions::SessionExecutionState;

/// The client call that failed. Its [`Display`](fmt::Display) is the snake_case name
/// used in tracing spans and error messages. Each call takes the route of the registry
/// ([`gatehouse_wire::routes`]) named below: its method and path come from there.
///
/// ```
/// use gatehouse_client::Operation;
/// assert_eq!(Operation::RespondInteraction.to_string(), "respond_interaction");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Operation {
    /// Building a [`Client`](crate::Client) (bad base URL, unusable API key).
    BuildClient,
    /// One page of interaction rows: [`QUERY_INTERACTIONS`](gatehouse_wire::routes::QUERY_INTERACTIONS).
    QueryInteractions,
    /// One interaction row: [`GET_INTERACTION`](gatehouse_wire::routes::GET_INTERACTION).
    GetInteraction,
    /// Answer one gate: [`RESPOND_TO_INTERACTION`](gatehouse_wire::routes::RESPOND_TO_INTERACTION).
    RespondInteraction,
    /// Answer many gates at once (Gatehouse): [`RESPOND_TO_INTERACTIONS`](gatehouse_wire::routes::RESPOND_TO_INTERACTIONS).
    RespondInteractions,
    /// Open a gate: [`CREATE_INTERACTION`](gatehouse_wire::routes::CREATE_INTERACTION).
    CreateInteraction,
    /// Move a gate by its token: [`TRANSITION_INTERACTION`](gatehouse_wire::routes::TRANSITION_INTERACTION).
    TransitionInteraction,
    /// Cancel the gates of stale turns: [`CANCEL_STALE_INTERACTIONS`](gatehouse_wire::routes::CANCEL_STALE_INTERACTIONS).
    CancelStaleInteractions,
    /// Watch a session's gates (SSE): [`WATCH_SESSION`](gatehouse_wire::routes::WATCH_SESSION).
    WatchInteractions,
    /// Capability discovery: [`GET_CAPABILITIES`](gatehouse_wire::routes::GET_CAPABILITIES).
    GetCapabilities,
    /// [`RUN`](gatehouse_wire::routes::RUN), read to its result.
    Run,
    /// [`RUN`](gatehouse_wire::routes::RUN), read as an NDJSON stream.
    StreamRun,
    /// One execution session: [`GET_EXECUTION_SESSION`](gatehouse_wire::routes::GET_EXECUTION_SESSION) ([`GET_EXECUTION_SESSION_AT_ROOT`](gatehouse_wire::routes::GET_EXECUTION_SESSION_AT_ROOT) on AgentPlat).
    GetExecutionSession,
    /// Request an intervention: [`REQUEST_INTERVENTION`](gatehouse_wire::routes::REQUEST_INTERVENTION) ([`REQUEST_INTERVENTION_AT_ROOT`](gatehouse_wire::routes::REQUEST_INTERVENTION_AT_ROOT) on AgentPlat).
    RequestIntervention,
    /// A session's events: [`LIST_EXECUTION_EVENTS`](gatehouse_wire::routes::LIST_EXECUTION_EVENTS) ([`LIST_EXECUTION_EVENTS_AT_ROOT`](gatehouse_wire::routes::LIST_EXECUTION_EVENTS_AT_ROOT) on AgentPlat).
    ListExecutionEvents,
    /// Move a session's authority (Gatehouse; AgentPlat has no such route): [`CHANGE_EXECUTION_AUTHORITY`](gatehouse_wire::routes::CHANGE_EXECUTION_AUTHORITY).
    ChangeExecutionAuthority,
    /// A session's events as SSE: [`STREAM_EXECUTION_EVENTS`](gatehouse_wire::routes::STREAM_EXECUTION_EVENTS) ([`STREAM_EXECUTION_EVENTS_AT_ROOT`](gatehouse_wire::routes::STREAM_EXECUTION_EVENTS_AT_ROOT) on AgentPlat).
    WatchExecutionEvents,
    /// Run a turn (the service tier): [`INVOKE`](gatehouse_wire::routes::INVOKE).
    Invoke,
    /// A session's turns: [`LIST_TURNS`](gatehouse_wire::routes::LIST_TURNS).
    ListTurns,
    /// Commit a workflow revision: [`COMMIT_REVISION`](gatehouse_wire::routes::COMMIT_REVISION).
    CommitRevision,
    /// The webhook outbox of a project: [`LIST_WEBHOOK_DELIVERIES`](gatehouse_wire::routes::LIST_WEBHOOK_DELIVERIES).
    ListWebhookDeliveries,
    /// Answer a gate on a host that speaks Agenta's durable contract (202 with the
    /// continuation): the same route, [`RESPOND_TO_INTERACTION`](gatehouse_wire::routes::RESPOND_TO_INTERACTION).
    RespondInteractionDurable,
    /// Stop a session's running turn (a durable command): [`CANCEL_SESSION`](gatehouse_wire::routes::CANCEL_SESSION).
    CancelSession,
    /// A session's snapshot: [`GET_SESSION_SNAPSHOT`](gatehouse_wire::routes::GET_SESSION_SNAPSHOT).
    GetSessionSnapshot,
    /// A session's durable events (SSE): [`WATCH_SESSION_EVENTS`](gatehouse_wire::routes::WATCH_SESSION_EVENTS).
    WatchSessionEvents,
    /// Deliver again a continuation whose delivery failed: [`RESUME_SESSION_CONTINUATION`](gatehouse_wire::routes::RESUME_SESSION_CONTINUATION).
    ResumeSessionContinuation,
}

impl Operation {
    /// Every operation, in declaration order (for the tests of the tables that map each
    /// operation elsewhere: its route in `routes.rs`).
    #[cfg(test)]
    pub(crate) const ALL: &'static [Operation] = &[
        Self::BuildClient,
        Self::QueryInteractions,
        Self::GetInteraction,
        Self::RespondInteraction,
        Self::RespondInteractions,
        Self::CreateInteraction,
        Self::TransitionInteraction,
        Self::CancelStaleInteractions,
        Self::WatchInteractions,
        Self::GetCapabilities,
        Self::Run,
        Self::StreamRun,
        Self::GetExecutionSession,
        Self::RequestIntervention,
        Self::ListExecutionEvents,
        Self::ChangeExecutionAuthority,
        Self::WatchExecutionEvents,
        Self::Invoke,
        Self::ListTurns,
        Self::CommitRevision,
        Self::ListWebhookDeliveries,
        Self::RespondInteractionDurable,
        Self::CancelSession,
        Self::GetSessionSnapshot,
        Self::WatchSessionEvents,
        Self::ResumeSessionContinuation,
    ];

    /// The snake_case name, e.g. `"get_interaction"`.
    ///
    /// ```
    /// use gatehouse_client::Operation;
    /// assert_eq!(Operation::GetInteraction.as_str(), "get_interaction");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::BuildClient => "build_client",
            Self::QueryInteractions => "query_interactions",
            Self::GetInteraction => "get_interaction",
            Self::RespondInteraction => "respond_interaction",
            Self::RespondInteractions => "respond_interactions",
            Self::CreateInteraction => "create_interaction",
            Self::TransitionInteraction => "transition_interaction",
            Self::CancelStaleInteractions => "cancel_stale_interactions",
            Self::WatchInteractions => "watch_interactions",
            Self::GetCapabilities => "get_capabilities",
            Self::Run => "run",
            Self::StreamRun => "stream_run",
            Self::GetExecutionSession => "get_execution_session",
            Self::RequestIntervention => "request_intervention",
            Self::ListExecutionEvents => "list_execution_events",
            Self::ChangeExecutionAuthority => "change_execution_authority",
            Self::WatchExecutionEvents => "watch_execution_events",
            Self::Invoke => "invoke",
            Self::ListTurns => "list_turns",
            Self::CommitRevision => "commit_revision",
            Self::ListWebhookDeliveries => "list_webhook_deliveries",
            Self::RespondInteractionDurable => "respond_interaction_durable",
            Self::CancelSession => "cancel_session",
            Self::GetSessionSnapshot => "get_session_snapshot",
            Self::WatchSessionEvents => "watch_session_events",
            Self::ResumeSessionContinuation => "resume_session_continuation",
        }
    }

    /// True for operations that only read, which the client retries on transport
    /// errors, timeouts, 429 and 5xx.
    ///
    /// ```
    /// use gatehouse_client::Operation;
    /// assert!(Operation::GetInteraction.is_read());
    /// assert!(!Operation::RespondInteraction.is_read());
    /// ```
    pub fn is_read(self) -> bool {
        matches!(
            self,
            Self::QueryInteractions
                | Self::GetInteraction
                | Self::WatchInteractions
                | Self::GetCapabilities
                | Self::GetExecutionSession
                | Self::ListExecutionEvents
                | Self::WatchExecutionEvents
                | Self::ListTurns
                | Self::ListWebhookDeliveries
                | Self::GetSessionSnapshot
                | Self::WatchSessionEvents
        )
    }

    /// The capability the operation needs, if any (the discovery call itself needs none).
    ///
    /// ```
    /// use gatehouse_client::Operation;
    /// use gatehouse_wire::capabilities::Capability;
    /// assert_eq!(Operation::Run.capability(), Some(Capability::Runs));
    /// assert_eq!(Operation::GetCapabilities.capability(), None);
    /// ```
    pub fn capability(self) -> Option<Capability> {
        match self {
            // The snapshot and the events need none: the snapshot is how an Agenta host
            // tells its contract, and a durable host without the shared reader answers
            // the events route-not-found (absent events say nothing of the rest).
            Self::BuildClient
            | Self::GetCapabilities
            | Self::GetSessionSnapshot
            | Self::WatchSessionEvents => None,
            Self::RespondInteractionDurable
            | Self::CancelSession
            | Self::ResumeSessionContinuation => Some(Capability::DurableApprovals),
            Self::QueryInteractions
            | Self::GetInteraction
            | Self::RespondInteraction
            | Self::CreateInteraction
            | Self::TransitionInteraction
            | Self::CancelStaleInteractions => Some(Capability::Interactions),
            Self::WatchInteractions => Some(Capability::InteractionWatch),
            Self::RespondInteractions => Some(Capability::InteractionBatch),
            Self::Run | Self::StreamRun => Some(Capability::Runs),
            Self::GetExecutionSession
            | Self::RequestIntervention
            | Self::ListExecutionEvents
            | Self::ChangeExecutionAuthority => Some(Capability::Execution),
            Self::WatchExecutionEvents => Some(Capability::ExecutionEventStream),
            // The reference control plane's own routes.
            Self::Invoke | Self::ListTurns | Self::CommitRevision | Self::ListWebhookDeliveries => {
                Some(Capability::Invoke)
            }
        }
    }
}

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The source of a [`Error::Transport`]: the underlying I/O or HTTP error, shared so
/// that [`Error`] stays `Clone`.
///
/// ```
/// let source: gatehouse_client::TransportSource = std::sync::Arc::new(std::io::Error::other("reset"));
/// assert_eq!(source.to_string(), "reset");
/// ```
pub type TransportSource = Arc<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong in a client call. Flat, so a caller matches it
/// without parsing strings (with a wildcard arm: new variants may come); every variant
/// names its [`Operation`] and has an [`ErrorKind`] ([`Error::kind`]).
///
/// Server texts (`detail`, `body`, `snippet`) are bounded in length; JSON bodies are
/// redacted (values under `parameters`, `args`, `headers`, `authorization` and similar
/// keys are replaced) and the API key never appears.
///
/// ```no_run
/// # async fn demo(client: gatehouse_client::Client) {
/// use gatehouse_client::{Answer, Error};
/// match client.interactions().respond("019fac94-0000-7000-8000-000000000001", &Answer::approve()).await {
///     Ok(row) => println!("answered, now {:?}", row.status),
///     Err(Error::AlreadyAnswered { .. }) => println!("someone else answered first; nothing to do"),
///     Err(err) if err.is_retryable() => println!("try again later: {err}"),
///     Err(err) => eprintln!("failed: {err}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// 409: the interaction is no longer pending (answered elsewhere, or cancelled).
    /// Benign for a person: the gate is settled. Agenta's durable respond says so with
    /// `execution_terminal` and the row's status (`responded`: answered differently,
    /// `cancelled`: the gate went away).
    #[error("{operation}: interaction is no longer pending{} ({detail})", interaction_status.as_ref().map(|s| format!(", it is {s}")).unwrap_or_default())]
    AlreadyAnswered {
        /// The failed call.
        operation: Operation,
        /// The row's status, when the server said it (Agenta's durable respond).
        interaction_status: Option<InteractionStatus>,
        /// The server's text.
        detail: String,
    },
    /// The gate is answered, but the host cannot show whose answer landed: a respond
    /// whose outcome was lost (a 5xx, a dropped connection) was re-sent and met a 409,
    /// or every re-send failed, and the row read back records no answer, or (on a host
    /// that ignores `Idempotency-Key`, such as Agenta) one equal to ours, which another
    /// device may have sent as well; or the re-send met 409 and the row could not be
    /// read back at all. Ours may have landed, or someone else's: never
    /// reported as [`Error::AlreadyAnswered`], which needs a recorded answer that
    /// differs from ours. The gate is settled either way; a retry cannot tell more.
    #[error("{operation}: answered; whose answer is not knowable from this host (interaction {interaction_id}: {detail})")]
    AnswerOwnerUnknown {
        /// The failed call.
        operation: Operation,
        /// The answered interaction.
        interaction_id: String,
        /// What the row read back showed.
        detail: String,
    },
    /// 404: the addressed thing does not exist (or belongs to another project).
    #[error("{operation}: not found ({detail})")]
    NotFound {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409: `expectedRevision` is stale, or the session changed concurrently.
    #[error("{operation}: revision conflict ({detail})")]
    RevisionConflict {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409: the `operationId` is bound to another request.
    #[error("{operation}: operation id is bound to another request ({detail})")]
    OperationConflict {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409: the dispatch token no longer owns the claim.
    #[error("{operation}: dispatch ownership lost ({detail})")]
    DispatchOwnershipLost {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409: the intervention was already resolved to another outcome.
    #[error("{operation}: already resolved differently ({detail})")]
    ResolvedDifferently {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409: the execution session already holds the most interventions it may (256):
    /// AgentPlat's "Execution session intervention limit was reached".
    #[error("{operation}: intervention limit reached ({detail})")]
    InterventionLimit {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409: the execution session is not active (its run ended, or is not running):
    /// nothing can be steered any more. AgentPlat's "Execution session is not active" or
    /// "Run intervention requires a running Room run".
    #[error("{operation}: execution session is not active ({detail})")]
    SessionNotActive {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409 (Agenta's durable respond, `execution_terminal`): the turn the gate belongs to
    /// can no longer be continued: it is stopping or settled (`execution_state`, e.g.
    /// `stopping` after a Stop won, `terminal` after another answer continued it), or
    /// another settler won (`terminal_outcome`, e.g. `lost`). The answer cannot apply;
    /// read the session again.
    #[error("{operation}: the turn can no longer be continued{}{} ({detail})", execution_state.as_ref().map(|s| format!(", it is {s}")).unwrap_or_default(), terminal_outcome.as_deref().map(|o| format!(", its outcome is {o}")).unwrap_or_default())]
    TurnNotContinuable {
        /// The failed call.
        operation: Operation,
        /// The source execution's state, when the server said it.
        execution_state: Option<SessionExecutionState>,
        /// The outcome that settled the source execution, when the server said it.
        terminal_outcome: Option<String>,
        /// The server's text.
        detail: String,
    },
    /// 409 (Agenta's `execution_mismatch`): the interaction belongs to another execution
    /// than the request expected (`expected_execution_id`), or the answers span
    /// executions. `current_execution_id` is the interaction's execution.
    #[error("{operation}: the interaction belongs to another execution{} ({detail})", current_execution_id.as_deref().map(|id| format!(" ({id})")).unwrap_or_default())]
    StaleExecution {
        /// The failed call.
        operation: Operation,
        /// The execution the interaction belongs to, when the server said it.
        current_execution_id: Option<String>,
        /// The server's text.
        detail: String,
    },
    /// 409: the `Idempotency-Key` was used before with another request (Agenta's
    /// `idempotency_key_reused`, Gatehouse's `IDEMPOTENCY_KEY_REUSED`). Never retried:
    /// the same key cannot carry this request.
    #[error("{operation}: the idempotency key was used for another request ({detail})")]
    IdempotencyKeyReused {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 409: the gate changed after it was read (Gatehouse's `STALE_GATE`, CONTRACT.md
    /// C8): the respond carried the digest of the row as this client read it, and the
    /// gate asks something else now. Nothing was recorded; read the gate again, show
    /// it, and answer that. Never retried.
    #[error("{operation}: the gate changed after it was read; nothing was recorded ({detail})")]
    StaleGate {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// Any other 409: `code` is Gatehouse's machine code when the server sent one
    /// (e.g. `IDEMPOTENCY_KEY_REUSED`, `BINDING_CONFLICT`, `INVALID_STATE`).
    #[error("{operation}: conflict{} ({detail})", code.map(|c| format!(" {c}")).unwrap_or_default())]
    Conflict {
        /// The failed call.
        operation: Operation,
        /// Gatehouse's machine code, when sent.
        code: Option<GatehouseCode>,
        /// The server's text.
        detail: String,
    },
    /// The host does not serve this capability (learned from `GET /api/capabilities`
    /// or from a route-not-found 404, then cached): the call was not, and will not be,
    /// sent. `capability` is `None` when the discovery route itself is absent.
    #[error("{operation}: capability {} is not served by this host", capability.map(|c| c.as_str()).unwrap_or("capabilities"))]
    CapabilityUnavailable {
        /// The failed call.
        operation: Operation,
        /// The absent capability; `None` for the discovery route.
        capability: Option<Capability>,
    },
    /// 401: no or unknown API key.
    #[error("{operation}: unauthorized ({detail})")]
    Unauthorized {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 403: permission denied: the key (or, on AgentPlat, the requesting participant)
    /// may not do this, e.g. "Human participant lacks run.intervene permission".
    #[error("{operation}: permission denied ({detail})")]
    Forbidden {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// The host answered with another project's data than the one asked for (the
    /// client's `project_id`): Agenta, under an API key, ignores `?project_id=` and
    /// answers for the key's own project. Nothing of the answer is returned.
    #[error(
        "{operation}: asked for project {asked}, the host answered with project {answered}'s rows"
    )]
    ProjectMismatch {
        /// The failed call.
        operation: Operation,
        /// The project the client asked for.
        asked: String,
        /// The project the answer's rows belong to.
        answered: String,
    },
    /// The host needs a tenant it was not given (AgentPlat's default authentication
    /// answers 400 "Missing required X-Agentplat-Tenant-Id header": configure the tenant),
    /// or refuses the one given (Gatehouse's `UNKNOWN_TENANT`, 403).
    #[error("{operation}: missing or unknown tenant, HTTP {status} ({detail})")]
    TenantRejected {
        /// The failed call.
        operation: Operation,
        /// The HTTP status (400 missing, 403 unknown).
        status: u16,
        /// The server's text.
        detail: String,
    },
    /// 400 or 422: the request failed the server's validation (AgentPlat's and
    /// Gatehouse's `VALIDATION_ERROR`, FastAPI's 422), e.g. "Run intervention checkpoint
    /// is invalid". `detail` is the server's explanation (validation lists joined);
    /// `field` and `reason` are Agenta's `validation_error` details, when sent (e.g.
    /// `Idempotency-Key`, `required`).
    #[error("{operation}: validation failed, HTTP {status}{} ({detail})", field.as_deref().map(|f| format!(", {f}{}", reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())).unwrap_or_default())]
    Validation {
        /// The failed call.
        operation: Operation,
        /// The HTTP status.
        status: u16,
        /// The field the server named, when it named one.
        field: Option<String>,
        /// Why the field was refused (e.g. `required`, `too_long`), when the server said.
        reason: Option<String>,
        /// The server's text.
        detail: String,
    },
    /// 400 or another 4xx: the server refused the request as malformed (bad JSON, a
    /// bad query). `detail` is the server's explanation.
    #[error("{operation}: invalid request, HTTP {status} ({detail})")]
    Invalid {
        /// The failed call.
        operation: Operation,
        /// The HTTP status.
        status: u16,
        /// The server's text.
        detail: String,
    },
    /// 413: the request body is over the server's limit.
    #[error("{operation}: payload too large ({detail})")]
    PayloadTooLarge {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 429 after the client's retries: the server asks to slow down.
    #[error("{operation}: rate limited{}", retry_after.map(|d| format!(", retry after {} ms", d.as_millis())).unwrap_or_default())]
    RateLimited {
        /// The failed call.
        operation: Operation,
        /// The server's `Retry-After`, when sent.
        retry_after: Option<Duration>,
    },
    /// 5xx (or any other unexpected status): `body` is a bounded, redacted snippet.
    #[error("{operation}: server error, HTTP {status}: {body}")]
    Server {
        /// The failed call.
        operation: Operation,
        /// The HTTP status.
        status: u16,
        /// Gatehouse's machine code, when sent (e.g. `ADAPTER_ERROR`).
        code: Option<GatehouseCode>,
        /// Bounded snippet of the body.
        body: String,
    },
    /// The request did not complete: connection refused or reset, TLS, a body cut
    /// short. `source` keeps the whole chain.
    #[error("{operation}: transport error: {detail}")]
    Transport {
        /// The failed call.
        operation: Operation,
        /// The source chain as one line.
        detail: String,
        /// The underlying error.
        #[source]
        source: TransportSource,
    },
    /// A success (or error) body did not match the contract: `path` is the JSON path
    /// of the failing field (`.` for the document), `snippet` a bounded, redacted
    /// piece of the raw body.
    #[error("{operation}: cannot decode HTTP {status} body at {path}: {reason}; body: {snippet}")]
    Decode {
        /// The failed call.
        operation: Operation,
        /// The HTTP status of the undecodable answer.
        status: u16,
        /// JSON path of the failing field.
        path: String,
        /// What was wrong there.
        reason: String,
        /// Bounded snippet of the raw body.
        snippet: String,
    },
    /// An event stream ended with the server's failure frame (AgentPlat's
    /// `agentplat.failed`): the source of the stream failed; `detail` is its `content`
    /// (AgentPlat does not expose the cause: "Stream failed").
    #[error("{operation}: the server's event stream failed ({detail})")]
    StreamFailed {
        /// The failed call.
        operation: Operation,
        /// The failure frame's text.
        detail: String,
    },
    /// The host ACCEPTED a write (a 2xx answer): it landed. Only its answer could not be
    /// read as the contract says (`path`, `reason`). Do not report the write as failed:
    /// read the state again (for an intervention: by its `operation_id`).
    #[error("{operation}: the host accepted the request (HTTP {status}), so it landed; its answer could not be read at {path}: {reason}; body: {snippet}")]
    AcceptedUnreadable {
        /// The call whose write landed.
        operation: Operation,
        /// The 2xx status of the answer.
        status: u16,
        /// The idempotency id of the write, when it has one (an intervention's operation id).
        operation_id: Option<String>,
        /// JSON path of the failing field.
        path: String,
        /// What was wrong there.
        reason: String,
        /// Bounded snippet of the raw body.
        snippet: String,
    },
    /// The call took longer than the configured timeout (or a stream stayed silent
    /// longer than its idle timeout).
    #[error("{operation}: timed out after {} ms", after.as_millis())]
    Timeout {
        /// The failed call.
        operation: Operation,
        /// The limit that was exceeded.
        after: Duration,
    },
    /// Something unusable was configured or asked for locally (a bad base URL, an API
    /// key that is not a valid header value, a `/run` request that breaks the
    /// contract). Nothing was sent.
    #[error("{operation}: invalid configuration: {reason}")]
    Config {
        /// The failed call ([`Operation::BuildClient`], or the call whose URL failed).
        operation: Operation,
        /// What is wrong.
        reason: String,
    },
}

impl Error {
    /// The call that failed.
    ///
    /// ```
    /// use gatehouse_client::{Error, Operation};
    /// let err = Error::NotFound { operation: Operation::GetInteraction, detail: "Interaction not found".into() };
    /// assert_eq!(err.operation(), Operation::GetInteraction);
    /// ```
    pub fn operation(&self) -> Operation {
        match self {
            Self::AlreadyAnswered { operation, .. }
            | Self::AnswerOwnerUnknown { operation, .. }
            | Self::ProjectMismatch { operation, .. }
            | Self::NotFound { operation, .. }
            | Self::RevisionConflict { operation, .. }
            | Self::OperationConflict { operation, .. }
            | Self::DispatchOwnershipLost { operation, .. }
            | Self::ResolvedDifferently { operation, .. }
            | Self::InterventionLimit { operation, .. }
            | Self::SessionNotActive { operation, .. }
            | Self::TurnNotContinuable { operation, .. }
            | Self::StaleExecution { operation, .. }
            | Self::IdempotencyKeyReused { operation, .. }
            | Self::StaleGate { operation, .. }
            | Self::Conflict { operation, .. }
            | Self::CapabilityUnavailable { operation, .. }
            | Self::Unauthorized { operation, .. }
            | Self::Forbidden { operation, .. }
            | Self::TenantRejected { operation, .. }
            | Self::Validation { operation, .. }
            | Self::Invalid { operation, .. }
            | Self::PayloadTooLarge { operation, .. }
            | Self::RateLimited { operation, .. }
            | Self::Server { operation, .. }
            | Self::Transport { operation, .. }
            | Self::Decode { operation, .. }
            | Self::StreamFailed { operation, .. }
            | Self::AcceptedUnreadable { operation, .. }
            | Self::Timeout { operation, .. }
            | Self::Config { operation, .. } => *operation,
        }
    }

    /// What kind of failure this is, without its texts (see [`ErrorKind`]).
    ///
    /// ```
    /// use gatehouse_client::{Error, ErrorKind, Operation};
    /// let err = Error::NotFound { operation: Operation::GetInteraction, detail: "Interaction not found".into() };
    /// assert_eq!(err.kind(), ErrorKind::NotFound);
    /// assert_eq!(err.kind().as_str(), "not_found");
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self {
            Self::AlreadyAnswered { .. } => ErrorKind::AlreadyAnswered,
            Self::AnswerOwnerUnknown { .. } => ErrorKind::AnswerOwnerUnknown,
            Self::ProjectMismatch { .. } => ErrorKind::ProjectMismatch,
            Self::NotFound { .. } => ErrorKind::NotFound,
            Self::RevisionConflict { .. } => ErrorKind::RevisionConflict,
            Self::OperationConflict { .. } => ErrorKind::OperationConflict,
            Self::DispatchOwnershipLost { .. } => ErrorKind::DispatchOwnershipLost,
            Self::ResolvedDifferently { .. } => ErrorKind::ResolvedDifferently,
            Self::InterventionLimit { .. } => ErrorKind::InterventionLimit,
            Self::SessionNotActive { .. } => ErrorKind::SessionNotActive,
            Self::TurnNotContinuable { .. } => ErrorKind::TurnNotContinuable,
            Self::StaleExecution { .. } => ErrorKind::StaleExecution,
            Self::IdempotencyKeyReused { .. } => ErrorKind::IdempotencyKeyReused,
            Self::StaleGate { .. } => ErrorKind::StaleGate,
            Self::Conflict { .. } => ErrorKind::Conflict,
            Self::CapabilityUnavailable { .. } => ErrorKind::CapabilityUnavailable,
            Self::Unauthorized { .. } => ErrorKind::Unauthorized,
            Self::Forbidden { .. } => ErrorKind::Forbidden,
            Self::TenantRejected { .. } => ErrorKind::TenantRejected,
            Self::Validation { .. } => ErrorKind::Validation,
            Self::Invalid { .. } => ErrorKind::Invalid,
            Self::PayloadTooLarge { .. } => ErrorKind::PayloadTooLarge,
            Self::RateLimited { .. } => ErrorKind::RateLimited,
            Self::Server { .. } => ErrorKind::Server,
            Self::Transport { .. } => ErrorKind::Transport,
            Self::Decode { .. } => ErrorKind::Decode,
            Self::StreamFailed { .. } => ErrorKind::StreamFailed,
            Self::AcceptedUnreadable { .. } => ErrorKind::AcceptedUnreadable,
            Self::Timeout { .. } => ErrorKind::Timeout,
            Self::Config { .. } => ErrorKind::Config,
        }
    }

    /// True when the same call may succeed if tried again later: transport errors,
    /// timeouts, 429 and 5xx. Conflicts, 4xx, decode errors and an absent capability
    /// are facts a retry cannot change. The rule is [`ErrorKind::is_retryable`].
    ///
    /// ```
    /// use gatehouse_client::{Error, Operation};
    /// let busy = Error::Server { operation: Operation::QueryInteractions, status: 503, code: None, body: String::new() };
    /// assert!(busy.is_retryable());
    /// let gone = Error::AlreadyAnswered { operation: Operation::RespondInteraction, interaction_status: None, detail: String::new() };
    /// assert!(!gone.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        self.kind().is_retryable(self.http_status())
    }

    /// The HTTP status the server answered with, when the error came from an answer.
    ///
    /// ```
    /// use gatehouse_client::{Error, Operation};
    /// let err = Error::AlreadyAnswered { operation: Operation::RespondInteraction, interaction_status: None, detail: String::new() };
    /// assert_eq!(err.http_status(), Some(409));
    /// ```
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::AlreadyAnswered { .. }
            | Self::RevisionConflict { .. }
            | Self::OperationConflict { .. }
            | Self::DispatchOwnershipLost { .. }
            | Self::ResolvedDifferently { .. }
            | Self::InterventionLimit { .. }
            | Self::SessionNotActive { .. }
            | Self::TurnNotContinuable { .. }
            | Self::StaleExecution { .. }
            | Self::IdempotencyKeyReused { .. }
            | Self::StaleGate { .. }
            | Self::Conflict { .. } => Some(409),
            Self::NotFound { .. } => Some(404),
            Self::Unauthorized { .. } => Some(401),
            Self::Forbidden { .. } => Some(403),
            Self::PayloadTooLarge { .. } => Some(413),
            Self::RateLimited { .. } => Some(429),
            Self::Invalid { status, .. }
            | Self::TenantRejected { status, .. }
            | Self::Validation { status, .. }
            | Self::Server { status, .. }
            | Self::Decode { status, .. }
            | Self::AcceptedUnreadable { status, .. } => Some(*status),
            // Both are read from answers that succeeded (a row read back, a 200 page).
            Self::AnswerOwnerUnknown { .. } | Self::ProjectMismatch { .. } => None,
            Self::CapabilityUnavailable { .. }
            | Self::StreamFailed { .. }
            | Self::Transport { .. }
            | Self::Timeout { .. }
            | Self::Config { .. } => None,
        }
    }
}

/// What kind of failure an [`Error`] is, without its texts: one kind per [`Error`]
/// variant. The one table every consumer derives from: [`as_str`](Self::as_str) names
/// it in spans and logs, [`is_retryable`](Self::is_retryable) is the retry rule, the
/// FFI's error variant and the CLI's exit code are mapped from it.
///
/// ```
/// use gatehouse_client::ErrorKind;
/// assert_eq!(ErrorKind::AlreadyAnswered.as_str(), "already_answered");
/// assert_eq!(ErrorKind::Timeout.to_string(), "timeout");
/// assert!(ErrorKind::ALL.contains(&ErrorKind::Config));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// See [`Error::AlreadyAnswered`].
    AlreadyAnswered,
    /// See [`Error::AnswerOwnerUnknown`].
    AnswerOwnerUnknown,
    /// See [`Error::NotFound`].
    NotFound,
    /// See [`Error::RevisionConflict`].
    RevisionConflict,
    /// See [`Error::OperationConflict`].
    OperationConflict,
    /// See [`Error::DispatchOwnershipLost`].
    DispatchOwnershipLost,
    /// See [`Error::ResolvedDifferently`].
    ResolvedDifferently,
    /// See [`Error::InterventionLimit`].
    InterventionLimit,
    /// See [`Error::SessionNotActive`].
    SessionNotActive,
    /// See [`Error::TurnNotContinuable`].
    TurnNotContinuable,
    /// See [`Error::StaleExecution`].
    StaleExecution,
    /// See [`Error::IdempotencyKeyReused`].
    IdempotencyKeyReused,
    /// See [`Error::StaleGate`].
    StaleGate,
    /// See [`Error::Conflict`].
    Conflict,
    /// See [`Error::CapabilityUnavailable`].
    CapabilityUnavailable,
    /// See [`Error::Unauthorized`].
    Unauthorized,
    /// See [`Error::Forbidden`].
    Forbidden,
    /// See [`Error::ProjectMismatch`].
    ProjectMismatch,
    /// See [`Error::TenantRejected`].
    TenantRejected,
    /// See [`Error::Validation`].
    Validation,
    /// See [`Error::Invalid`].
    Invalid,
    /// See [`Error::PayloadTooLarge`].
    PayloadTooLarge,
    /// See [`Error::RateLimited`].
    RateLimited,
    /// See [`Error::Server`].
    Server,
    /// See [`Error::Transport`].
    Transport,
    /// See [`Error::Decode`].
    Decode,
    /// See [`Error::StreamFailed`].
    StreamFailed,
    /// See [`Error::AcceptedUnreadable`].
    AcceptedUnreadable,
    /// See [`Error::Timeout`].
    Timeout,
    /// See [`Error::Config`].
    Config,
}

impl ErrorKind {
    /// Every kind, in declaration order (for tables that map each kind elsewhere, and
    /// their tests).
    ///
    /// ```
    /// assert_eq!(gatehouse_client::ErrorKind::ALL.len(), 30);
    /// ```
    pub const ALL: &'static [ErrorKind] = &[
        Self::AlreadyAnswered,
        Self::AnswerOwnerUnknown,
        Self::NotFound,
        Self::RevisionConflict,
        Self::OperationConflict,
        Self::DispatchOwnershipLost,
        Self::ResolvedDifferently,
        Self::InterventionLimit,
        Self::SessionNotActive,
        Self::TurnNotContinuable,
        Self::StaleExecution,
        Self::IdempotencyKeyReused,
        Self::StaleGate,
        Self::Conflict,
        Self::CapabilityUnavailable,
        Self::Unauthorized,
        Self::Forbidden,
        Self::ProjectMismatch,
        Self::TenantRejected,
        Self::Validation,
        Self::Invalid,
        Self::PayloadTooLarge,
        Self::RateLimited,
        Self::Server,
        Self::Transport,
        Self::Decode,
        Self::StreamFailed,
        Self::AcceptedUnreadable,
        Self::Timeout,
        Self::Config,
    ];

    /// The stable snake_case name, e.g. `"revision_conflict"` (the `outcome` of a
    /// `gatehouse_call` span). Never changes once published.
    ///
    /// ```
    /// assert_eq!(gatehouse_client::ErrorKind::CapabilityUnavailable.as_str(), "capability_unavailable");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AlreadyAnswered => "already_answered",
            Self::AnswerOwnerUnknown => "answer_owner_unknown",
            Self::NotFound => "not_found",
            Self::RevisionConflict => "revision_conflict",
            Self::OperationConflict => "operation_conflict",
            Self::DispatchOwnershipLost => "dispatch_ownership_lost",
            Self::ResolvedDifferently => "resolved_differently",
            Self::InterventionLimit => "intervention_limit",
            Self::SessionNotActive => "session_not_active",
            Self::TurnNotContinuable => "turn_not_continuable",
            Self::StaleExecution => "stale_execution",
            Self::IdempotencyKeyReused => "idempotency_key_reused",
            Self::StaleGate => "stale_gate",
            Self::Conflict => "conflict",
            Self::CapabilityUnavailable => "capability_unavailable",
            Self::Unauthorized => "unauthorized",
            Self::Forbidden => "forbidden",
            Self::ProjectMismatch => "project_mismatch",
            Self::TenantRejected => "tenant_rejected",
            Self::Validation => "validation",
            Self::Invalid => "invalid",
            Self::PayloadTooLarge => "payload_too_large",
            Self::RateLimited => "rate_limited",
            Self::Server => "server",
            Self::Transport => "transport",
            Self::Decode => "decode",
            Self::StreamFailed => "stream_failed",
            Self::AcceptedUnreadable => "accepted_unreadable",
            Self::Timeout => "timeout",
            Self::Config => "config",
        }
    }

    /// The retry rule: an error of this kind, answered with `http_status` (if any),
    /// may succeed if tried again. Transport failures, timeouts and 429 may; a server
    /// error may when its status is 5xx (not for any other unexpected status);
    /// everything else is a fact a retry cannot change.
    ///
    /// ```
    /// use gatehouse_client::ErrorKind;
    /// assert!(ErrorKind::Server.is_retryable(Some(503)));
    /// assert!(!ErrorKind::Server.is_retryable(Some(418)));
    /// assert!(ErrorKind::Timeout.is_retryable(None));
    /// assert!(!ErrorKind::AlreadyAnswered.is_retryable(Some(409)));
    /// ```
    pub fn is_retryable(self, http_status: Option<u16>) -> bool {
        match self {
            Self::Transport | Self::Timeout | Self::RateLimited => true,
            Self::Server => http_status.is_some_and(|status| status >= 500),
            _ => false,
        }
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The client's result type.
///
/// ```
/// fn check() -> gatehouse_client::Result<u32> { Ok(1) }
/// assert_eq!(check().ok(), Some(1));
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kind_names_are_unique() {
        let names: std::collections::HashSet<&str> =
            ErrorKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(names.len(), ErrorKind::ALL.len());
    }
}
