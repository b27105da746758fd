//! AgentPlat's execution sessions (B2): under `/api`, and the same operations at
//! AgentPlat's own root paths (its clients' layout), the tenant in a header.

use super::operation::{
    Body, Failure, Family, In, Method, Operation, Optional, Param, ParamType, Reply,
};
use super::shared::STREAMS_FULL;
use crate::error::GatehouseCode;

const ROOM_ID: Param = Param {
    name: "room_id",
    location: In::Path,
    required: true,
    kind: ParamType::Text,
    description: "The room.",
};
const EXECUTION_SESSION_ID: Param = Param {
    name: "session_id",
    location: In::Path,
    required: true,
    kind: ParamType::Text,
    description: "The execution session.",
};
/// The tenant header of AgentPlat's root paths (where `/api` routes take
/// [`PROJECT_ID`](super::PROJECT_ID)).
pub const TENANT: Param = Param {
    name: crate::execution::TENANT_HEADER,
    location: In::Header,
    required: true,
    kind: ParamType::Text,
    description: "The tenant (Gatehouse: the project) on AgentPlat's root paths; the API key must be bound to it. On a server run with AgentPlat's header-only tenant auth (`gatehouse serve --agentplat-header-auth`, a trusted network only), a request without `Authorization` is admitted on this header alone, in that project only.",
};
const LAST_EVENT_ID: Param = Param {
    name: "Last-Event-ID",
    location: In::Header,
    required: false,
    kind: ParamType::AnyText,
    description: "An SSE reconnect: resume after this frame's event (`stream:<sequence>`, or the bare sequence); wins over `?after=`, which a reconnecting `EventSource` sends again unchanged.",
};
const AFTER: Param = Param {
    name: "after",
    location: In::Query,
    required: false,
    kind: ParamType::Count,
    description: "Only the events whose `sequence` is greater than this (default 0).",
};

const NOT_FOUND_SESSION: Failure = Failure {
    code: GatehouseCode::NotFound,
    when: "no such execution session in this room and project (\"Execution session not found\")",
};

/// AgentPlat's own path for an operation served under `/api` too: the same handler, the
/// tenant (Gatehouse: the project) in `X-Agentplat-Tenant-Id` instead of `?project_id=`,
/// a wrong method answered as an unknown route, as AgentPlat's host does, and
/// AgentPlat's own JSON and SSE framing (`description` says it).
const fn at_agentplat_root(
    op: Operation,
    id: &'static str,
    path: &'static str,
    params: &'static [Param],
    description: &'static str,
) -> Operation {
    Operation {
        id,
        path,
        project: false,
        params,
        description,
        ..op
    }
}

