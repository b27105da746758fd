//! Agenta's interactions API (A5), under `/api/sessions`: query, read, answer (one or a
//! batch), create, transition and cancel interaction rows, and the session watch stream.

use super::operation::{
    Body, Failure, Family, In, Method, Operation, Optional, Param, ParamType, Reply,
};
use super::shared::STREAMS_FULL;
use crate::error::GatehouseCode;

const ID: Param = Param {
    name: "id",
    location: In::Path,
    required: true,
    kind: ParamType::Uuid,
    description: "The interaction row's `id` (not its token).",
};

const NOT_FOUND_ROW: Failure = Failure {
    code: GatehouseCode::NotFound,
    when: "no such interaction in this project (\"Interaction not found\")",
};
const BAD_ID: Failure = Failure {
    code: GatehouseCode::ValidationError,
    when: "the `id` is not a UUID",
};

/// `POST /api/sessions/interactions/query` (`queryInteractions`).
pub const QUERY_INTERACTIONS: Operation = Operation {
    id: "queryInteractions",
    method: Method::Post,
    path: "/api/sessions/interactions/query",
    family: Family::Agenta,
    summary: "Filter and window the project's interaction rows",
    description: "A5. Filters by session, turn, kind, status, delivery flags, or `actionable_only` (pending only); windows by `limit` (at most 1000), `next`, `order`, `oldest`/`newest` (RFC 3339). An empty body lists every row.",
    auth: true,
    project: true,
    params: &[],
    request: Some((
        Body::Json("InteractionQueryRequest"),
        Optional::EmptyIsEmptyObject,
    )),
    replies: &[Reply {
        status: 200,
        description: "`{count, interactions}`",
        bodies: &[Body::Json("InteractionsResponse")],
    }],
    failures: &[],
};

