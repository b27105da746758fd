//! `GatehouseError`: the one error every export throws.
//!
//! It has one variant per `gatehouse_client::ErrorKind` (plus [`GatehouseError::Internal`]),
//! so a Kotlin `when`, a Swift `catch` or a Python `except` can tell "someone else
//! already answered" from "the network is down" without parsing strings. The variant
//! of a client error follows from its kind through ONE table (`variant_table!` below:
//! one line per variant, from which `kind`, `msg`/`details`, the variant of a kind and
//! `From<ErrorKind> for GatehouseErrorKind` are generated); whether it is retryable
//! follows from the client's rule (`ErrorKind::is_retryable`), never from a copy of it
//! here. Every variant carries `msg` (one readable sentence naming the operation that
//! failed) and `details` (the server's detail, the source chain, or a bounded body
//! snippet, when there is one). The fields are never called `message`: that name clashes
//! with `Throwable.message` in Kotlin.
//!
//! Adding a variant: its definition (with its docs, which the bindings carry) in
//! [`GatehouseError`] and [`GatehouseErrorKind`], and its line in the table; a variant
//! missing from the table does not compile.

use gatehouse_client::{Error as ClientError, ErrorKind};

/// Everything that can go wrong in a Gatehouse call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, uniffi::Error)]
#[uniffi::export(Display)]
pub enum GatehouseError {
    /// The interaction is no longer pending: another device (or the runner) answered it,
    /// or the gate was cancelled. Benign for a person: refresh and move on.
    #[error("{msg}")]
    AlreadyAnswered {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The interaction, execution session or other entity does not exist.
    #[error("{msg}")]
    NotFound {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// An execution-session write carried a stale revision: re-read and decide again.
    #[error("{msg}")]
    RevisionConflict {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The operation id is already bound to a different request.
    #[error("{msg}")]
    OperationConflict {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// An intervention dispatcher lost its lease before resolving.
    #[error("{msg}")]
    DispatchOwnershipLost {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The intervention was already resolved with a different outcome.
    #[error("{msg}")]
    ResolvedDifferently {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The execution session already holds the most interventions it may (256).
    #[error("{msg}")]
    InterventionLimit {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The execution session is not active (its run ended): nothing can be steered.
    #[error("{msg}")]
    SessionNotActive {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The turn the gate belongs to can no longer be continued (Agenta's durable respond:
    /// a Stop won, another answer continued it, or it was lost): the answer cannot apply.
    /// Refresh the session.
    #[error("{msg}")]
    TurnNotContinuable {
        /// What happened, with the turn's state or outcome when the server said it.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The interaction belongs to another execution than the one the answer expected:
    /// refresh and answer the gate of the current turn.
    #[error("{msg}")]
    StaleExecution {
        /// What happened, with the interaction's execution when the server said it.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The idempotency key was already used for another request. Never retried: send
    /// the new request under a new key.
    #[error("{msg}")]
    IdempotencyKeyReused {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The gate changed after the app read it (its digest is not the one the answer
    /// carried): nothing was recorded. Read the gate again, show it, and answer that.
    #[error("{msg}")]
    StaleGate {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The gate is answered, and this host cannot show whose answer landed (the answer's
    /// outcome was lost; the row records no answer to compare with ours). Show the gate
    /// as answered, never as "answered on another device".
    #[error("{msg}")]
    AnswerOwnerUnknown {
        /// What happened.
        msg: String,
        /// The interaction, and what its row showed.
        details: Option<String>,
    },
    /// The host answered with another project's rows than the one asked for (Agenta
    /// takes the project from its API key): nothing of them is shown.
    #[error("{msg}")]
    ProjectMismatch {
        /// What happened, naming both projects.
        msg: String,
        /// The asked and the answering project.
        details: Option<String>,
    },
    /// Any other conflict (409); `details` starts with Gatehouse's machine code when the
    /// server sent one (e.g. `INVALID_STATE`).
    #[error("{msg}")]
    Conflict {
        /// What happened, naming the operation that failed.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The host does not serve this capability (for example execution sessions on a
    /// `--no-execution` server). A fact about the host: retrying will not help.
    #[error("{msg}")]
    CapabilityUnavailable {
        /// What happened.
        msg: String,
        /// Which capability is missing.
        details: Option<String>,
    },
    /// The API key was missing or not accepted (401).
    #[error("{msg}")]
    Unauthorized {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// Permission denied (403): the API key, or on AgentPlat the requesting participant
    /// (not a human room participant, or without `run.intervene`), may not do this.
    #[error("{msg}")]
    Forbidden {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The host needs a tenant it was not given (set `tenant` in the config), or refuses
    /// the one given.
    #[error("{msg}")]
    TenantRejected {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The request failed the server's validation (400 `VALIDATION_ERROR`, 422), e.g. an
    /// invalid checkpoint.
    #[error("{msg}")]
    Validation {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The request was refused as malformed (400 and other 4xx), or an argument given to
    /// this library was not valid (a bad base URL, text that is not JSON).
    #[error("{msg}")]
    Invalid {
        /// What happened.
        msg: String,
        /// The server's (or the validator's) detail.
        details: Option<String>,
    },
    /// The request body is over the server's limit (413).
    #[error("{msg}")]
    PayloadTooLarge {
        /// What happened, naming the operation that failed.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The server asked to slow down (429) and the client's retries ran out.
    #[error("{msg}")]
    RateLimited {
        /// What happened, naming the operation that failed.
        msg: String,
        /// How long the server asked to wait, when it said.
        details: Option<String>,
    },
    /// The server failed (5xx), or answered with a status nobody expected.
    #[error("{msg}")]
    Server {
        /// What happened, with the status.
        msg: String,
        /// A bounded snippet of the body.
        details: Option<String>,
        /// The HTTP status.
        status: u16,
    },
    /// The request did not reach the server, or the connection broke.
    #[error("{msg}")]
    Transport {
        /// What happened.
        msg: String,
        /// The source chain.
        details: Option<String>,
    },
    /// The server answered with a body this library could not read.
    #[error("{msg}")]
    Decode {
        /// What happened, with the field path.
        msg: String,
        /// A bounded snippet of the body.
        details: Option<String>,
    },
    /// The server's event stream failed (its `agentplat.failed` frame).
    #[error("{msg}")]
    StreamFailed {
        /// What happened.
        msg: String,
        /// The failure frame's text.
        details: Option<String>,
    },
    /// The host ACCEPTED the write (2xx): it landed; only its answer could not be read.
    /// Do not report it as failed: read the state again.
    #[error("{msg}")]
    AcceptedUnreadable {
        /// What happened.
        msg: String,
        /// The operation id of the write, where and why its answer could not be read.
        details: Option<String>,
    },
    /// The call did not finish within the configured timeout.
    #[error("{msg}")]
    Timeout {
        /// What happened.
        msg: String,
        /// Which limit was hit.
        details: Option<String>,
    },
    /// The client was configured with something unusable (a bad base URL, an API key
    /// that is not a valid header value). Nothing was sent.
    #[error("{msg}")]
    Config {
        /// What happened, naming the operation that failed.
        msg: String,
        /// What is wrong.
        details: Option<String>,
    },
    /// A bug inside this library (a caught panic, or a runtime that could not start).
    /// Reported instead of crashing the app.
    #[error("{msg}")]
    Internal {
        /// What happened.
        msg: String,
        /// The panic payload or the failing component.
        details: Option<String>,
    },
}

/// The kind of a [`GatehouseError`], without its text: handy in records (approve-all
/// failures) and for `when`/`switch` over outcomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, uniffi::Enum)]
pub enum GatehouseErrorKind {
    /// See [`GatehouseError::AlreadyAnswered`].
    AlreadyAnswered,
    /// See [`GatehouseError::NotFound`].
    NotFound,
    /// See [`GatehouseError::RevisionConflict`].
    RevisionConflict,
    /// See [`GatehouseError::OperationConflict`].
    OperationConflict,
    /// See [`GatehouseError::DispatchOwnershipLost`].
    DispatchOwnershipLost,
    /// See [`GatehouseError::ResolvedDifferently`].
    ResolvedDifferently,
    /// See [`GatehouseError::InterventionLimit`].
    InterventionLimit,
    /// See [`GatehouseError::SessionNotActive`].
    SessionNotActive,
    /// See [`GatehouseError::TurnNotContinuable`].
    TurnNotContinuable,
    /// See [`GatehouseError::StaleExecution`].
    StaleExecution,
    /// See [`GatehouseError::IdempotencyKeyReused`].
    IdempotencyKeyReused,
    /// See [`GatehouseError::StaleGate`].
    StaleGate,
    /// See [`GatehouseError::AnswerOwnerUnknown`].
    AnswerOwnerUnknown,
    /// See [`GatehouseError::ProjectMismatch`].
    ProjectMismatch,
    /// See [`GatehouseError::Conflict`].
    Conflict,
    /// See [`GatehouseError::CapabilityUnavailable`].
    CapabilityUnavailable,
    /// See [`GatehouseError::Unauthorized`].
    Unauthorized,
    /// See [`GatehouseError::Forbidden`].
    Forbidden,
    /// See [`GatehouseError::TenantRejected`].
    TenantRejected,
    /// See [`GatehouseError::Validation`].
    Validation,
    /// See [`GatehouseError::Invalid`].
    Invalid,
    /// See [`GatehouseError::PayloadTooLarge`].
    PayloadTooLarge,
    /// See [`GatehouseError::RateLimited`].
    RateLimited,
    /// See [`GatehouseError::Server`].
    Server,
    /// See [`GatehouseError::Transport`].
    Transport,
    /// See [`GatehouseError::Decode`].
    Decode,
    /// See [`GatehouseError::StreamFailed`].
    StreamFailed,
    /// See [`GatehouseError::AcceptedUnreadable`].
    AcceptedUnreadable,
    /// See [`GatehouseError::Timeout`].
    Timeout,
    /// See [`GatehouseError::Config`].
    Config,
    /// See [`GatehouseError::Internal`].
    Internal,
}

/// THE table of variants: each line names a variant of both [`GatehouseError`] and
/// [`GatehouseErrorKind`] and the client's `ErrorKind` it comes from (`Internal`: none).
/// `{ status }` marks the one variant that also keeps the HTTP status. Every mapping
/// between the three enums (the kind of an error, its texts, the variant of a kind, the
/// kind of a client kind, and so the retry flag) is generated from it.
macro_rules! variant_table {
    ($($variant:ident $({ $status:ident })? $(<= $client_kind:ident)?,)*) => {
        impl GatehouseError {
            /// Which kind of error this is.
            ///
            /// ```
            /// use gatehouse_ffi::{GatehouseError, GatehouseErrorKind};
            /// let e = GatehouseError::Timeout { msg: "slow".into(), details: None };
            /// assert_eq!(e.kind(), GatehouseErrorKind::Timeout);
            /// ```
            pub fn kind(&self) -> GatehouseErrorKind {
                match self {
                    $(Self::$variant { .. } => GatehouseErrorKind::$variant,)*
                }
            }

            /// The `msg` and `details` of any variant.
            fn parts(&self) -> (&str, Option<&str>) {
                match self {
                    $(Self::$variant { msg, details, .. } => (msg.as_str(), details.as_deref()),)*
                }
            }

            /// The variant of `kind` with its texts; `status` is kept by
            /// [`GatehouseError::Server`] only.
            fn of_kind(
                kind: GatehouseErrorKind,
                msg: String,
                details: Option<String>,
                status: Option<u16>,
            ) -> Self {
                match kind {
                    $(GatehouseErrorKind::$variant => Self::$variant {
                        msg,
                        details,
                        $($status: status.unwrap_or_default(),)?
                    },)*
                }
            }
        }

        impl From<ErrorKind> for GatehouseErrorKind {
            fn from(kind: ErrorKind) -> Self {
                match kind {
                    $($(ErrorKind::$client_kind => Self::$variant,)?)*
                    // A kind newer than this crate is a bug here, reported, never dropped
                    // (the test every_client_kind_has_its_own_variant fails first).
                    _ => Self::Internal,
                }
            }
        }
    };
}

variant_table! {
    AlreadyAnswered <= AlreadyAnswered,
    NotFound <= NotFound,
    RevisionConflict <= RevisionConflict,
    OperationConflict <= OperationConflict,
    DispatchOwnershipLost <= DispatchOwnershipLost,
    ResolvedDifferently <= ResolvedDifferently,
    InterventionLimit <= InterventionLimit,
    SessionNotActive <= SessionNotActive,
    TurnNotContinuable <= TurnNotContinuable,
    StaleExecution <= StaleExecution,
    IdempotencyKeyReused <= IdempotencyKeyReused,
    StaleGate <= StaleGate,
    AnswerOwnerUnknown <= AnswerOwnerUnknown,
    ProjectMismatch <= ProjectMismatch,
    Conflict <= Conflict,
    CapabilityUnavailable <= CapabilityUnavailable,
    Unauthorized <= Unauthorized,
    Forbidden <= Forbidden,
    TenantRejected <= TenantRejected,
    Validation <= Validation,
    Invalid <= Invalid,
    PayloadTooLarge <= PayloadTooLarge,
    RateLimited <= RateLimited,
    Server { status } <= Server,
    Transport <= Transport,
    Decode <= Decode,
    StreamFailed <= StreamFailed,
    AcceptedUnreadable <= AcceptedUnreadable,
    Timeout <= Timeout,
    Config <= Config,
    Internal,
}

impl GatehouseError {
    /// The readable sentence of any variant.
    pub fn msg(&self) -> &str {
        self.parts().0
    }

    /// The detail of any variant, when it has one.
    pub fn details(&self) -> Option<&str> {
        self.parts().1
    }

    /// True when the same call may succeed if tried again later: transport failures,
    /// timeouts, 429 and 5xx. The rule is the client's (`ErrorKind::is_retryable`),
    /// applied to this error's kind and status, so it answers as
    /// `gatehouse_client::Error::is_retryable` did for the error it came from.
    /// Conflicts, refusals, decode errors, absent capabilities and internal errors are
    /// not retryable.
    ///
    /// ```
    /// use gatehouse_ffi::GatehouseError;
    /// let e = GatehouseError::AlreadyAnswered { msg: "answered".into(), details: None };
    /// assert!(!e.retryable());
    /// ```
    pub fn retryable(&self) -> bool {
        let status = match self {
            Self::Server { status, .. } => Some(*status),
            _ => None,
        };
        self.client_kind()
            .is_some_and(|kind| kind.is_retryable(status))
    }

    /// The client's kind of this error: the kind table read backwards (`None` for
    /// [`GatehouseError::Internal`], which no client kind maps to).
    fn client_kind(&self) -> Option<ErrorKind> {
        let kind = self.kind();
        ErrorKind::ALL
            .iter()
            .copied()
            .find(|client_kind| GatehouseErrorKind::from(*client_kind) == kind)
    }

    /// A [`GatehouseError::Internal`] for a value of the client (`what`) newer than this
    /// crate knows: reported instead of guessed.
    pub(crate) fn unknown_variant(what: &str) -> Self {
        Self::Internal {
            msg: format!(
                "gatehouse-client reported an {what} this library does not know (a bug in gatehouse-ffi)"
            ),
            details: None,
        }
    }

    /// An [`GatehouseError::Internal`] for a caught panic.
    pub(crate) fn from_panic(operation: &str, payload: &(dyn std::any::Any + Send)) -> Self {
        let text = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic with a non-text payload".to_string());
        Self::Internal {
            msg: format!(
                "{operation} failed: an internal error was caught (a bug in gatehouse-ffi)"
            ),
            details: Some(text),
        }
    }
}

// Exported without a `Result`, so no binding makes a caller `try` them. The hand-written
// layers read them as plain properties, named as on `GateFailure`: `kind` and `retryable`
// (Swift `Errors.swift`, Kotlin `Errors.kt`, Python `gatehouse/__init__.py`).
#[uniffi::export]
impl GatehouseError {
    /// True when the same call may succeed if tried again later (the `retryable`
    /// property in every language reads it).
    pub fn is_retryable(&self) -> bool {
        self.retryable()
    }

    /// The kind of this error, without its text (the `kind` property in every language
    /// reads it).
    pub fn error_kind(&self) -> GatehouseErrorKind {
        self.kind()
    }
}

impl From<ClientError> for GatehouseError {
    fn from(error: ClientError) -> Self {
        Self::of_kind(
            error.kind().into(),
            error.to_string(),
            details_of(&error),
            error.http_status(),
        )
    }
}

/// A failure reported inside a result rather than thrown (one gate of
/// [`GatehouseClient::approve_gates`](crate::GatehouseClient::approve_gates)): the error's
/// kind, texts and retry flag, exactly as the thrown [`GatehouseError`] would carry them.
#[derive(Debug, Clone, PartialEq, Eq, uniffi::Record)]
pub struct GateFailure {
    /// What kind of failure (`AlreadyAnswered`: settled elsewhere, not an error of yours).
    pub kind: GatehouseErrorKind,
    /// The error's sentence.
    pub msg: String,
    /// The error's detail (for `StaleExecution`, the gate's current execution).
    pub details: Option<String>,
    /// True when answering it again later may succeed.
    pub retryable: bool,
}

impl From<ClientError> for GateFailure {
    fn from(error: ClientError) -> Self {
        let error = GatehouseError::from(error);
        Self {
            kind: error.kind(),
            msg: error.msg().to_string(),
            details: error.details().map(str::to_string),
            retryable: error.retryable(),
        }
    }
}

/// The `details` text of a client error: the server's detail, the source chain, a
/// bounded body snippet, or which limit or capability was hit.
fn details_of(error: &ClientError) -> Option<String> {
    use gatehouse_client::Error as E;
    match error {
        E::AlreadyAnswered { detail, .. }
        | E::NotFound { detail, .. }
        | E::RevisionConflict { detail, .. }
        | E::OperationConflict { detail, .. }
        | E::DispatchOwnershipLost { detail, .. }
        | E::ResolvedDifferently { detail, .. }
        | E::InterventionLimit { detail, .. }
        | E::SessionNotActive { detail, .. }
        | E::TurnNotContinuable { detail, .. }
        | E::StaleExecution { detail, .. }
        | E::IdempotencyKeyReused { detail, .. }
        | E::StaleGate { detail, .. }
        | E::Unauthorized { detail, .. }
        | E::Forbidden { detail, .. }
        | E::TenantRejected { detail, .. }
        | E::Validation { detail, .. }
        | E::StreamFailed { detail, .. }
        | E::Invalid { detail, .. }
        | E::PayloadTooLarge { detail, .. }
        | E::Transport { detail, .. } => Some(detail.clone()),
        E::AnswerOwnerUnknown {
            interaction_id,
            detail,
            ..
        } => Some(format!("interaction {interaction_id}: {detail}")),
        E::ProjectMismatch {
            asked, answered, ..
        } => Some(format!("asked {asked}, answered {answered}")),
        E::Conflict { code, detail, .. } => Some(match code {
            Some(code) => format!("{code}: {detail}"),
            None => detail.clone(),
        }),
        E::CapabilityUnavailable { capability, .. } => Some(
            capability
                .map(|c| c.as_str())
                .unwrap_or("capabilities")
                .to_string(),
        ),
        E::RateLimited { retry_after, .. } => {
            retry_after.map(|d| format!("retry after {} ms", d.as_millis()))
        }
        E::Server { body, .. } => Some(body.clone()),
        E::Decode {
            path,
            reason,
            snippet,
            ..
        } => Some(format!("at {path}: {reason}; body: {snippet}")),
        E::AcceptedUnreadable {
            operation_id,
            path,
            reason,
            snippet,
            ..
        } => Some(format!(
            "{}at {path}: {reason}; body: {snippet}",
            operation_id
                .as_deref()
                .map(|id| format!("operation id {id}; "))
                .unwrap_or_default()
        )),
        E::Timeout { after, .. } => Some(format!("{} ms", after.as_millis())),
        E::Config { reason, .. } => Some(reason.clone()),
        // A variant newer than this crate: its message (`msg`) still says what happened.
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_client::Operation;

    #[test]
    fn every_client_kind_has_its_own_variant() {
        let mut seen = std::collections::HashSet::new();
        for kind in ErrorKind::ALL {
            let ffi_kind = GatehouseErrorKind::from(*kind);
            assert_ne!(
                ffi_kind,
                GatehouseErrorKind::Internal,
                "{kind} is not mapped"
            );
            assert!(seen.insert(ffi_kind), "{kind} shares {ffi_kind:?}");
            let error = GatehouseError::of_kind(ffi_kind, kind.to_string(), None, Some(503));
            assert_eq!(error.kind(), ffi_kind);
            assert_eq!(error.client_kind(), Some(*kind));
            assert_eq!(error.retryable(), kind.is_retryable(Some(503)), "{kind}");
        }
        let internal = GatehouseError::from_panic("test", &"boom");
        assert_eq!(internal.client_kind(), None);
        assert!(!internal.retryable());
    }

    #[test]
    fn client_errors_keep_their_kind_text_and_retryability() {
        let cases = vec![
            (
                ClientError::AlreadyAnswered {
                    operation: Operation::RespondInteraction,
                    interaction_status: None,
                    detail: "Interaction is no longer pending".into(),
                },
                GatehouseErrorKind::AlreadyAnswered,
                false,
            ),
            (
                ClientError::Server {
                    operation: Operation::QueryInteractions,
                    status: 503,
                    code: None,
                    body: "busy".into(),
                },
                GatehouseErrorKind::Server,
                true,
            ),
            (
                ClientError::Server {
                    operation: Operation::QueryInteractions,
                    status: 418,
                    code: None,
                    body: "teapot".into(),
                },
                GatehouseErrorKind::Server,
                false,
            ),
            (
                ClientError::Timeout {
                    operation: Operation::GetInteraction,
                    after: std::time::Duration::from_millis(1500),
                },
                GatehouseErrorKind::Timeout,
                true,
            ),
            (
                ClientError::CapabilityUnavailable {
                    operation: Operation::GetCapabilities,
                    capability: None,
                },
                GatehouseErrorKind::CapabilityUnavailable,
                false,
            ),
        ];
        for (client_error, kind, retryable) in cases {
            assert_eq!(client_error.is_retryable(), retryable, "{client_error}");
            let text = client_error.to_string();
            let error = GatehouseError::from(client_error);
            assert_eq!(error.kind(), kind);
            assert_eq!(error.retryable(), retryable, "{error:?}");
            assert_eq!(error.is_retryable(), retryable);
            assert_eq!(error.to_string(), text);
            assert_eq!(error.msg(), text);
            assert!(error.details().is_some());
        }
    }

    #[test]
    fn a_timeout_says_which_limit_was_hit() {
        let error = GatehouseError::from(ClientError::Timeout {
            operation: Operation::GetInteraction,
            after: std::time::Duration::from_millis(1500),
        });
        assert_eq!(error.details(), Some("1500 ms"));
    }
}
