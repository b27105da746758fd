//! Agenta's durable session control (Agenta v0.121 and later): durable approvals, durable
//! Stop, the session snapshot and its replayable events.
//!
//! Agenta's routes (paths relative to its API root) and the types here, each named by the
//! upstream model it reads and writes:
//!
//! | route | body | module |
//! |---|---|---|
//! | `POST /sessions/interactions/{id}/respond` (`Idempotency-Key` required) | [`SessionInteractionRespondRequest`] in; 202 [`SessionInteractionContinuationResponse`]; 409/422 [`ErrorEnvelope`] | [`respond`] |
//! | `POST /sessions/{id}/continuations/resume` | 200 [`SessionContinuationResumeResponse`] | [`respond`] |
//! | `POST /sessions/{id}/cancel` (Stop; `Idempotency-Key` optional) | [`SessionCancelRequest`] in; 202 or 200 [`SessionCancelResponse`]; 409 [`CancelError`]; 422 [`ErrorEnvelope`] | [`cancel`] |
//! | (the command a Stop or an answer writes) | [`SessionCommand`], [`SessionCommandRef`] | [`commands`] |
//! | `GET /sessions/{id}` | 200 [`SessionSnapshotResponse`] | [`snapshot`] |
//! | `GET /sessions/{id}/events?after=N` (SSE) | [`SessionEventsFrame`]: [`SessionDurableEvent`], [`SessionLiveFrame`], [`SessionRelayClose`] | [`events`] |
//! | `DELETE /sessions/{id}/inputs/{input_id}` | 200 [`PendingInputResponse`]; 404/409 [`DetailWrappedEnvelope`] | [`inputs`] |
//! | `GET /sessions/streams/?session_id=` | 200 [`SessionStreamResponse`] | [`streams`] |
//! | (in the snapshot and the stream) | [`SessionCapabilities`] | [`capabilities`] |
//!
//! A command's delivery [`SessionCommandState`] (`pending`, `claimed`, `applied`,
//! `obsolete`) is kept apart from the run's [`SessionCommandOutcome`] (`stopped`,
//! `not_running`, ...): a Stop answered 202 says the command is recorded, not that the run
//! stopped; the outcome arrives through the snapshot and the events.
//!
//! Like the rest of the crate, readers are tolerant (an enum value this version does not
//! know is kept as `Unknown(text)`; unknown keys are kept in `extra` and written back) and
//! writers exact: each body is written the way Agenta's route dumps it, nulls present
//! where the route uses `model_dump` (respond 202, cancel, stream fetch), absent where it
//! uses `response_model_exclude_none` (the snapshot), and an error envelope's keys absent
//! rather than null.

pub mod cancel;
pub mod capabilities;
pub mod commands;
pub mod errors;
pub mod events;
pub mod inputs;
pub mod respond;
pub mod snapshot;
pub mod streams;

pub use cancel::{
    CancelError, CancelErrorDetail, CancelExecutionConflict, CancelNotClaimable,
    SessionCancelRequest, SessionCancelResponse, SessionExecutionRef,
};
pub use capabilities::SessionCapabilities;
pub use commands::{
    SessionCommand, SessionCommandKind, SessionCommandOutcome, SessionCommandRef,
    SessionCommandState,
};
pub use errors::{DetailWrappedEnvelope, ErrorCode, ErrorEnvelope};
pub use events::{
    DurableEventPayload, DurableEventType, ExecutionFailedPayload, ExecutionLostPayload,
    ExecutionStartedPayload, ExecutionStoppedPayload, MessageCompletedPayload, RelayCloseReason,
    SessionDurableEvent, SessionEventsFrame, SessionExecutionError, SessionLiveFrame,
    SessionRelayClose, ToolCompletedPayload,
};
pub use inputs::{PendingInput, PendingInputPolicy, PendingInputResponse, PendingInputState};
pub use respond::{
    SessionContinuationResumeResponse, SessionInteractionAnswerRequest,
    SessionInteractionContinuationExecution, SessionInteractionContinuationResponse,
    SessionInteractionRespondRequest,
};
pub use snapshot::{
    SessionExecutionSnapshot, SessionRecordsReadState, SessionSnapshotPending,
    SessionSnapshotResponse,
};
pub use streams::{
    SessionReference, SessionStream, SessionStreamFlags, SessionStreamResponse, SessionTurn,
};