/// `GET /api/sessions/interactions/{id}` (`getInteraction`).
pub const GET_INTERACTION: Operation = Operation {
    id: "getInteraction",
    method: Method::Get,
    path: "/api/sessions/interactions/{id}",
    family: Family::Agenta,
    summary: "One interaction row",
    description: "A5. The row with every optional field rendered (nulls included) and `data.parameters` (the stamped config) when the turn had one.",
    auth: true,
    project: true,
    params: &[ID],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{count: 1, interaction}`",
        bodies: &[Body::Json("InteractionResponse")],
    }],
    failures: &[BAD_ID, NOT_FOUND_ROW],
};

/// `POST /api/sessions/interactions/{id}/respond` (`respondToInteraction`).
pub const RESPOND_TO_INTERACTION: Operation = Operation {
    id: "respondToInteraction",
    method: Method::Post,
    path: "/api/sessions/interactions/{id}/respond",
    family: Family::Agenta,
    summary: "Answer a pending gate, exactly once",
    description: "A5, C1, and Agenta's durable contract (docs/CONTRACT.md, \"Durable contract\"). The host's `/api/capabilities` says which form it speaks. Durable (capability `durable_approvals`, the default): `Idempotency-Key` is required; the body is `answer`, or `answers[]` (1..100 items `{interaction_id, answer}`, the path's gate among them), and an optional `expected_execution_id`; in ONE transaction the answers are admitted, the gate's turn (the source execution) is settled by a compare-and-set and the continuation command is recorded; 202 `{interaction, command, execution}` (`command` null when nothing new was created: the same verdict sent again, or an answer leaving another gate of the turn pending: `execution.state` `awaiting_interactions`, the source not settled, and the answer that completes the turn's gates continues it once); errors are Agenta's top-level envelope `{code, message, retryable, details?, next_step?}`: 422 `validation_error` (`details.field`/`reason`: `answers`/`anchor_missing`, `Idempotency-Key`/`required` or `too_long`, `answer`/`required`), 409 `execution_mismatch` (`details.current_execution_id`), `idempotency_key_reused`, `execution_terminal` (`details.execution_state`, or `details.interaction_status`). Legacy: one compare-and-set flips `pending -> responded`; of N racing answers one gets 200 and the others 409 `ALREADY_ANSWERED`, and the resume of the gated turn is enqueued once. A `user_approval` answer needs a boolean `approved`. A retry carrying the same `Idempotency-Key` and body replays the first answer.",
    auth: true,
    project: true,
    params: &[
        ID,
        Param {
            name: "Idempotency-Key",
            location: In::Header,
            required: false,
            kind: ParamType::Text,
            description: "1 to 255 characters; required by the durable contract (a 422 envelope without it), optional in the legacy one; a retried respond with the same key and body gets the first answer back.",
        },
    ],
    request: Some((Body::Json("SessionInteractionRespondRequest"), Optional::No)),
    replies: &[
        Reply {
            status: 200,
            description: "legacy: `{count: 1, interaction}`: the row after the flip (or the replayed first answer)",
            bodies: &[Body::Json("InteractionResponse")],
        },
        Reply {
            status: 202,
            description: "durable: `{interaction, command, execution}`: the row, the continuation command (`pending`; its current state on a replay; null when nothing new was created) and the execution (`pending_delivery`, `recoverable` when its delivery failed, or the source turn's state)",
            bodies: &[Body::Json("SessionInteractionContinuationResponse")],
        },
    ],
    failures: &[
        BAD_ID,
        NOT_FOUND_ROW,
        Failure {
            code: GatehouseCode::AlreadyAnswered,
            when: "the row is no longer pending: another device answered, or the gate was cancelled (legacy: \"Interaction is no longer pending\"; durable: the envelope `execution_terminal`, or `execution_mismatch`)",
        },
        Failure {
            code: GatehouseCode::IdempotencyKeyReused,
            when: "the `Idempotency-Key` was used for a different request",
        },
        Failure {
            code: GatehouseCode::StaleGate,
            when: "the body's `digest` is not the pending gate's: it changed after the client read it (C8, capability `answer_digest`); nothing was recorded",
        },
    ],
};

/// `POST /api/sessions/{session_id}/continuations/resume` (`resumeSessionContinuation`).
pub const RESUME_SESSION_CONTINUATION: Operation = Operation {
    id: "resumeSessionContinuation",
    method: Method::Post,
    path: "/api/sessions/{session_id}/continuations/resume",
    family: Family::Agenta,
    summary: "Deliver again a continuation whose delivery failed",
    description: "Agenta's durable contract (capability `durable_approvals`; not routed on a legacy host). A durable respond answered 202 with `execution.state: recoverable` left its continuation undelivered: this delivers it again (the dispatcher also does, on its next pass). `{resumed: false}` when the session has no such continuation (none, or its delivery is under way or done).",
    auth: true,
    project: true,
    params: &[Param {
        name: "session_id",
        location: In::Path,
        required: true,
        kind: ParamType::Text,
        description: "The agent session.",
    }],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{resumed}`",
        bodies: &[Body::Json("SessionContinuationResumeResponse")],
    }],
    failures: &[],
};

