//! AgentPlat's own JSON of a session, its interventions and its events, as its Rooms API
//! writes them: what the root paths (`/rooms/...`) answer, so AgentPlat's clients and
//! its TypeScript types (`RoomExecutionSession`, `RunIntervention`,
//! `RoomExecutionSessionEvent` of `@agentplat/rooms`) read exactly what they expect.
//!
//! Against Gatehouse's richer shape (the wire types, answered under `/api`):
//!
//! - only AgentPlat's fields: no `runtimeProfile`, `authorityRevision`, `roleRevision`,
//!   `checkpointProgress` or `outcome` on a session, no `sessionRevision`,
//!   `authorityRevision` or `roleRevision` on an intervention, no `details` on an event;
//! - AgentPlat's field order: a session's and an intervention's as its coordinator
//!   builds them (an intervention's `requestedAt` before its dispatch claim), an event's
//!   `sequence` first on the opening event and last on every other (AgentPlat writes
//!   the opening event as one literal and appends the rest as `{...event, sequence}`);
//! - timestamps in JavaScript's `toISOString()` form, milliseconds and `Z`.

use std::borrow::Cow;

use gatehouse_wire::execution::{
    Checkpoint, ExecutionEvent, ExecutionEventType, ExecutionSession, ExecutionSessionStatus,
    Intervention, InterventionStatus,
};
use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// A session as AgentPlat writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPlatSession<'a> {
    tenant_id: &'a str,
    room_id: &'a str,
    session_id: &'a str,
    run_id: &'a str,
    task_id: &'a str,
    participant_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_revision_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent_revision_digest: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    predecessor_session_id: Option<&'a str>,
    revision: u64,
    status: &'a ExecutionSessionStatus,
    interventions: Vec<AgentPlatIntervention<'a>>,
    events: Vec<AgentPlatEvent<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    created_at: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<Cow<'a, str>>,
}

impl<'a> AgentPlatSession<'a> {
    /// AgentPlat's JSON of `session`.
    pub fn of(session: &'a ExecutionSession) -> Self {
        Self {
            tenant_id: &session.tenant_id,
            room_id: &session.room_id,
            session_id: &session.session_id,
            run_id: &session.run_id,
            task_id: &session.task_id,
            participant_id: &session.participant_id,
            agent_revision_id: session.agent_revision_id.as_deref(),
            agent_revision_digest: session.agent_revision_digest.as_deref(),
            predecessor_session_id: session.predecessor_session_id.as_deref(),
            revision: session.revision,
            status: &session.status,
            interventions: session
                .interventions
                .iter()
                .map(AgentPlatIntervention::of)
                .collect(),
            events: session.events.iter().map(AgentPlatEvent).collect(),
            created_at: session.created_at.as_deref().map(milliseconds),
            updated_at: session.updated_at.as_deref().map(milliseconds),
        }
    }
}

/// An intervention as AgentPlat writes it.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentPlatIntervention<'a> {
    operation_id: &'a str,
    requested_by_participant_id: &'a str,
    instruction: &'a str,
    checkpoint: &'a Checkpoint,
    status: &'a InterventionStatus,
    attempts: u32,
    requested_at: Cow<'a, str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dispatch_token: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dispatch_lease_expires_at: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolved_at: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    resolution_reason: Option<&'a str>,
}

impl<'a> AgentPlatIntervention<'a> {
    fn of(intervention: &'a Intervention) -> Self {
        Self {
            operation_id: &intervention.operation_id,
            requested_by_participant_id: &intervention.requested_by_participant_id,
            instruction: &intervention.instruction,
            checkpoint: &intervention.checkpoint,
            status: &intervention.status,
            attempts: intervention.attempts,
            requested_at: milliseconds(&intervention.requested_at),
            dispatch_token: intervention.dispatch_token.as_deref(),
            dispatch_lease_expires_at: intervention
                .dispatch_lease_expires_at
                .as_deref()
                .map(milliseconds),
            resolved_at: intervention.resolved_at.as_deref().map(milliseconds),
            resolution_reason: intervention.resolution_reason.as_deref(),
        }
    }
}

/// An event as AgentPlat writes it: `sequence`, `type`, `operationId`, `checkpoint`,
/// `occurredAt`, with `sequence` first on the opening event and last on the others.
#[derive(Debug, Clone, Copy)]
pub struct AgentPlatEvent<'a>(pub &'a ExecutionEvent);