/// `GET /api/rooms/{room_id}/execution-sessions/{session_id}` (`getExecutionSession`).
pub const GET_EXECUTION_SESSION: Operation = Operation {
    id: "getExecutionSession",
    method: Method::Get,
    path: "/api/rooms/{room_id}/execution-sessions/{session_id}",
    family: Family::AgentPlat,
    summary: "One execution session",
    description: "B1, B2. The session with its interventions and events. Served only when the host runs the execution service (capability `execution`); otherwise 404 `ROUTE_NOT_FOUND`.",
    auth: true,
    project: true,
    params: &[ROOM_ID, EXECUTION_SESSION_ID],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{data: session}`",
        bodies: &[Body::Json("ExecutionSessionResponse")],
    }],
    failures: &[NOT_FOUND_SESSION],
};

/// `POST /api/rooms/{room_id}/execution-sessions/{session_id}/interventions` (`requestIntervention`).
pub const REQUEST_INTERVENTION: Operation = Operation {
    id: "requestIntervention",
    method: Method::Post,
    path: "/api/rooms/{room_id}/execution-sessions/{session_id}/interventions",
    family: Family::AgentPlat,
    summary: "Request an intervention (202: requested, not applied)",
    description: "B2, B3, C6. Compare-and-set on `expectedRevision` (a missing one matches no revision, as in AgentPlat); replay-first on `operationId` (the same request again answers the current session, even with a stale or missing revision); at most 256 interventions per session. 202 means requested: the intervention is applied only when the session records `intervention_applied`. The requester is the authenticated actor.",
    auth: true,
    project: true,
    params: &[ROOM_ID, EXECUTION_SESSION_ID],
    request: Some((Body::Json("RequestInterventionBody"), Optional::No)),
    replies: &[Reply {
        status: 202,
        description: "`{data: session}` with the new pending intervention (or the replayed one)",
        bodies: &[Body::Json("ExecutionSessionResponse")],
    }],
    failures: &[
        NOT_FOUND_SESSION,
        Failure {
            code: GatehouseCode::BadRequest,
            when: "`operationId` (1 to 200 characters) or `instruction` (1 to 4000) is blank or too long, or a field has the wrong shape",
        },
        Failure {
            code: GatehouseCode::RevisionConflict,
            when: "`expectedRevision` is missing or is not the stored revision, or the session changed concurrently",
        },
        Failure {
            code: GatehouseCode::Forbidden,
            when: "on the root paths under AgentPlat's header-only tenant auth, the body names no `requestedByParticipantId`",
        },
        Failure {
            code: GatehouseCode::OperationConflict,
            when: "the `operationId` is bound to another request",
        },
        Failure {
            code: GatehouseCode::InterventionLimit,
            when: "the session already holds 256 interventions",
        },
        Failure {
            code: GatehouseCode::InvalidState,
            when: "the session is no longer active",
        },
    ],
};

/// `GET /api/rooms/{room_id}/execution-sessions/{session_id}/events` (`listExecutionEvents`).
pub const LIST_EXECUTION_EVENTS: Operation = Operation {
    id: "listExecutionEvents",
    method: Method::Get,
    path: "/api/rooms/{room_id}/execution-sessions/{session_id}/events",
    family: Family::AgentPlat,
    summary: "The session's events after a sequence",
    description: "B1, B2. Append-only, `sequence` from 1.",
    auth: true,
    project: true,
    params: &[ROOM_ID, EXECUTION_SESSION_ID, AFTER],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{data: [event...]}`",
        bodies: &[Body::Json("ExecutionEventsResponse")],
    }],
    failures: &[
        NOT_FOUND_SESSION,
        Failure {
            code: GatehouseCode::BadRequest,
            when: "`after` is not a non-negative integer",
        },
    ],
};

/// `GET /api/rooms/{room_id}/execution-sessions/{session_id}/events/stream` (`streamExecutionEvents`).
pub const STREAM_EXECUTION_EVENTS: Operation = Operation {
    id: "streamExecutionEvents",
    method: Method::Get,
    path: "/api/rooms/{room_id}/execution-sessions/{session_id}/events/stream",
    family: Family::AgentPlat,
    summary: "The session's events as Server-Sent Events",
    description: "B2, in AgentPlat's versioned envelope: each frame is `id: stream:<event sequence>`, `event: agentplat.execution_session_event`, `data: {\"version\":1,\"sequence\":<frame on this connection>,\"type\":\"execution_session_event\",\"payload\":<the session event>}`; a failure (an unknown session, a bad `after`) is one `agentplat.failed` frame inside the 200 stream, as AgentPlat answers. Resumes after the `Last-Event-ID` of a reconnect, which wins over `?after=`; ends once the session is terminal and every event was sent (capability `execution_event_stream`).",
    auth: true,
    project: true,
    params: &[
        ROOM_ID,
        EXECUTION_SESSION_ID,
        AFTER,
        LAST_EVENT_ID,
    ],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "an event stream",
        bodies: &[Body::EventStream("StreamEnvelope")],
    }],
    failures: &[
        NOT_FOUND_SESSION,
        Failure {
            code: GatehouseCode::BadRequest,
            when: "`after` is not a non-negative integer",
        },
        STREAMS_FULL,
    ],
};

