//! `GatehouseError`: the one error every export throws.
//!
//! It mirrors `gatehouse_client::Error` variant for variant, so a Kotlin `when`, a Swift
//! `catch` or a Python `except` can tell "someone else already answered" from "the
//! network is down" without parsing strings. Every variant carries `msg` (one readable
//! sentence naming the operation that failed) and `details` (the server's detail, the
//! source chain, or a bounded body snippet, when there is one). The fields are never
//! called `message`: that name clashes with `Throwable.message` in Kotlin.

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
    /// Any other conflict (409); `details` starts with Gatehouse's machine code when the
    /// server sent one (e.g. `INTERVENTION_LIMIT`).
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
    /// The API key may not do this (403).
    #[error("{msg}")]
    Forbidden {
        /// What happened.
        msg: String,
        /// The server's detail.
        details: Option<String>,
    },
    /// The request was refused as malformed (400/422), or an argument given to this
    /// library was not valid (a bad base URL, text that is not JSON).
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
    /// See [`GatehouseError::Conflict`].
    Conflict,
    /// See [`GatehouseError::CapabilityUnavailable`].
    CapabilityUnavailable,
    /// See [`GatehouseError::Unauthorized`].
    Unauthorized,
    /// See [`GatehouseError::Forbidden`].
    Forbidden,
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
    /// See [`GatehouseError::Timeout`].
    Timeout,
    /// See [`GatehouseError::Config`].
    Config,
    /// See [`GatehouseError::Internal`].
    Internal,
}

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
            Self::AlreadyAnswered { .. } => GatehouseErrorKind::AlreadyAnswered,
            Self::NotFound { .. } => GatehouseErrorKind::NotFound,
            Self::RevisionConflict { .. } => GatehouseErrorKind::RevisionConflict,
            Self::OperationConflict { .. } => GatehouseErrorKind::OperationConflict,
            Self::DispatchOwnershipLost { .. } => GatehouseErrorKind::DispatchOwnershipLost,
            Self::ResolvedDifferently { .. } => GatehouseErrorKind::ResolvedDifferently,
            Self::Conflict { .. } => GatehouseErrorKind::Conflict,
            Self::CapabilityUnavailable { .. } => GatehouseErrorKind::CapabilityUnavailable,
            Self::Unauthorized { .. } => GatehouseErrorKind::Unauthorized,
            Self::Forbidden { .. } => GatehouseErrorKind::Forbidden,
            Self::Invalid { .. } => GatehouseErrorKind::Invalid,
            Self::PayloadTooLarge { .. } => GatehouseErrorKind::PayloadTooLarge,
            Self::RateLimited { .. } => GatehouseErrorKind::RateLimited,
            Self::Server { .. } => GatehouseErrorKind::Server,
            Self::Transport { .. } => GatehouseErrorKind::Transport,
            Self::Decode { .. } => GatehouseErrorKind::Decode,
            Self::Timeout { .. } => GatehouseErrorKind::Timeout,
            Self::Config { .. } => GatehouseErrorKind::Config,
            Self::Internal { .. } => GatehouseErrorKind::Internal,
        }
    }

    /// The readable sentence of any variant.
    pub fn msg(&self) -> &str {
        self.parts().0
    }

    /// The detail of any variant, when it has one.
    pub fn details(&self) -> Option<&str> {
        self.parts().1
    }

    fn parts(&self) -> (&str, Option<&str>) {
        match self {
            Self::AlreadyAnswered { msg, details }
            | Self::NotFound { msg, details }
            | Self::RevisionConflict { msg, details }
            | Self::OperationConflict { msg, details }
            | Self::DispatchOwnershipLost { msg, details }
            | Self::ResolvedDifferently { msg, details }
            | Self::Conflict { msg, details }
            | Self::CapabilityUnavailable { msg, details }
            | Self::Unauthorized { msg, details }
            | Self::Forbidden { msg, details }
            | Self::Invalid { msg, details }
            | Self::PayloadTooLarge { msg, details }
            | Self::RateLimited { msg, details }
            | Self::Server { msg, details, .. }
            | Self::Transport { msg, details }
            | Self::Decode { msg, details }
            | Self::Timeout { msg, details }
            | Self::Config { msg, details }
            | Self::Internal { msg, details } => (msg.as_str(), details.as_deref()),
        }
    }

    /// True when the same call may succeed if tried again later: transport failures,
    /// timeouts, 429 and 5xx, as `gatehouse_client::Error::is_retryable` says.
    /// Conflicts, refusals, decode errors and absent capabilities are not retryable.
    ///
    /// ```
    /// use gatehouse_ffi::GatehouseError;
    /// let e = GatehouseError::AlreadyAnswered { msg: "answered".into(), details: None };
    /// assert!(!e.retryable());
    /// ```
    pub fn retryable(&self) -> bool {
        match self {
            Self::Transport { .. } | Self::Timeout { .. } | Self::RateLimited { .. } => true,
            Self::Server { status, .. } => *status >= 500,
            _ => false,
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

#[uniffi::export]
impl GatehouseError {
    /// True when the same call may succeed if tried again later. Exported as a method
    /// (`e.isRetryable()` in Kotlin, `e.isRetryable()` in Swift, `e.is_retryable()` in Python).
    pub fn is_retryable(&self) -> Result<bool, GatehouseError> {
        Ok(self.retryable())
    }

    /// The kind of this error, without its text.
    pub fn error_kind(&self) -> Result<GatehouseErrorKind, GatehouseError> {
        Ok(self.kind())
    }
}

impl From<gatehouse_client::Error> for GatehouseError {
    fn from(error: gatehouse_client::Error) -> Self {
        use gatehouse_client::Error as E;
        let msg = error.to_string();
        match error {
            E::AlreadyAnswered { detail, .. } => Self::AlreadyAnswered {
                msg,
                details: Some(detail),
            },
            E::NotFound { detail, .. } => Self::NotFound {
                msg,
                details: Some(detail),
            },
            E::RevisionConflict { detail, .. } => Self::RevisionConflict {
                msg,
                details: Some(detail),
            },
            E::OperationConflict { detail, .. } => Self::OperationConflict {
                msg,
                details: Some(detail),
            },
            E::DispatchOwnershipLost { detail, .. } => Self::DispatchOwnershipLost {
                msg,
                details: Some(detail),
            },
            E::ResolvedDifferently { detail, .. } => Self::ResolvedDifferently {
                msg,
                details: Some(detail),
            },
            E::Conflict { code, detail, .. } => Self::Conflict {
                msg,
                details: Some(match code {
                    Some(code) => format!("{code}: {detail}"),
                    None => detail,
                }),
            },
            E::CapabilityUnavailable { capability, .. } => Self::CapabilityUnavailable {
                msg,
                details: Some(
                    capability
                        .map(|c| c.as_str())
                        .unwrap_or("capabilities")
                        .to_string(),
                ),
            },
            E::Unauthorized { detail, .. } => Self::Unauthorized {
                msg,
                details: Some(detail),
            },
            E::Forbidden { detail, .. } => Self::Forbidden {
                msg,
                details: Some(detail),
            },
            E::Invalid { detail, .. } => Self::Invalid {
                msg,
                details: Some(detail),
            },
            E::PayloadTooLarge { detail, .. } => Self::PayloadTooLarge {
                msg,
                details: Some(detail),
            },
            E::RateLimited { retry_after, .. } => Self::RateLimited {
                msg,
                details: retry_after.map(|d| format!("retry after {} ms", d.as_millis())),
            },
            E::Server { status, body, .. } => Self::Server {
                msg,
                details: Some(body),
                status,
            },
            E::Transport { detail, .. } => Self::Transport {
                msg,
                details: Some(detail),
            },
            E::Decode {
                path,
                reason,
                snippet,
                ..
            } => Self::Decode {
                msg,
                details: Some(format!("at {path}: {reason}; body: {snippet}")),
            },
            E::Timeout { after, .. } => Self::Timeout {
                msg,
                details: Some(format!("{} ms", after.as_millis())),
            },
            E::Config { reason, .. } => Self::Config {
                msg,
                details: Some(reason),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_client::{Error as ClientError, Operation};

    #[test]
    fn client_errors_keep_their_kind_text_and_retryability() {
        let cases = vec![
            (
                ClientError::AlreadyAnswered {
                    operation: Operation::RespondInteraction,
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
            assert_eq!(error.is_retryable().unwrap(), retryable);
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
