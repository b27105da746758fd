//! Agenta's durable session control beyond the respond (Agenta v0.121 and later; the
//! capability `durable_approvals`): the durable Stop, the session snapshot and its
//! replayable events. Their bodies are the types of [`crate::sessions`].

use super::operation::{
    Body, Failure, Family, In, Method, Operation, Optional, Param, ParamType, Reply,
};
use crate::error::GatehouseCode;

const SESSION_ID: Param = Param {
    name: "session_id",
    location: In::Path,
    required: true,
    kind: ParamType::Text,
    description: "The agent session.",
};

/// `POST /api/sessions/{session_id}/cancel` (`cancelSession`).
pub const CANCEL_SESSION: Operation = Operation {
    id: "cancelSession",
    method: Method::Post,
    path: "/api/sessions/{session_id}/cancel",
    family: Family::Agenta,
    summary: "Stop a session's running turn (a durable command)",
    description: "Agenta's durable Stop (capability `durable_approvals`). Records a `cancel` command and marks the running (or parked) turn `stopping`, cancelling its pending gates, in one transaction. 202 says the command is recorded, not that the run stopped: its outcome (`stopped`, `not_running`, `superseded_by_newer_turn`, `failed`, `lost`) arrives through the snapshot and the events. 200 with an `obsolete` command when nothing ran. `expected_execution_id` refuses the Stop (409 `{detail: {message, current_execution_id}}`) unless that execution is the running one. The same `Idempotency-Key` with the same expectation replays the stored command.",
    auth: true,
    project: true,
    params: &[
        SESSION_ID,
        Param {
            name: "Idempotency-Key",
            location: In::Header,
            required: false,
            kind: ParamType::AnyText,
            description: "At most 255 characters (stripped; blank means none, as Agenta reads it); a repeated Stop with the same key and expectation replays the stored command.",
        },
    ],
    request: Some((Body::Json("SessionCancelRequest"), Optional::EmptyIsEmptyObject)),
    replies: &[
        Reply {
            status: 202,
            description: "`{command {id, state}, execution {id, state: stopping}}`: the Stop is recorded; the run is not yet stopped",
            bodies: &[Body::Json("SessionCancelResponse")],
        },
        Reply {
            status: 200,
            description: "`{command {id, state: obsolete}, execution {id: null, state: idle}}`: nothing to stop",
            bodies: &[Body::Json("SessionCancelResponse")],
        },
    ],
    failures: &[
        Failure {
            code: GatehouseCode::Conflict,
            when: "`expected_execution_id` is not the running (or parked) execution, or it already ended (`{detail: {message, current_execution_id}}`), or the `Idempotency-Key` was used with another expectation (`{detail: \"...\"}`); nothing is written",
        },
        Failure {
            code: GatehouseCode::ValidationError,
            when: "an invalid session id (`{detail: \"...\"}`), extra keys in the body, or an `Idempotency-Key` over 255 characters (the envelope `validation_error`)",
        },
    ],
};

/// `GET /api/sessions/{session_id}` (`getSessionSnapshot`).
pub const GET_SESSION_SNAPSHOT: Operation = Operation {
    id: "getSessionSnapshot",
    method: Method::Get,
    path: "/api/sessions/{session_id}",
    family: Family::Agenta,
    summary: "A session's state in one read",
    description: "Agenta's session snapshot: the execution state (`idle`, `running`, `stopping`), the pending inputs and gates, how far its durable events go (`read.latest_sequence`), and the host's session capabilities (`durable_approvals`, `queue`, `steer`). Keys absent rather than null.",
    auth: true,
    project: true,
    params: &[SESSION_ID],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "the snapshot",
        bodies: &[Body::Json("SessionSnapshotResponse")],
    }],
    failures: &[
        Failure {
            code: GatehouseCode::BadRequest,
            when: "the session id is outside `^[a-zA-Z0-9_-]{1,128}$` (as Agenta refuses it)",
        },
    ],
};

/// `GET /api/sessions/{session_id}/events` (`watchSessionEvents`).
pub const WATCH_SESSION_EVENTS: Operation = Operation {
    id: "watchSessionEvents",
    method: Method::Get,
    path: "/api/sessions/{session_id}/events",
    family: Family::Agenta,
    summary: "A session's durable events, replayed from a sequence, then live (Server-Sent Events)",
    description: "Agenta's session events: `retry:`, the durable events with `sequence > after` (`data:` of kind `event`), `event: ready`, then live frames (kind `frame`, not replayed), `: heartbeat` comments, and at the end `event: relay-close {reason, reconnect}`. After a dropped connection, reconnect with `after` = the last sequence seen.",
    auth: true,
    project: true,
    params: &[
        SESSION_ID,
        Param {
            name: "after",
            location: In::Query,
            required: false,
            kind: ParamType::Count,
            description: "Replay the durable events after this sequence (default 0: all).",
        },
    ],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "an open event stream",
        bodies: &[Body::EventStream("SessionDurableEvent")],
    }],
    failures: &[
        Failure {
            code: GatehouseCode::BadRequest,
            when: "the session id is outside `^[a-zA-Z0-9_-]{1,128}$` (as Agenta refuses it)",
        },
    ],
};
