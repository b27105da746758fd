//! Classification: how a failed HTTP answer, a reqwest failure or an undecodable body
//! becomes an [`Error`].
//!
//! Conflicts that share the 409 status are told apart (CONTRACT.md C3) from
//! Gatehouse's machine code when the server sends one, else from the exact upstream
//! messages of Agenta and AgentPlat. Agenta's durable session control (v0.121+) answers
//! its 409s and 422s with an error envelope `{code, message, retryable, details?}`
//! (top-level, or under `detail`), told apart by its `code` and `details`. AgentPlat's
//! coarse codes (`error.code`) tell a validation failure from a malformed request, and
//! its missing-tenant 400 is told apart by its message. Every text kept goes through
//! [`crate::redact`].

use std::sync::Arc;
use std::time::Duration;

use gatehouse_wire::error::{messages, GatehouseCode};
use gatehouse_wire::sessions::{ErrorCode, ErrorEnvelope};

use crate::error::{Error, Operation};
use crate::redact::{
    bound_chars, redacted_snippet, scrub_quoted_values, scrub_secret, snippet, MAX_DETAIL_CHARS,
    MAX_SNIPPET_CHARS,
};

/// What an error body says, whichever of the three shapes it has.
#[derive(Debug, Default)]
pub(crate) struct ErrorBodyInfo {
    /// Gatehouse's machine code (`code` beside `detail`, or `error.gatehouseCode`).
    pub gatehouse_code: Option<GatehouseCode>,
    /// AgentPlat's coarse code (`error.code`).
    pub agentplat_code: Option<String>,
    /// The readable message (`detail`, `error.message` or the envelope's `message`),
    /// bounded.
    pub message: Option<String>,
    /// Agenta's session-control error envelope, top-level or under `detail`.
    pub envelope: Option<ErrorEnvelope>,
}

