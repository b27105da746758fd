//! The one error type of the client, and how HTTP answers map onto it.
//!
//! Every variant names the [`Operation`] that failed and answers
//! [`Error::is_retryable`]. Conflicts that share the 409 status are told apart
//! (CONTRACT.md C3) from Gatehouse's machine code when the server sends one, else
//! from the exact upstream messages of Agenta and AgentPlat.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use gatehouse_wire::capabilities::Capability;
use gatehouse_wire::error::{messages, GatehouseCode};

/// Longest server detail kept in an error, in characters.
pub(crate) const MAX_DETAIL_CHARS: usize = 512;
/// Longest raw-body snippet kept in an error, in characters.
pub(crate) const MAX_SNIPPET_CHARS: usize = 256;

/// The client call that failed. Its [`Display`](fmt::Display) is the snake_case name
/// used in tracing spans and error messages.
///
/// ```
/// use gatehouse_client::Operation;
/// assert_eq!(Operation::RespondInteraction.to_string(), "respond_interaction");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// Building a [`Client`](crate::Client) (bad base URL, unusable API key).
    BuildClient,
    /// `POST /api/sessions/interactions/query`.
    QueryInteractions,
    /// `GET /api/sessions/interactions/{id}`.
    GetInteraction,
    /// `POST /api/sessions/interactions/{id}/respond`.
    RespondInteraction,
    /// `POST /api/sessions/interactions/`.
    CreateInteraction,
    /// `POST /api/sessions/interactions/transition`.
    TransitionInteraction,
    /// `POST /api/sessions/interactions/cancel-stale`.
    CancelStaleInteractions,
    /// `GET /api/sessions/streams/watch` (SSE).
    WatchInteractions,
    /// `GET /api/capabilities`.
    GetCapabilities,
    /// `POST /run`, read to its result.
    Run,
    /// `POST /run`, read as an NDJSON stream.
    StreamRun,
    /// `GET /rooms/{room}/execution-sessions/{session}`.
    GetExecutionSession,
    /// `POST /rooms/{room}/execution-sessions/{session}/interventions`.
    RequestIntervention,
    /// `GET /rooms/{room}/execution-sessions/{session}/events`.
    ListExecutionEvents,
    /// `GET /rooms/{room}/execution-sessions/{session}/events/stream` (SSE).
    WatchExecutionEvents,
    /// `POST /api/invoke` (the service tier).
    Invoke,
    /// `GET /api/sessions/{session_id}/turns`.
    ListTurns,
    /// `POST /api/workflows/revisions/commit`.
    CommitRevision,
}

impl Operation {
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
            Self::WatchExecutionEvents => "watch_execution_events",
            Self::Invoke => "invoke",
            Self::ListTurns => "list_turns",
            Self::CommitRevision => "commit_revision",
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
            Self::BuildClient | Self::GetCapabilities => None,
            Self::QueryInteractions
            | Self::GetInteraction
            | Self::RespondInteraction
            | Self::CreateInteraction
            | Self::TransitionInteraction
            | Self::CancelStaleInteractions => Some(Capability::Interactions),
            Self::WatchInteractions => Some(Capability::InteractionWatch),
            Self::Run | Self::StreamRun => Some(Capability::Runs),
            Self::GetExecutionSession | Self::RequestIntervention | Self::ListExecutionEvents => {
                Some(Capability::Execution)
            }
            Self::WatchExecutionEvents => Some(Capability::ExecutionEventStream),
            Self::Invoke | Self::ListTurns | Self::CommitRevision => Some(Capability::Invoke),
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
/// without parsing strings; every variant names its [`Operation`].
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
pub enum Error {
    /// 409: the interaction is no longer pending (answered elsewhere, or cancelled).
    /// Benign for a person: the gate is settled.
    #[error("{operation}: interaction is no longer pending ({detail})")]
    AlreadyAnswered {
        /// The failed call.
        operation: Operation,
        /// The server's text.
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
    /// Any other 409: `code` is Gatehouse's machine code when the server sent one
    /// (e.g. `IDEMPOTENCY_KEY_REUSED`, `BINDING_CONFLICT`, `INTERVENTION_LIMIT`, `INVALID_STATE`).
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
    /// 403: the key may not do this.
    #[error("{operation}: forbidden ({detail})")]
    Forbidden {
        /// The failed call.
        operation: Operation,
        /// The server's text.
        detail: String,
    },
    /// 400, 422 or another 4xx: the server refused the request as malformed.
    /// `detail` is the server's explanation (FastAPI validation lists are joined).
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
            | Self::NotFound { operation, .. }
            | Self::RevisionConflict { operation, .. }
            | Self::OperationConflict { operation, .. }
            | Self::DispatchOwnershipLost { operation, .. }
            | Self::ResolvedDifferently { operation, .. }
            | Self::Conflict { operation, .. }
            | Self::CapabilityUnavailable { operation, .. }
            | Self::Unauthorized { operation, .. }
            | Self::Forbidden { operation, .. }
            | Self::Invalid { operation, .. }
            | Self::PayloadTooLarge { operation, .. }
            | Self::RateLimited { operation, .. }
            | Self::Server { operation, .. }
            | Self::Transport { operation, .. }
            | Self::Decode { operation, .. }
            | Self::Timeout { operation, .. }
            | Self::Config { operation, .. } => *operation,
        }
    }