use crate::json::open_enum;

open_enum! {
    /// The state of an execution (one turn of a session) as Agenta's session control
    /// reports it: Agenta's `SessionExecutionState` (`active`, `stopping`,
    /// `pending_delivery`, `recoverable`, `running`, `terminal`), the respond 202's
    /// `awaiting_interactions`, and the snapshot's and Stop's `idle`. One enum for every
    /// place a state appears, so a state Agenta reports in a place its own model does not
    /// list (a `stopping` source in a respond 202) still reads.
    pub enum SessionExecutionState {
        /// Nothing runs (snapshot, Stop 200).
        Idle = "idle",
        /// A turn is running.
        Running = "running",
        /// A Stop was accepted; the turn is being stopped. Its gates were cancelled.
        Stopping = "stopping",
        /// Some of a turn's parallel gates are answered, not all: no continuation yet.
        AwaitingInteractions = "awaiting_interactions",
        /// A continuation was admitted and waits for its delivery to the runner.
        PendingDelivery = "pending_delivery",
        /// The continuation's delivery failed after commit; resume it
        /// (`POST /sessions/{id}/continuations/resume`) or send the next message.
        Recoverable = "recoverable",
        /// The execution is settled; it takes no more answers.
        Terminal = "terminal",
        /// Agenta's execution row while its turn is live.
        Active = "active",
    }
}

impl SessionExecutionState {
    /// True for `terminal`: the execution can no longer be continued.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Terminal)
    }
}