/// The longest id or state kept from an envelope's `details`.
const MAX_DETAIL_VALUE_CHARS: usize = 128;

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
            request_id: None,
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
    if let Some(envelope) = ErrorEnvelope::from_body(&value) {
        info.message = Some(bound_chars(&envelope.message, MAX_DETAIL_CHARS));
        info.envelope = Some(envelope);
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

    if let (409 | 422, Some(envelope)) = (status, &info.envelope) {
        return classify_envelope(operation, status, envelope, detail(), secrets);
    }
    // Agenta's durable Stop refused for a stale expectation: `{detail: {message,
    // current_execution_id}}` (the execution now running, or null when none is).
    if status == 409 {
        if let Some(conflict) = stop_conflict(body) {
            let detail = scrub_secret(&bound_chars(&conflict.message, MAX_DETAIL_CHARS), secrets);
            let current = conflict
                .current_execution_id
                .map(|id| scrub_secret(&bound_chars(&id, MAX_DETAIL_VALUE_CHARS), secrets));
            return Error::StaleExecution {
                operation,
                current_execution_id: current,
                detail,
            };
        }
    }

    if let Some(code) = info.gatehouse_code {
        use GatehouseCode as G;
        return match code {
            G::AlreadyAnswered => Error::AlreadyAnswered {
                operation,
                interaction_status: None,
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
            G::InterventionLimit => Error::InterventionLimit {
                operation,
                detail: detail(),
            },
            G::SessionNotActive => Error::SessionNotActive {
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
            G::TenantRequired | G::UnknownTenant => Error::TenantRejected {
                operation,
                status,
                detail: detail(),
            },
            G::ValidationError => Error::Validation {
                operation,
                status,
                field: None,
                reason: None,
                detail: detail(),
            },
            G::BadRequest => Error::Invalid {
                operation,
                status,
                detail: detail(),
            },
            G::PayloadTooLarge => Error::PayloadTooLarge {
                operation,
                detail: detail(),
            },
            G::IdempotencyKeyReused => Error::IdempotencyKeyReused {
                operation,
                detail: detail(),
            },
            G::StaleGate => Error::StaleGate {
                operation,
                detail: detail(),
            },
            G::BindingConflict | G::InvalidState | G::Conflict => Error::Conflict {
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
        400 if is_missing_tenant(&info) => Error::TenantRejected {
            operation,
            status,
            detail: detail(),
        },
        422 => Error::Validation {
            operation,
            status,
            field: None,
            reason: None,
            detail: detail(),
        },
        400..=499 if info.agentplat_code.as_deref() == Some("VALIDATION_ERROR") => {
            Error::Validation {
                operation,
                status,
                field: None,
                reason: None,
                detail: detail(),
            }
        }
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

/// AgentPlat's `headerTenantAuth` refusal: `BAD_REQUEST` "Missing required <header>
/// header" (the header name is configurable, `X-Agentplat-Tenant-Id` by default).
fn is_missing_tenant(info: &ErrorBodyInfo) -> bool {
    let Some(message) = info.message.as_deref() else {
        return false;
    };
    message == messages::MISSING_TENANT_HEADER
        || (info.agentplat_code.as_deref() == Some("BAD_REQUEST")
            && message.starts_with("Missing required ")
            && message.ends_with(" header"))
}

/// A 409 without Gatehouse's code: tell the meanings apart by the upstream messages.
fn classify_conflict(operation: Operation, message: Option<&str>, detail: String) -> Error {
    match message {
        Some(messages::INTERACTION_NOT_PENDING) => Error::AlreadyAnswered {
            operation,
            interaction_status: None,
            detail,
        },
        Some(messages::REVISION_CONFLICT) | Some(messages::CHANGED_CONCURRENTLY) => {
            Error::RevisionConflict { operation, detail }
        }
        Some(messages::OPERATION_CONFLICT) => Error::OperationConflict { operation, detail },
        Some(messages::DISPATCH_OWNERSHIP_LOST) => {
            Error::DispatchOwnershipLost { operation, detail }
        }
        Some(messages::RESOLVED_DIFFERENTLY) => Error::ResolvedDifferently { operation, detail },
        Some(messages::INTERVENTION_LIMIT) => Error::InterventionLimit { operation, detail },
        Some(messages::SESSION_NOT_ACTIVE) | Some(messages::RUN_NOT_RUNNING) => {
            Error::SessionNotActive { operation, detail }
        }
        // Agenta's legacy respond has exactly one 409: the row is no longer pending (A5,
        // A7). The durable respond's 409s carry the envelope and never reach here.
        _ if operation == Operation::RespondInteraction => Error::AlreadyAnswered {
            operation,
            interaction_status: None,
            detail,
        },
        _ => Error::Conflict {
            operation,
            code: None,
            detail,
        },
    }
}

/// The stale-expectation form of Agenta's Stop 409, when `body` is one.
fn stop_conflict(body: &[u8]) -> Option<gatehouse_wire::sessions::CancelExecutionConflict> {
    use gatehouse_wire::sessions::{CancelError, CancelErrorDetail};
    match gatehouse_wire::from_json_slice::<CancelError>(body)
        .ok()?
        .detail
    {
        CancelErrorDetail::ExecutionConflict(conflict) => Some(conflict),
        _ => None,
    }
}

/// A 409 or 422 carrying Agenta's error envelope: its `code` decides, its `details` fill
/// in the error (each value bounded and scrubbed).
fn classify_envelope(
    operation: Operation,
    status: u16,
    envelope: &ErrorEnvelope,
    detail: String,
    secrets: &[String],
) -> Error {
    let kept = |value: Option<&str>| {
        value.map(|text| scrub_secret(&bound_chars(text, MAX_DETAIL_VALUE_CHARS), secrets))
    };
    let names_the_row = envelope
        .details
        .as_ref()
        .is_some_and(|details| details.contains_key("interaction_status"));
    match &envelope.code {
        // The row itself is settled (answered differently, cancelled): the gate is done.
        ErrorCode::ExecutionTerminal if names_the_row => Error::AlreadyAnswered {
            operation,
            interaction_status: envelope.interaction_status(),
            detail,
        },
        // The row may still read pending, but its turn stops or was settled.
        ErrorCode::ExecutionTerminal => Error::TurnNotContinuable {
            operation,
            execution_state: envelope.execution_state(),
            terminal_outcome: kept(envelope.terminal_outcome()),
            detail,
        },
        ErrorCode::ExecutionMismatch => Error::StaleExecution {
            operation,
            current_execution_id: kept(envelope.current_execution_id()),
            detail,
        },
        ErrorCode::IdempotencyKeyReused => Error::IdempotencyKeyReused { operation, detail },
        ErrorCode::ValidationError => Error::Validation {
            operation,
            status,
            field: kept(envelope.field()),
            reason: kept(envelope.reason()),
            detail,
        },
        // A code this version does not know: what its status says.
        _ if status == 422 => Error::Validation {
            operation,
            status,
            field: kept(envelope.field()),
            reason: kept(envelope.reason()),
            detail,
        },
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

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
        assert!(matches!(err, Error::IdempotencyKeyReused { .. }), "{err:?}");
        assert!(!err.is_retryable());
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
            (messages::INTERVENTION_LIMIT, "InterventionLimit"),
            (messages::SESSION_NOT_ACTIVE, "SessionNotActive"),
            (messages::RUN_NOT_RUNNING, "SessionNotActive"),
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
            Error::Validation {
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

    /// AgentPlat's answers on the execution routes, as its `createRoomsApp` builds them:
    /// each lands on its own typed error.
    #[test]
    fn agentplat_refusals_are_typed() {
        fn agentplat(code: &str, message: &str) -> Vec<u8> {
            serde_json::json!({"error": {"code": code, "message": message}})
                .to_string()
                .into_bytes()
        }
        let cases: Vec<(u16, Vec<u8>, ErrorKindName)> = vec![
            (
                400,
                agentplat("BAD_REQUEST", messages::MISSING_TENANT_HEADER),
                "TenantRejected",
            ),
            (
                400,
                agentplat("BAD_REQUEST", "Missing required X-Org header"),
                "TenantRejected",
            ),
            (
                400,
                agentplat("BAD_REQUEST", messages::JSON_BODY_REQUIRED),
                "Invalid",
            ),
            (
                400,
                agentplat("BAD_REQUEST", messages::JSON_BODY_INVALID),
                "Invalid",
            ),
            (
                400,
                agentplat("VALIDATION_ERROR", messages::JSON_BODY_NOT_OBJECT),
                "Validation",
            ),
            (
                400,
                agentplat("VALIDATION_ERROR", messages::CHECKPOINT_INVALID),
                "Validation",
            ),
            (
                400,
                agentplat("VALIDATION_ERROR", messages::EVENT_SEQUENCE_INVALID),
                "Validation",
            ),
            (
                401,
                agentplat("UNAUTHORIZED", messages::AUTHENTICATION_REQUIRED),
                "Unauthorized",
            ),
            (
                403,
                agentplat("FORBIDDEN", messages::REQUESTER_NOT_HUMAN),
                "Forbidden",
            ),
            (
                403,
                agentplat("FORBIDDEN", messages::REQUESTER_LACKS_PERMISSION),
                "Forbidden",
            ),
            (
                404,
                agentplat("NOT_FOUND", messages::EXECUTION_SESSION_NOT_FOUND),
                "NotFound",
            ),
            (
                404,
                agentplat("NOT_FOUND", &messages::room_not_found("r")),
                "NotFound",
            ),
            (
                409,
                agentplat("CONFLICT", messages::INTERVENTION_LIMIT),
                "InterventionLimit",
            ),
            (
                409,
                agentplat("CONFLICT", messages::SESSION_NOT_ACTIVE),
                "SessionNotActive",
            ),
            (
                500,
                agentplat("INTERNAL_ERROR", messages::UNEXPECTED_ERROR),
                "Server",
            ),
            (
                502,
                agentplat("ADAPTER_ERROR", messages::PROTECTED_WITHOUT_PRE_ACTION),
                "Server",
            ),
        ];
        for (status, body, expected) in cases {
            let err = classify(Operation::RequestIntervention, status, None, &body, &[]);
            let name = format!("{err:?}");
            assert!(
                name.starts_with(&format!("{expected} "))
                    || name.starts_with(&format!("{expected} {{")),
                "{status} {}: {name}",
                String::from_utf8_lossy(&body)
            );
            assert_eq!(err.http_status(), Some(status), "{name}");
            assert!(!err.is_retryable() || status >= 500, "{name}");
        }
        // Gatehouse's own codes carry the same meanings.
        for (code, status, expected) in [
            ("TENANT_REQUIRED", 400, "TenantRejected"),
            ("UNKNOWN_TENANT", 403, "TenantRejected"),
            ("SESSION_NOT_ACTIVE", 409, "SessionNotActive"),
            ("INTERVENTION_LIMIT", 409, "InterventionLimit"),
            ("VALIDATION_ERROR", 400, "Validation"),
            ("BAD_REQUEST", 400, "Invalid"),
        ] {
            let body =
                serde_json::json!({"error": {"code": "X", "message": "m", "gatehouseCode": code}})
                    .to_string();
            let err = classify(
                Operation::RequestIntervention,
                status,
                None,
                body.as_bytes(),
                &[],
            );
            assert!(format!("{err:?}").starts_with(expected), "{code}: {err:?}");
        }
    }

    type ErrorKindName = &'static str;

    fn envelope(code: &str, details: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"code": code, "message": "m", "retryable": false, "details": details})
    }

    /// Agenta's durable respond: each envelope code its own error, top-level or under
    /// `detail`, with what its details say.
    #[test]
    fn the_durable_envelope_is_classified_by_its_code() {
        use gatehouse_wire::interaction::InteractionStatus;
        use gatehouse_wire::sessions::SessionExecutionState;
        let classify_body = |status: u16, body: serde_json::Value| {
            classify(
                Operation::RespondInteraction,
                status,
                None,
                body.to_string().as_bytes(),
                &[],
            )
        };
        for wrap in [false, true] {
            let body = |value: serde_json::Value| {
                if wrap {
                    serde_json::json!({ "detail": value })
                } else {
                    value
                }
            };
            let err = classify_body(
                409,
                body(envelope(
                    "execution_terminal",
                    serde_json::json!({"interaction_status": "responded"}),
                )),
            );
            assert!(
                matches!(
                    err,
                    Error::AlreadyAnswered {
                        interaction_status: Some(InteractionStatus::Responded),
                        ..
                    }
                ),
                "{err:?}"
            );
            let err = classify_body(
                409,
                body(envelope(
                    "execution_terminal",
                    serde_json::json!({"interaction_status": null}),
                )),
            );
            assert!(
                matches!(
                    err,
                    Error::AlreadyAnswered {
                        interaction_status: None,
                        ..
                    }
                ),
                "{err:?}"
            );
            let err = classify_body(
                409,
                body(envelope(
                    "execution_terminal",
                    serde_json::json!({"execution_state": "stopping"}),
                )),
            );
            assert!(
                matches!(
                    err,
                    Error::TurnNotContinuable {
                        execution_state: Some(SessionExecutionState::Stopping),
                        terminal_outcome: None,
                        ..
                    }
                ),
                "{err:?}"
            );
            let err = classify_body(
                409,
                body(envelope(
                    "execution_terminal",
                    serde_json::json!({"terminal_outcome": "lost"}),
                )),
            );
            match &err {
                Error::TurnNotContinuable {
                    terminal_outcome, ..
                } => assert_eq!(terminal_outcome.as_deref(), Some("lost")),
                other => panic!("{other:?}"),
            }
            let err = classify_body(
                409,
                body(envelope(
                    "execution_mismatch",
                    serde_json::json!({"current_execution_id": "turn-7"}),
                )),
            );
            match &err {
                Error::StaleExecution {
                    current_execution_id,
                    ..
                } => assert_eq!(current_execution_id.as_deref(), Some("turn-7")),
                other => panic!("{other:?}"),
            }
            let err = classify_body(
                409,
                body(envelope("idempotency_key_reused", serde_json::json!({}))),
            );
            assert_eq!(err.kind(), ErrorKind::IdempotencyKeyReused);
            assert!(!err.is_retryable());
            let err = classify_body(
                422,
                body(envelope(
                    "validation_error",
                    serde_json::json!({"field": "Idempotency-Key", "reason": "too_long"}),
                )),
            );
            match &err {
                Error::Validation {
                    status: 422,
                    field,
                    reason,
                    detail,
                    ..
                } => {
                    assert_eq!(field.as_deref(), Some("Idempotency-Key"));
                    assert_eq!(reason.as_deref(), Some("too_long"));
                    assert_eq!(detail, "m");
                }
                other => panic!("{other:?}"),
            }
            // A code this version does not know is a plain conflict, never "answered".
            let err = classify_body(409, body(envelope("teleported", serde_json::json!({}))));
            assert!(matches!(err, Error::Conflict { code: None, .. }), "{err:?}");
        }
        // The legacy respond's 409 keeps today's meaning.
        let err = classify_body(
            409,
            serde_json::json!({"detail": messages::INTERACTION_NOT_PENDING}),
        );
        assert!(
            matches!(
                err,
                Error::AlreadyAnswered {
                    interaction_status: None,
                    ..
                }
            ),
            "{err:?}"
        );
    }

    /// The kind Agenta's envelope `code` (with its details) must become.
    fn expected_kind(envelope: &ErrorEnvelope, status: u16) -> ErrorKind {
        let details = envelope.details.clone().unwrap_or_default();
        match envelope.code {
            ErrorCode::ExecutionTerminal if details.contains_key("interaction_status") => {
                ErrorKind::AlreadyAnswered
            }
            ErrorCode::ExecutionTerminal => ErrorKind::TurnNotContinuable,
            ErrorCode::ExecutionMismatch => ErrorKind::StaleExecution,
            ErrorCode::IdempotencyKeyReused => ErrorKind::IdempotencyKeyReused,
            ErrorCode::ValidationError => ErrorKind::Validation,
            _ if status == 422 => ErrorKind::Validation,
            _ => ErrorKind::Conflict,
        }
    }

    // upstream conformance: Agenta durable session control
    /// Every 409 and 422 envelope example of Agenta's durable fixtures (the folder
    /// iterated), classified by its code; the legacy and FastAPI forms keep their kinds.
    #[test]
    fn every_durable_envelope_example_is_classified_by_its_code() {
        let Some(provenance) = gatehouse_fixtures::require_file(
            gatehouse_fixtures::Upstream::Agenta,
            "Agenta durable error classification (crates/client classify.rs)",
            "durable/PROVENANCE.md",
        ) else {
            return;
        };
        let examples = provenance.with_file_name("examples");
        let mut classified = 0;
        for entry in std::fs::read_dir(&examples).unwrap() {
            let path = entry.unwrap().path();
            let example: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let response = &example["response"];
            let (Some(status), Some(body)) = (response["status"].as_u64(), response.get("body"))
            else {
                continue;
            };
            let status = u16::try_from(status).unwrap();
            if !matches!(status, 409 | 422) {
                continue;
            }
            let err = classify(
                Operation::RespondInteraction,
                status,
                None,
                body.to_string().as_bytes(),
                &[],
            );
            let file = path.file_name().unwrap().to_string_lossy().to_string();
            let expected = match ErrorEnvelope::from_body(body) {
                Some(envelope) => {
                    classified += 1;
                    expected_kind(&envelope, status)
                }
                // FastAPI's own 422 list, the legacy and cancel `{detail}` forms.
                None if status == 422 => ErrorKind::Validation,
                None if file.starts_with("legacy.respond.") => ErrorKind::AlreadyAnswered,
                None => continue,
            };
            assert_eq!(err.kind(), expected, "{file}: {err:?}");
            assert!(!err.is_retryable(), "{file}");
        }
        assert!(classified >= 10, "only {classified} envelope examples");
    }
}