    /// True when the same call may succeed if tried again later: transport errors,
    /// timeouts, 429 and 5xx. Conflicts, 4xx, decode errors and an absent capability
    /// are facts a retry cannot change.
    ///
    /// ```
    /// use gatehouse_client::{Error, Operation};
    /// let busy = Error::Server { operation: Operation::QueryInteractions, status: 503, code: None, body: String::new() };
    /// assert!(busy.is_retryable());
    /// let gone = Error::AlreadyAnswered { operation: Operation::RespondInteraction, detail: String::new() };
    /// assert!(!gone.is_retryable());
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self {
            Self::Transport { .. } | Self::Timeout { .. } | Self::RateLimited { .. } => true,
            Self::Server { status, .. } => *status >= 500,
            _ => false,
        }
    }

    /// The HTTP status the server answered with, when the error came from an answer.
    ///
    /// ```
    /// use gatehouse_client::{Error, Operation};
    /// let err = Error::AlreadyAnswered { operation: Operation::RespondInteraction, detail: String::new() };
    /// assert_eq!(err.http_status(), Some(409));
    /// ```
    pub fn http_status(&self) -> Option<u16> {
        match self {
            Self::AlreadyAnswered { .. }
            | Self::RevisionConflict { .. }
            | Self::OperationConflict { .. }
            | Self::DispatchOwnershipLost { .. }
            | Self::ResolvedDifferently { .. }
            | Self::Conflict { .. } => Some(409),
            Self::NotFound { .. } => Some(404),
            Self::Unauthorized { .. } => Some(401),
            Self::Forbidden { .. } => Some(403),
            Self::PayloadTooLarge { .. } => Some(413),
            Self::RateLimited { .. } => Some(429),
            Self::Invalid { status, .. }
            | Self::Server { status, .. }
            | Self::Decode { status, .. } => Some(*status),
            Self::CapabilityUnavailable { .. }
            | Self::Transport { .. }
            | Self::Timeout { .. }
            | Self::Config { .. } => None,
        }
    }
}

/// The client's result type.
///
/// ```
/// fn check() -> gatehouse_client::Result<u32> { Ok(1) }
/// assert_eq!(check().ok(), Some(1));
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

// ---------------------------------------------------------------------------------
// Mapping an HTTP error answer onto Error.
// ---------------------------------------------------------------------------------

/// What an error body says, whichever of the three shapes it has.
#[derive(Debug, Default)]
pub(crate) struct ErrorBodyInfo {
    /// Gatehouse's machine code (`code` beside `detail`, or `error.gatehouseCode`).
    pub gatehouse_code: Option<GatehouseCode>,
    /// AgentPlat's coarse code (`error.code`).
    pub agentplat_code: Option<String>,
    /// The readable message (`detail` or `error.message`), bounded.
    pub message: Option<String>,
}

/// Read the error body shapes: FastAPI `{"detail": str|list, "code"?}` and AgentPlat
/// `{"error": {"code", "message", "gatehouseCode"?}}`.
pub(crate) fn parse_error_body(body: &[u8]) -> ErrorBodyInfo {
    let Ok(value) = serde_json::from_slice::<serde_json::Value>(body) else {
        return ErrorBodyInfo::default();
    };
    let mut info = ErrorBodyInfo::default();
    let Some(obj) = value.as_object() else {
        return info;
    };
    if let Some(detail) = obj.get("detail") {
        let fastapi = gatehouse_wire::error::FastApiErrorBody {
            detail: detail.clone(),
            code: None,
            extra: Default::default(),
        };
        info.message = Some(bound_chars(&fastapi.detail_text(), MAX_DETAIL_CHARS));
        info.gatehouse_code = obj
            .get("code")
            .and_then(|c| c.as_str())
            .and_then(GatehouseCode::parse);
    }
    if let Some(err) = obj.get("error").and_then(|e| e.as_object()) {
        if let Some(code) = err.get("code").and_then(|c| c.as_str()) {
            info.agentplat_code = Some(bound_chars(code, 64));
        }
        if let Some(message) = err.get("message").and_then(|m| m.as_str()) {
            info.message = Some(bound_chars(message, MAX_DETAIL_CHARS));
        }
        if let Some(code) = err
            .get("gatehouseCode")
            .and_then(|c| c.as_str())
            .and_then(GatehouseCode::parse)
        {
            info.gatehouse_code = Some(code);
        }
    }
    // Gatehouse's own code wins; a bare `code` on a body without `detail` is read too.
    if info.gatehouse_code.is_none() {
        info.gatehouse_code = obj
            .get("code")
            .and_then(|c| c.as_str())
            .and_then(GatehouseCode::parse);
    }
    info
}