/// Where pydantic's `exclude_none` drops `None`: every field of a model, at every depth,
/// but not the values of a plain `dict` or `Any` (those stay as they are). The snapshot is
/// written that way; the same types elsewhere are written with their nulls.
pub(crate) enum NoneShape {
    /// A model: its null keys go; the listed keys hold nested models.
    Model(&'static [(&'static str, NoneShape)]),
    /// A list of the shape.
    ListOf(&'static NoneShape),
    /// A `dict` whose values have the shape.
    MapOf(&'static NoneShape),
}

/// A model with no nested model.
pub(crate) const FLAT_MODEL: NoneShape = NoneShape::Model(&[]);

impl NoneShape {
    fn drop_nones(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match (self, value) {
            (Self::Model(children), Value::Object(map)) => {
                map.retain(|_, inner| !inner.is_null());
                for (key, shape) in children.iter() {
                    if let Some(inner) = map.get_mut(*key) {
                        shape.drop_nones(inner);
                    }
                }
            }
            (Self::ListOf(shape), Value::Array(items)) => {
                items.iter_mut().for_each(|item| shape.drop_nones(item));
            }
            (Self::MapOf(shape), Value::Object(map)) => {
                map.values_mut().for_each(|item| shape.drop_nones(item));
            }
            _ => {}
        }
    }
}

/// `value` written as pydantic writes its model with `exclude_none=True` (`shape` says
/// which keys are model fields).
pub(crate) struct ExcludeNone<'a, T>(pub(crate) &'a T, pub(crate) &'static NoneShape);

impl<T: serde::Serialize> serde::Serialize for ExcludeNone<'_, T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut value = serde_json::to_value(self.0).map_err(serde::ser::Error::custom)?;
        self.1.drop_nones(&mut value);
        value.serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Value};

    use super::*;
    use crate::interaction::InteractionStatus;

    fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize>(text: &str) -> (T, String) {
        let read: T = crate::from_json_slice(text.as_bytes()).unwrap();
        let written = serde_json::to_string(&read).unwrap();
        (read, written)
    }

    #[test]
    fn an_unknown_state_outcome_or_code_is_kept_and_written_back() {
        // `stopping` in a respond 202: Agenta's own model lacks it; this reader takes it.
        let text = r#"{"id":"t1","state":"stopping"}"#;
        let (execution, written) = round_trip::<SessionInteractionContinuationExecution>(text);
        assert_eq!(execution.state, SessionExecutionState::Stopping);
        assert_eq!(written, text);
        let text = r#"{"id":"t1","state":"hibernating","since":"x"}"#;
        let (execution, written) = round_trip::<SessionInteractionContinuationExecution>(text);
        assert_eq!(
            execution.state,
            SessionExecutionState::Unknown("hibernating".into())
        );
        assert_eq!(written, text);
        let text = r#"{"code":"quota_exceeded","message":"m","retryable":true,"later":1}"#;
        let (envelope, written) = round_trip::<ErrorEnvelope>(text);
        assert_eq!(envelope.code, ErrorCode::Unknown("quota_exceeded".into()));
        assert!(!envelope.code.is_known());
        assert_eq!(written, text);
        let text = r#"{"id":"c1","state":"deferred"}"#;
        let (command, written) = round_trip::<SessionCommandRef>(text);
        assert_eq!(
            command.state,
            SessionCommandState::Unknown("deferred".into())
        );
        assert_eq!(written, text);
    }

    #[test]
    fn the_envelope_is_found_top_level_or_under_detail_and_read_by_its_details() {
        let top = json!({"code": "execution_terminal", "message": "m", "retryable": false,
                         "details": {"interaction_status": "cancelled"}});
        let envelope = ErrorEnvelope::from_body(&top).unwrap();
        assert_eq!(envelope.code, ErrorCode::ExecutionTerminal);
        assert_eq!(
            envelope.interaction_status(),
            Some(InteractionStatus::Cancelled)
        );
        let wrapped = json!({"detail": {"code": "execution_terminal", "message": "m",
                             "retryable": false, "details": {"execution_state": "stopping"}}});
        let envelope = ErrorEnvelope::from_body(&wrapped).unwrap();
        assert_eq!(
            envelope.execution_state(),
            Some(SessionExecutionState::Stopping)
        );
        assert_eq!(envelope.interaction_status(), None);
        for not_one in [
            json!({"detail": "Interaction is no longer pending"}),
            json!({"detail": {"message": "expected execution 'x' is not the running execution (current: none)", "current_execution_id": null}}),
            json!({"detail": [{"loc": ["body"], "msg": "m", "type": "value_error"}]}),
            json!({"code": 7, "message": "m", "retryable": false}),
        ] {
            assert!(ErrorEnvelope::from_body(&not_one).is_none(), "{not_one}");
        }
    }

    #[test]
    fn a_written_envelope_leaves_out_what_it_does_not_have() {
        let envelope = ErrorEnvelope {
            code: ErrorCode::ExecutionMismatch,
            message: "The interaction belongs to a different execution.".into(),
            retryable: false,
            details: None,
            next_step: None,
            extra: crate::JsonObject::new(),
        };
        assert_eq!(
            serde_json::to_string(&envelope).unwrap(),
            r#"{"code":"execution_mismatch","message":"The interaction belongs to a different execution.","retryable":false}"#
        );
        // A null key reads as absent and is not written back.
        let (_, written) = round_trip::<ErrorEnvelope>(
            r#"{"code":"validation_error","message":"m","retryable":false,"details":null}"#,
        );
        assert_eq!(
            written,
            r#"{"code":"validation_error","message":"m","retryable":false}"#
        );
    }

    #[test]
    fn the_cancel_error_tells_its_three_forms_apart() {
        let (error, written) = round_trip::<CancelError>(
            r#"{"detail":{"message":"expected execution 'a' is not the running execution (current: none)","current_execution_id":null}}"#,
        );
        assert!(matches!(
            error.detail,
            CancelErrorDetail::ExecutionConflict(ref c) if c.current_execution_id.is_none()
        ));
        assert!(written.contains(r#""current_execution_id":null"#));
        let (error, _) =
            round_trip::<CancelError>(r#"{"detail":{"message":"m","state":"claimed"}}"#);
        assert!(matches!(error.detail, CancelErrorDetail::NotClaimable(_)));
        let (error, _) = round_trip::<CancelError>(r#"{"detail":"Command not found"}"#);
        assert_eq!(
            error.detail,
            CancelErrorDetail::Message("Command not found".into())
        );
        let err =
            crate::from_json_slice::<CancelError>(br#"{"detail":{"message":"m"}}"#).unwrap_err();
        assert!(err.reason.contains("current_execution_id"), "{err}");
    }

    #[test]
    fn the_snapshot_drops_the_nulls_of_models_and_keeps_those_inside_a_dict() {
        let row = json!({
            "session_id": "s", "token": "t", "kind": "user_approval", "status": "pending",
            "data": {"request": {"tool": "bash", "args": {"cwd": null}},
                     "resolution": null, "parameters": {"k": null}},
            "tags": {"team": null}
        });
        let snapshot = SessionSnapshotResponse {
            session: None,
            execution: None,
            execution_state: SessionExecutionSnapshot::default(),
            pending: SessionSnapshotPending {
                inputs: Vec::new(),
                interactions: vec![crate::from_json_value(row).unwrap()],
                extra: crate::JsonObject::new(),
            },
            read: None,
            capabilities: SessionCapabilities::default(),
            extra: crate::JsonObject::new(),
        };
        let written: Value = serde_json::to_value(&snapshot).unwrap();
        assert_eq!(
            written,
            json!({
                "execution_state": {"state": "idle"},
                "pending": {"inputs": [], "interactions": [{
                    "session_id": "s", "token": "t", "kind": "user_approval", "status": "pending",
                    "data": {"request": {"tool": "bash", "args": {"cwd": null}},
                             "parameters": {"k": null}},
                    "flags": {"delivered_in_band": false, "delivered_webhook": false},
                    "tags": {"team": null}
                }]},
                "capabilities": {"durable_approvals": false, "queue": false, "steer": false}
            })
        );
    }

    #[test]
    fn every_events_frame_form_reads_and_writes_back() {
        for text in [
            "retry: 2500\n\n",
            "event: ready\ndata: {}\n\n",
            ": heartbeat\n\n",
            "data: {\"version\":1,\"kind\":\"event\",\"session_id\":\"s\",\"execution_id\":\"e\",\"frame_or_event_id\":\"v1\",\"entity_id\":\"e\",\"sequence\":null,\"created_at\":\"2026-10-02T08:15:00Z\",\"type\":\"execution.started\",\"payload\":{\"started_at\":\"2026-10-02T08:15:00Z\"}}\n\n",
            "data: {\"version\": 1, \"kind\": \"frame\", \"session_id\": \"s\", \"execution_id\": \"e\", \"frame_or_event_id\": \"f1\", \"frame_index\": 0, \"entity_id\": \"m\", \"type\": \"message.delta\", \"payload\": {\"text\": \"caf\\u00e9\"}, \"created_at\": \"2026-10-02T08:15:00Z\"}\n\n",
            "event: relay-close\ndata: {\"reason\": \"authorization_revoked\", \"reconnect\": false}\n\n",
            "event: surprise\ndata: {}\n\n",
        ] {
            let frame = SessionEventsFrame::parse(text).unwrap();
            assert_eq!(frame.to_sse().unwrap(), text);
        }
        let event = match SessionEventsFrame::parse("data: {\"kind\":\"event\",\"session_id\":\"s\",\"execution_id\":\"e\",\"frame_or_event_id\":\"v\",\"entity_id\":\"e\",\"created_at\":\"t\",\"type\":\"execution.stopped\",\"payload\":{\"stopped_at\":\"t\",\"reason\":\"user_stop\"}}\n\n").unwrap() {
            SessionEventsFrame::Event(event) => event,
            other => panic!("{other:?}"),
        };
        match event.typed_payload().unwrap() {
            DurableEventPayload::ExecutionStopped(stopped) => {
                assert_eq!(stopped.reason, "user_stop");
                assert_eq!(stopped.command_id, None);
            }
            other => panic!("{other:?}"),
        }
        assert!(SessionEventsFrame::parse("data: {\"kind\":\"event\"}\n\n").is_err());
    }
}