/// `POST /api/sessions/interactions/respond-batch` (`respondToInteractions`).
pub const RESPOND_TO_INTERACTIONS: Operation = Operation {
    id: "respondToInteractions",
    method: Method::Post,
    path: "/api/sessions/interactions/respond-batch",
    family: Family::Gatehouse,
    summary: "Answer many gates in one request (approve-all), each exactly once",
    description: "C4, a Gatehouse route (capability `interaction_batch`). Up to 500 items `{id, answer, idempotency_key?}` in one transaction; each gate is answered exactly as by a single respond (one compare-and-set) and gets its own outcome, in the request's order: `answered` (with the row), `already_answered`, `not_found`, `invalid` (with the error). An item's `idempotency_key` makes a retried batch replay that gate's first answer; a key is bound to its gate and answer as a single respond's `Idempotency-Key` is, so the two replay each other. On a host speaking Agenta's durable contract the gates are grouped by turn and each turn's still-pending gates are admitted as one durable respond (one transaction per turn: settled and continued as the durable respond does); a gate no longer pending is `already_answered` (`answered` when it carries an `idempotency_key` and holds that answer).",
    auth: true,
    project: true,
    params: &[],
    request: Some((Body::Json("BatchRespondRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "`{count, results}`: one result per item, in order",
        bodies: &[Body::Json("BatchRespondResponse")],
    }],
    failures: &[Failure {
        code: GatehouseCode::ValidationError,
        when: "`answers` is empty or holds more than 500 items",
    }],
};

/// `POST /api/sessions/interactions/` (`createInteraction`).
pub const CREATE_INTERACTION: Operation = Operation {
    id: "createInteraction",
    method: Method::Post,
    path: "/api/sessions/interactions/",
    family: Family::Agenta,
    summary: "Open a gate (a runner writes its row)",
    description: "A4, A5. Idempotent on (project, `session_id`, `token`): a re-post answers the existing row unchanged.",
    auth: true,
    project: true,
    params: &[],
    request: Some((Body::Json("CreateInteractionRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "`{count: 1, interaction}`: the new row, or the existing one",
        bodies: &[Body::Json("InteractionResponse")],
    }],
    failures: &[],
};

/// `POST /api/sessions/interactions` (`createInteractionWithoutSlash`).
pub const CREATE_INTERACTION_WITHOUT_SLASH: Operation = Operation {
    id: "createInteractionWithoutSlash",
    method: Method::Post,
    path: "/api/sessions/interactions",
    family: Family::Agenta,
    summary: "Open a gate (the same route without the trailing slash)",
    description: "The same as `POST /api/sessions/interactions/`.",
    auth: true,
    project: true,
    params: &[],
    request: Some((Body::Json("CreateInteractionRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "`{count: 1, interaction}`: the new row, or the existing one",
        bodies: &[Body::Json("InteractionResponse")],
    }],
    failures: &[],
};

/// `POST /api/sessions/interactions/transition` (`transitionInteraction`).
pub const TRANSITION_INTERACTION: Operation = Operation {
    id: "transitionInteraction",
    method: Method::Post,
    path: "/api/sessions/interactions/transition",
    family: Family::Agenta,
    summary: "A runner resolves or cancels a gate by its token",
    description: "A5. Moves the row of (`session_id`, `token`) to `resolved` (with a `resolution`), `responded` or `cancelled`. Answering one of the several gates a turn parked on (A7) queues its resume: the answer completing the turn's gates continues the turn.",
    auth: true,
    project: true,
    params: &[],
    request: Some((Body::Json("TransitionRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "`{count: 1, interaction}`: the row after the move",
        bodies: &[Body::Json("InteractionResponse")],
    }],
    failures: &[
        Failure {
            code: GatehouseCode::NotFound,
            when: "no row with this session and token",
        },
        Failure {
            code: GatehouseCode::AlreadyAnswered,
            when: "the row cannot move there from its current status",
        },
    ],
};

/// `POST /api/sessions/interactions/cancel-stale` (`cancelStaleInteractions`).
pub const CANCEL_STALE_INTERACTIONS: Operation = Operation {
    id: "cancelStaleInteractions",
    method: Method::Post,
    path: "/api/sessions/interactions/cancel-stale",
    family: Family::Agenta,
    summary: "Cancel the pending gates of a session's other turns",
    description: "A5. Cancels every pending row of `session_id` whose turn is not `turn_id` (or only those of `tokens`, when given).",
    auth: true,
    project: true,
    params: &[],
    request: Some((Body::Json("CancelStaleRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "`{cancelled}`: how many rows were cancelled",
        bodies: &[Body::Json("CancelStaleResponse")],
    }],
    failures: &[],
};

/// `GET /api/sessions/streams/watch` (`watchSession`).
pub const WATCH_SESSION: Operation = Operation {
    id: "watchSession",
    method: Method::Get,
    path: "/api/sessions/streams/watch",
    family: Family::Agenta,
    summary: "Watch a session's gates (Server-Sent Events)",
    description: "A5. First `retry:` and `event: ready`, then `interaction` (a row changed status), `records-changed`, `lifecycle` (`running`/`ended`) events, and `: heartbeat` comments. The stream stays open until the client leaves or the server stops.",
    auth: true,
    project: true,
    params: &[Param {
        name: "session_id",
        location: In::Query,
        required: true,
        kind: ParamType::Text,
        description: "The session to watch.",
    }],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "an open event stream",
        bodies: &[Body::EventStream("WatchEvent")],
    }],
    failures: &[
        Failure {
            code: GatehouseCode::BadRequest,
            when: "`session_id` is missing or blank",
        },
        STREAMS_FULL,
    ],
};