/// True when a 404 body says the ROUTE is absent (not the addressed thing): FastAPI's
/// default `{"detail":"Not Found"}`, Gatehouse's `ROUTE_NOT_FOUND`, or AgentPlat's
/// `{"error":{"code":"NOT_FOUND","message":"Route not found"}}`.
pub(crate) fn is_route_not_found(status: u16, info: &ErrorBodyInfo) -> bool {
    if status != 404 {
        return false;
    }
    if let Some(code) = info.gatehouse_code {
        return code == GatehouseCode::RouteNotFound;
    }
    matches!(
        info.message.as_deref(),
        Some("Not Found") | Some(messages::ROUTE_NOT_FOUND)
    )
}

/// Map a non-success answer onto an [`Error`]. `body` is the (bounded) raw body,
/// `secret` the API key to scrub from any text kept.
pub(crate) fn classify(
    operation: Operation,
    status: u16,
    retry_after: Option<Duration>,
    body: &[u8],
    secrets: &[String],
) -> Error {
    let info = parse_error_body(body);
    let detail = || -> String {
        let text = match &info.message {
            Some(m) => m.clone(),
            None => snippet(body, MAX_DETAIL_CHARS),
        };
        scrub_secret(&text, secrets)
    };

    if let Some(code) = info.gatehouse_code {
        use GatehouseCode as G;
        return match code {
            G::AlreadyAnswered => Error::AlreadyAnswered {
                operation,
                detail: detail(),
            },
            G::RevisionConflict => Error::RevisionConflict {
                operation,
                detail: detail(),
            },
            G::OperationConflict => Error::OperationConflict {
                operation,
                detail: detail(),
            },
            G::DispatchOwnershipLost => Error::DispatchOwnershipLost {
                operation,
                detail: detail(),
            },
            G::ResolvedDifferently => Error::ResolvedDifferently {
                operation,
                detail: detail(),
            },
            G::NotFound | G::RouteNotFound => Error::NotFound {
                operation,
                detail: detail(),
            },
            G::Unauthorized => Error::Unauthorized {
                operation,
                detail: detail(),
            },
            G::Forbidden => Error::Forbidden {
                operation,
                detail: detail(),
            },
            G::BadRequest | G::ValidationError => Error::Invalid {
                operation,
                status,
                detail: detail(),
            },
            G::PayloadTooLarge => Error::PayloadTooLarge {
                operation,
                detail: detail(),
            },
            G::IdempotencyKeyReused
            | G::BindingConflict
            | G::InterventionLimit
            | G::InvalidState
            | G::Conflict => Error::Conflict {
                operation,
                code: Some(code),
                detail: detail(),
            },
            G::AdapterError | G::InternalError | G::Unavailable => Error::Server {
                operation,
                status,
                code: Some(code),
                body: detail(),
            },
        };
    }

    match status {
        401 => Error::Unauthorized {
            operation,
            detail: detail(),
        },
        403 => Error::Forbidden {
            operation,
            detail: detail(),
        },
        404 => Error::NotFound {
            operation,
            detail: detail(),
        },
        409 => classify_conflict(operation, info.message.as_deref(), detail()),
        413 => Error::PayloadTooLarge {
            operation,
            detail: detail(),
        },
        429 => Error::RateLimited {
            operation,
            retry_after,
        },
        400..=499 => Error::Invalid {
            operation,
            status,
            detail: detail(),
        },
        _ => Error::Server {
            operation,
            status,
            code: None,
            body: scrub_secret(&redacted_snippet(body, MAX_SNIPPET_CHARS), secrets),
        },
    }
}