impl Serialize for AgentPlatEvent<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let event = self.0;
        let opening = event.event_type == ExecutionEventType::SessionOpened;
        let fields =
            3 + usize::from(event.operation_id.is_some()) + usize::from(event.checkpoint.is_some());
        let mut out = serializer.serialize_struct("RoomExecutionSessionEvent", fields)?;
        if opening {
            out.serialize_field("sequence", &event.sequence)?;
        }
        out.serialize_field("type", &event.event_type)?;
        if let Some(operation_id) = &event.operation_id {
            out.serialize_field("operationId", operation_id)?;
        }
        if let Some(checkpoint) = &event.checkpoint {
            out.serialize_field("checkpoint", checkpoint)?;
        }
        out.serialize_field("occurredAt", &milliseconds(&event.occurred_at))?;
        if !opening {
            out.serialize_field("sequence", &event.sequence)?;
        }
        out.end()
    }
}

/// An RFC 3339 time as JavaScript's `Date.prototype.toISOString()` writes it
/// (`2026-12-01T04:22:49.873Z`: UTC, milliseconds, truncated as a `Date` holds them). A
/// text that is not RFC 3339 is kept as it is.
pub fn milliseconds(time: &str) -> Cow<'_, str> {
    match chrono::DateTime::parse_from_rfc3339(time) {
        Ok(parsed) => Cow::Owned(
            parsed
                .with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%S%.3fZ")
                .to_string(),
        ),
        Err(_) => Cow::Borrowed(time),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_wire::JsonObject;

    fn event(sequence: u64, event_type: ExecutionEventType) -> ExecutionEvent {
        ExecutionEvent {
            sequence,
            event_type,
            occurred_at: "2026-12-01T04:22:49.873456Z".into(),
            operation_id: None,
            checkpoint: None,
            details: Some(serde_json::json!({"step": 2})),
            extra: JsonObject::new(),
        }
    }

    #[test]
    fn times_are_javascript_iso_strings() {
        assert_eq!(
            milliseconds("2026-12-01T04:22:49.873999Z"),
            "2026-12-01T04:22:49.873Z"
        );
        assert_eq!(
            milliseconds("2026-12-01T05:22:49+01:00"),
            "2026-12-01T04:22:49.000Z"
        );
        assert_eq!(milliseconds("yesterday"), "yesterday");
    }

    #[test]
    fn events_are_written_in_agentplat_order_and_fields() {
        let opened = event(1, ExecutionEventType::SessionOpened);
        assert_eq!(
            serde_json::to_string(&AgentPlatEvent(&opened)).unwrap(),
            r#"{"sequence":1,"type":"session_opened","occurredAt":"2026-12-01T04:22:49.873Z"}"#
        );
        let mut applied = event(4, ExecutionEventType::InterventionApplied);
        applied.operation_id = Some("op-1".into());
        applied.checkpoint = Some(Checkpoint::PreStep);
        applied.extra.insert("level".into(), 2.into());
        assert_eq!(
            serde_json::to_string(&AgentPlatEvent(&applied)).unwrap(),
            r#"{"type":"intervention_applied","operationId":"op-1","checkpoint":"pre_step","occurredAt":"2026-12-01T04:22:49.873Z","sequence":4}"#
        );
    }

    #[test]
    fn sessions_carry_only_agentplat_fields() {
        let session: ExecutionSession = serde_json::from_value(serde_json::json!({
            "tenantId": "t", "roomId": "r", "sessionId": "s", "runId": "run", "taskId": "task",
            "participantId": "agent", "runtimeProfile": "local", "authorityRevision": "a1",
            "revision": 3, "status": "active",
            "checkpointProgress": {"preStep": 1},
            "interventions": [{
                "operationId": "op", "requestedByParticipantId": "human-1", "instruction": "x",
                "checkpoint": "pre_step", "status": "dispatching", "attempts": 1,
                "dispatchToken": "tok", "dispatchLeaseExpiresAt": "2026-12-01T04:22:50.5Z",
                "requestedAt": "2026-12-01T04:22:49Z", "sessionRevision": 2
            }],
            "events": [], "createdAt": "2026-12-01T04:22:49.000001Z",
            "updatedAt": "2026-12-01T04:22:49.000001Z", "someday": true
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_string(&AgentPlatSession::of(&session)).unwrap(),
            concat!(
                r#"{"tenantId":"t","roomId":"r","sessionId":"s","runId":"run","taskId":"task","#,
                r#""participantId":"agent","revision":3,"status":"active","interventions":[{"#,
                r#""operationId":"op","requestedByParticipantId":"human-1","instruction":"x","#,
                r#""checkpoint":"pre_step","status":"dispatching","attempts":1,"#,
                r#""requestedAt":"2026-12-01T04:22:49.000Z","dispatchToken":"tok","#,
                r#""dispatchLeaseExpiresAt":"2026-12-01T04:22:50.500Z"}],"events":[],"#,
                r#""createdAt":"2026-12-01T04:22:49.000Z","updatedAt":"2026-12-01T04:22:49.000Z"}"#
            )
        );
    }
}