/// `POST /api/rooms/{room_id}/execution-sessions/{session_id}/authority` (`changeExecutionAuthority`).
pub const CHANGE_EXECUTION_AUTHORITY: Operation = Operation {
    id: "changeExecutionAuthority",
    method: Method::Post,
    path: "/api/rooms/{room_id}/execution-sessions/{session_id}/authority",
    family: Family::AgentPlat,
    summary: "Move the session's authority or role revision (a Gatehouse route)",
    description: "B1, beyond AgentPlat. Compare-and-set on `expectedRevision`. Every intervention records the session, authority and role revisions it was requested under; one requested before this change is rejected at its checkpoint with that reason (a request made before an authority change is never applied under the new authority).",
    auth: true,
    project: true,
    params: &[ROOM_ID, EXECUTION_SESSION_ID],
    request: Some((Body::Json("ChangeAuthorityBody"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "`{data: session}` under the new revisions",
        bodies: &[Body::Json("ExecutionSessionResponse")],
    }],
    failures: &[
        NOT_FOUND_SESSION,
        Failure {
            code: GatehouseCode::RevisionConflict,
            when: "`expectedRevision` is missing or is not the stored revision, or the session changed concurrently",
        },
        Failure {
            code: GatehouseCode::SessionNotActive,
            when: "the session ended",
        },
    ],
};

// ---- The same, at AgentPlat's own root paths (its clients' layout) ------------------

/// `GET /rooms/{room_id}/execution-sessions/{session_id}` (`getExecutionSessionAtRoot`).
pub const GET_EXECUTION_SESSION_AT_ROOT: Operation = at_agentplat_root(
    GET_EXECUTION_SESSION,
    "getExecutionSessionAtRoot",
    "/rooms/{room_id}/execution-sessions/{session_id}",
    &[TENANT, ROOM_ID, EXECUTION_SESSION_ID],
    "B1, B2 at AgentPlat's root path. The session as AgentPlat writes it: AgentPlat's fields only (no `runtimeProfile`, `authorityRevision`, `roleRevision`, `checkpointProgress`, `outcome`; no `sessionRevision` on an intervention, no `details` on an event), in AgentPlat's order, times in milliseconds. Served only when the host runs the execution service; otherwise 404 `ROUTE_NOT_FOUND`.",
);

/// `POST /rooms/{room_id}/execution-sessions/{session_id}/interventions` (`requestInterventionAtRoot`).
pub const REQUEST_INTERVENTION_AT_ROOT: Operation = at_agentplat_root(
    REQUEST_INTERVENTION,
    "requestInterventionAtRoot",
    "/rooms/{room_id}/execution-sessions/{session_id}/interventions",
    &[TENANT, ROOM_ID, EXECUTION_SESSION_ID],
    "B2, B3, C6 at AgentPlat's root path, answering the session in AgentPlat's JSON. Compare-and-set on `expectedRevision` (a missing one matches no revision, as in AgentPlat); replay-first on `operationId`; at most 256 interventions per session. 202 means requested. The requester is the authenticated actor; under AgentPlat's header-only tenant auth (no key) it is the body's `requestedByParticipantId`, which is then required (403 without it).",
);

/// `GET /rooms/{room_id}/execution-sessions/{session_id}/events` (`listExecutionEventsAtRoot`).
pub const LIST_EXECUTION_EVENTS_AT_ROOT: Operation = at_agentplat_root(
    LIST_EXECUTION_EVENTS,
    "listExecutionEventsAtRoot",
    "/rooms/{room_id}/execution-sessions/{session_id}/events",
    &[TENANT, ROOM_ID, EXECUTION_SESSION_ID, AFTER],
    "B1, B2 at AgentPlat's root path: the events after a sequence, as AgentPlat writes them (`sequence` first on `session_opened`, last on the others; no `details`; times in milliseconds).",
);

/// `GET /rooms/{room_id}/execution-sessions/{session_id}/events/stream` (`streamExecutionEventsAtRoot`).
pub const STREAM_EXECUTION_EVENTS_AT_ROOT: Operation = at_agentplat_root(
    STREAM_EXECUTION_EVENTS,
    "streamExecutionEventsAtRoot",
    "/rooms/{room_id}/execution-sessions/{session_id}/events/stream",
    &[TENANT, ROOM_ID, EXECUTION_SESSION_ID, AFTER],
    "B2 at AgentPlat's root path, framed as `@agentplat/streaming`'s `streamToSSE` frames it: each frame is `id: stream:<frame on this connection>`, `event: agentplat.execution_session_event`, `data: {\"version\":1,\"sequence\":<frame on this connection>,\"type\":\"execution_session_event\",\"payload\":<the event as AgentPlat writes it>}`; no `retry:` line; a failure is AgentPlat's `agentplat.failed` frame, numbered like any other. Starts after `?after=`; `Last-Event-ID` is ignored, as AgentPlat ignores it. Heartbeat comments; ends once the session is terminal and every event was sent (capability `execution_event_stream`).",
);