/// A 409 without Gatehouse's code: tell the meanings apart by the upstream messages.
fn classify_conflict(operation: Operation, message: Option<&str>, detail: String) -> Error {
    match message {
        Some(messages::INTERACTION_NOT_PENDING) => Error::AlreadyAnswered { operation, detail },
        Some(messages::REVISION_CONFLICT) | Some(messages::CHANGED_CONCURRENTLY) => {
            Error::RevisionConflict { operation, detail }
        }
        Some(messages::OPERATION_CONFLICT) => Error::OperationConflict { operation, detail },
        Some(messages::DISPATCH_OWNERSHIP_LOST) => {
            Error::DispatchOwnershipLost { operation, detail }
        }
        Some(messages::RESOLVED_DIFFERENTLY) => Error::ResolvedDifferently { operation, detail },
        // Agenta's respond has exactly one 409: the row is no longer pending (A5, A7).
        _ if operation == Operation::RespondInteraction => {
            Error::AlreadyAnswered { operation, detail }
        }
        _ => Error::Conflict {
            operation,
            code: None,
            detail,
        },
    }
}

/// Build a [`Error::Decode`] for a body that did not match its type.
pub(crate) fn decode_error(
    operation: Operation,
    status: u16,
    err: gatehouse_wire::WireDecodeError,
    body: &[u8],
    secrets: &[String],
) -> Error {
    Error::Decode {
        operation,
        status,
        path: err.path,
        reason: scrub_secret(&scrub_quoted_values(&err.reason), secrets),
        snippet: scrub_secret(&redacted_snippet(body, MAX_SNIPPET_CHARS), secrets),
    }
}

/// Map a reqwest failure onto [`Error::Timeout`] or [`Error::Transport`].
pub(crate) fn transport_error(
    operation: Operation,
    err: reqwest::Error,
    timeout: Duration,
) -> Error {
    if err.is_timeout() {
        return Error::Timeout {
            operation,
            after: timeout,
        };
    }
    let err = err.without_url();
    let detail = chain_text(&err);
    Error::Transport {
        operation,
        detail,
        source: Arc::new(err),
    }
}

/// The error and its sources as one line: `a: b: c`.
pub(crate) fn chain_text(err: &(dyn std::error::Error + 'static)) -> String {
    let mut parts = vec![err.to_string()];
    let mut current = err.source();
    while let Some(source) = current {
        let text = source.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        current = source.source();
    }
    bound_chars(&parts.join(": "), MAX_DETAIL_CHARS)
}

// ---------------------------------------------------------------------------------
// Bounding and redaction.
// ---------------------------------------------------------------------------------

/// Keys whose values are never kept in an error snippet.
const REDACTED_KEYS: &[&str] = &[
    "parameters",
    "effectiveparameters",
    "args",
    "input",
    "headers",
    "authorization",
    "credentials",
    "api_key",
    "apikey",
    "token",
    "password",
    "secret",
    "value",
];

/// At most `max` characters of `text`, with an ellipsis when cut.
pub(crate) fn bound_chars(text: &str, max: usize) -> String {
    let mut out: String = text.chars().take(max).collect();
    if text.chars().nth(max).is_some() {
        out.push('…');
    }
    out
}

/// A bounded, printable snippet of raw bytes.
pub(crate) fn snippet(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let cleaned: String = text
        .chars()
        .map(|c| if c.is_control() && c != ' ' { ' ' } else { c })
        .collect();
    let collapsed = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    bound_chars(&collapsed, max)
}

/// A bounded snippet of a body; when it is JSON, sensitive values are replaced first.
pub(crate) fn redacted_snippet(body: &[u8], max: usize) -> String {
    match serde_json::from_slice::<serde_json::Value>(body) {
        Ok(mut value) => {
            redact_value(&mut value);
            bound_chars(&value.to_string(), max)
        }
        Err(_) => snippet(body, max),
    }
}

fn redact_value(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if REDACTED_KEYS.contains(&key.to_ascii_lowercase().as_str()) {
                    *inner = serde_json::Value::String("[redacted]".to_string());
                } else {
                    redact_value(inner);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(redact_value),
        _ => {}
    }
}

/// serde's messages quote offending string values (`invalid type: string "..."`);
/// keep the shape of the message, not the value.
fn scrub_quoted_values(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len());
    let mut rest = reason;
    while let Some(start) = rest.find('"') {
        out.push_str(&rest[..=start]);
        let after = &rest[start + 1..];
        match after.find('"') {
            Some(end) => {
                out.push('…');
                out.push('"');
                rest = &after[end + 1..];
            }
            None => {
                out.push('…');
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Remove the API key and runner token from a text (a hostile server may echo the header).
pub(crate) fn scrub_secret(text: &str, secrets: &[String]) -> String {
    secrets
        .iter()
        .filter(|s| !s.is_empty())
        .fold(text.to_string(), |acc, secret| {
            acc.replace(secret.as_str(), "[redacted]")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fastapi_not_pending_without_code_is_already_answered() {
        let body = br#"{"detail":"Interaction is no longer pending"}"#;
        let err = classify(Operation::TransitionInteraction, 409, None, body, &[]);
        assert!(
            matches!(
                err,
                Error::AlreadyAnswered {
                    operation: Operation::TransitionInteraction,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    #[test]
    fn gatehouse_code_takes_precedence_over_message() {
        let body =
            br#"{"detail":"Interaction is no longer pending","code":"IDEMPOTENCY_KEY_REUSED"}"#;
        let err = classify(Operation::RespondInteraction, 409, None, body, &[]);
        assert!(
            matches!(
                err,
                Error::Conflict {
                    code: Some(GatehouseCode::IdempotencyKeyReused),
                    ..
                }
            ),
            "{err:?}"
        );
        let body = br#"{"error":{"code":"CONFLICT","message":"whatever","gatehouseCode":"DISPATCH_OWNERSHIP_LOST"}}"#;
        let err = classify(Operation::RequestIntervention, 409, None, body, &[]);
        assert!(
            matches!(err, Error::DispatchOwnershipLost { .. }),
            "{err:?}"
        );
    }

    #[test]
    fn agentplat_messages_map_to_typed_conflicts() {
        let cases = [
            (messages::REVISION_CONFLICT, "RevisionConflict"),
            (messages::CHANGED_CONCURRENTLY, "RevisionConflict"),
            (messages::OPERATION_CONFLICT, "OperationConflict"),
            (messages::DISPATCH_OWNERSHIP_LOST, "DispatchOwnershipLost"),
            (messages::RESOLVED_DIFFERENTLY, "ResolvedDifferently"),
            ("something else", "Conflict"),
        ];
        for (message, expected) in cases {
            let body =
                serde_json::json!({"error": {"code": "CONFLICT", "message": message}}).to_string();
            let err = classify(
                Operation::RequestIntervention,
                409,
                None,
                body.as_bytes(),
                &[],
            );
            let name = format!("{err:?}");
            assert!(name.starts_with(expected), "{message}: {name}");
        }
    }

    #[test]
    fn route_not_found_is_recognised_in_all_shapes() {
        for body in [
            &br#"{"detail":"Not Found"}"#[..],
            br#"{"detail":"no such route","code":"ROUTE_NOT_FOUND"}"#,
            br#"{"error":{"code":"NOT_FOUND","message":"Route not found"}}"#,
        ] {
            assert!(is_route_not_found(404, &parse_error_body(body)));
        }
        for body in [
            &br#"{"detail":"Interaction not found"}"#[..],
            br#"{"error":{"code":"NOT_FOUND","message":"Execution session not found"}}"#,
            br#"{"detail":"Not Found","code":"NOT_FOUND"}"#,
            b"<html>Not Found</html>",
        ] {
            assert!(!is_route_not_found(404, &parse_error_body(body)));
        }
    }

    #[test]
    fn validation_list_is_joined_and_html_is_bounded() {
        let body =
            br#"{"detail":[{"loc":["body","answer"],"msg":"field required","type":"missing"}]}"#;
        let err = classify(Operation::RespondInteraction, 422, None, body, &[]);
        match err {
            Error::Invalid {
                status: 422,
                detail,
                ..
            } => assert_eq!(detail, "body.answer: field required"),
            other => panic!("{other:?}"),
        }
        let html = format!("<html><body>{}</body></html>", "x".repeat(10_000));
        let err = classify(Operation::GetInteraction, 502, None, html.as_bytes(), &[]);
        match err {
            Error::Server {
                status: 502, body, ..
            } => {
                assert!(body.starts_with("<html>"));
                assert!(body.chars().count() <= MAX_SNIPPET_CHARS + 1);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn snippets_redact_sensitive_values_and_the_key() {
        let body =
            br#"{"detail":"boom","parameters":{"agent":{"secret":"hunter2"}},"echo":"key-123"}"#;
        let text = redacted_snippet(body, 1000);
        assert!(!text.contains("hunter2"), "{text}");
        let text = scrub_secret(&text, &["key-123".to_string()]);
        assert!(!text.contains("key-123"), "{text}");
        assert_eq!(
            scrub_quoted_values(r#"invalid type: string "sk-live", expected u64"#),
            r#"invalid type: string "…", expected u64"#
        );
    }
}
