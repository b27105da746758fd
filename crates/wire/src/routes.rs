//! The HTTP API of Gatehouse's server as data: the route registry. Each operation (a
//! method on a path) is a named constant ([`RESPOND_TO_INTERACTION`], ...: the
//! `operationId` in SCREAMING_SNAKE_CASE), and [`OPERATIONS`] lists them all.
//!
//! Pure data: this module depends on nothing but the error codes and the tenant header's
//! name. The OpenAPI document is generated from it by [`crate::openapi`]; the server
//! routes what it lists (a server test checks the real router against [`OPERATIONS`]
//! both ways), and the client takes every method and path it sends from here (a client
//! test checks each request it makes with [`matching`]).
//!
//! **Adding a route is one entry here** (beside its handler in the server): a named
//! constant in [`OPERATIONS`] with its method, path, parameters, request and response
//! bodies (by registered type name), the errors it can answer, and whether it needs the
//! API key. The errors every route shares (401 without a key, 400/413/422 for a bad
//! body, 500, and 503 for an unavailable database on the routes that name a project)
//! follow from the entry's flags; list only what is particular to the route.
//! Then `cargo xtask schema` (the committed `schema/openapi.json` is generated from it).
//!
//! ```
//! use gatehouse_wire::routes::{self, Method};
//! let path = "/api/sessions/interactions/019fac94-0000-7000-8000-000000000001/respond";
//! let respond = routes::matching(Method::Post, path).unwrap();
//! assert_eq!(respond, &routes::RESPOND_TO_INTERACTION);
//! assert_eq!(respond.id, "respondToInteraction");
//! assert_eq!(routes::matching(Method::Get, path), None);
//! ```

use crate::error::GatehouseCode;

/// An HTTP method of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Method {
    /// `GET`.
    Get,
    /// `POST`.
    Post,
}

impl Method {
    /// The lowercase name OpenAPI uses as the key of a path item.
    pub fn key(self) -> &'static str {
        match self {
            Self::Get => "get",
            Self::Post => "post",
        }
    }

    /// The uppercase HTTP name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
        }
    }
}

/// Which upstream a route comes from (it decides the error envelope).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Family {
    /// Agenta's shape: errors `{"detail", "code"}` ([`crate::error::FastApiErrorBody`]),
    /// bad bodies 422.
    Agenta,
    /// AgentPlat's shape: success `{"data": ...}`, errors `{"error": {...}}`
    /// ([`crate::error::AgentPlatErrorEnvelope`]), bad bodies 400.
    AgentPlat,
    /// Gatehouse's own routes, in Agenta's error envelope.
    Gatehouse,
}

impl Family {
    /// The OpenAPI tag of the family.
    pub fn tag(self) -> &'static str {
        match self {
            Self::Agenta => "agenta",
            Self::AgentPlat => "agentplat",
            Self::Gatehouse => "gatehouse",
        }
    }

    /// The registered name of this family's error body.
    pub fn error_body(self) -> &'static str {
        match self {
            Self::Agenta | Self::Gatehouse => "FastApiErrorBody",
            Self::AgentPlat => "AgentPlatErrorEnvelope",
        }
    }

    /// The status of a body that is JSON but has the wrong shape.
    pub fn validation_status(self) -> u16 {
        match self {
            Self::Agenta | Self::Gatehouse => 422,
            Self::AgentPlat => 400,
        }
    }
}

/// Where a parameter travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum In {
    /// A `{name}` segment of the path.
    Path,
    /// The query string.
    Query,
    /// A request header.
    Header,
}

impl In {
    /// The name OpenAPI gives the location (`path`, `query`, `header`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Query => "query",
            Self::Header => "header",
        }
    }
}

/// The JSON Schema of a parameter's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamType {
    /// Any non-empty text.
    Text,
    /// A UUID (other text answers a validation error).
    Uuid,
    /// A non-negative integer.
    Count,
    /// Any text, the empty string included.
    AnyText,
}

/// One parameter of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    /// Its name (a header's name as sent).
    pub name: &'static str,
    /// Where it travels.
    pub location: In,
    /// Whether the operation needs it.
    pub required: bool,
    /// Its value's type.
    pub kind: ParamType,
    /// What it is.
    pub description: &'static str,
}

/// A body, by media type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Body {
    /// `application/json`, the registered wire type of that name.
    Json(&'static str),
    /// `text/event-stream`; each event's `data` is the registered type of that name.
    EventStream(&'static str),
    /// `application/x-ndjson`; each line is the registered type of that name.
    Ndjson(&'static str),
    /// `application/json`: an OpenAPI document (the one [`crate::openapi`] generates).
    OpenApiDocument,
    /// `text/plain`: metrics in Prometheus's text exposition format (version 0.0.4).
    PrometheusText,
}

/// One success answer of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reply {
    /// The HTTP status.
    pub status: u16,
    /// When it is answered.
    pub description: &'static str,
    /// The bodies it may carry (one per media type, chosen by `Accept` where several).
    pub bodies: &'static [Body],
}

/// One error answer particular to an operation (the shared ones follow from its flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Failure {
    /// The machine code in the body (it decides the status, except 405 and the
    /// AgentPlat-shaped 400s).
    pub code: GatehouseCode,
    /// When it is answered.
    pub when: &'static str,
}

/// One operation (a method on a path) of the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// The OpenAPI `operationId`, unique.
    pub id: &'static str,
    /// The method.
    pub method: Method,
    /// The path, with `{name}` segments as axum writes them.
    pub path: &'static str,
    /// Whose route it is (and so its envelope).
    pub family: Family,
    /// One line.
    pub summary: &'static str,
    /// More, with the contract section.
    pub description: &'static str,
    /// Whether it needs `Authorization: ApiKey <key>` (or `Bearer <key>`).
    pub auth: bool,
    /// Whether it needs `?project_id=<uuid>`.
    pub project: bool,
    /// Its other parameters.
    pub params: &'static [Param],
    /// Its request body, and whether an empty body is accepted (as `{}`).
    pub request: Option<(Body, Optional)>,
    /// Its success answers.
    pub replies: &'static [Reply],
    /// The errors particular to it.
    pub failures: &'static [Failure],
}

/// Whether a request body may be left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Optional {
    /// The body is required.
    No,
    /// An empty body reads as `{}`.
    EmptyIsEmptyObject,
}

const ID: Param = Param {
    name: "id",
    location: In::Path,
    required: true,
    kind: ParamType::Uuid,
    description: "The interaction row's `id` (not its token).",
};
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
/// The tenant header of AgentPlat's root paths (where `/api` routes take [`PROJECT_ID`]).
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

const NOT_FOUND_ROW: Failure = Failure {
    code: GatehouseCode::NotFound,
    when: "no such interaction in this project (\"Interaction not found\")",
};
const NOT_FOUND_SESSION: Failure = Failure {
    code: GatehouseCode::NotFound,
    when: "no such execution session in this room and project (\"Execution session not found\")",
};
const BAD_ID: Failure = Failure {
    code: GatehouseCode::ValidationError,
    when: "the `id` is not a UUID",
};

/// `?project_id=`: every operation whose [`Operation::project`] is set takes it.
pub const PROJECT_ID: Param = Param {
    name: "project_id",
    location: In::Query,
    required: true,
    kind: ParamType::Uuid,
    description: "The project every `/api` route is scoped to.",
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

// ---- Agenta's interactions API (A5) ---------------------------------------------

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
    description: "A5, C1. One compare-and-set flips `pending -> responded`; of N racing answers one gets 200 and the others 409 `ALREADY_ANSWERED`, and the resume of the gated turn is enqueued once. A `user_approval` answer needs a boolean `approved`. A retry carrying the same `Idempotency-Key` and body replays the first answer.",
    auth: true,
    project: true,
    params: &[
        ID,
        Param {
            name: "Idempotency-Key",
            location: In::Header,
            required: false,
            kind: ParamType::Text,
            description: "1 to 255 visible ASCII characters; a retried respond with the same key and body gets the first answer back.",
        },
    ],
    request: Some((Body::Json("RespondRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "`{count: 1, interaction}`: the row after the flip (or the replayed first answer)",
        bodies: &[Body::Json("InteractionResponse")],
    }],
    failures: &[
        BAD_ID,
        NOT_FOUND_ROW,
        Failure {
            code: GatehouseCode::AlreadyAnswered,
            when: "the row is no longer pending: another device answered, or the gate was cancelled (\"Interaction is no longer pending\")",
        },
        Failure {
            code: GatehouseCode::IdempotencyKeyReused,
            when: "the `Idempotency-Key` was used for a different request",
        },
    ],
};

/// `POST /api/sessions/interactions/respond-batch` (`respondToInteractions`).
pub const RESPOND_TO_INTERACTIONS: Operation = Operation {
    id: "respondToInteractions",
    method: Method::Post,
    path: "/api/sessions/interactions/respond-batch",
    family: Family::Gatehouse,
    summary: "Answer many gates in one request (approve-all), each exactly once",
    description: "C4, a Gatehouse route (capability `interaction_batch`). Up to 500 items `{id, answer, idempotency_key?}` in one transaction; each gate is answered exactly as by a single respond (one compare-and-set) and gets its own outcome, in the request's order: `answered` (with the row), `already_answered`, `not_found`, `invalid` (with the error). An item's `idempotency_key` makes a retried batch replay that gate's first answer; a key is bound to its gate and answer as a single respond's `Idempotency-Key` is, so the two replay each other.",
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
    description: "A5. Moves the row of (`session_id`, `token`) to `resolved` (with a `resolution`) or `cancelled`.",
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

// ---- Gatehouse's service tier (A6) ----------------------------------------------

/// `POST /api/invoke` (`invoke`).
pub const INVOKE: Operation = Operation {
    id: "invoke",
    method: Method::Post,
    path: "/api/invoke",
    family: Family::Gatehouse,
    summary: "Run a turn",
    description: "A6. Resolves the config (inline `data.parameters`, else hydrated from `references`), stamps `effectiveParameters` on the `/run` request, runs the deterministic harness, and answers how the turn ended: `completed`, `failed`, or `parked` at a gate (its interaction ids listed). The body is read as Agenta's API reads it (Python's `json.loads`: `Infinity`, `-Infinity` and `1E400` are read and stamped as Python writes them; `NaN` and a lone surrogate escape are refused with a 422 naming where).",
    auth: true,
    project: true,
    params: &[],
    request: Some((Body::Json("InvokeRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "how the turn ended",
        bodies: &[Body::Json("InvokeResponse")],
    }],
    failures: &[
        Failure {
            code: GatehouseCode::NotFound,
            when: "the run names a saved agent revision (`references.workflow_revision.id`) the registry does not have (\"Agent revision not found\")",
        },
        Failure {
            code: GatehouseCode::BindingConflict,
            when: "the run names a saved agent revision but runs another config, or a revision of another participant (\"Agent revision does not match the assigned Room participant\")",
        },
    ],
};

/// `GET /api/sessions/{session_id}/turns` (`listTurns`).
pub const LIST_TURNS: Operation = Operation {
    id: "listTurns",
    method: Method::Get,
    path: "/api/sessions/{session_id}/turns",
    family: Family::Gatehouse,
    summary: "A session's turns, oldest first",
    description: "Each turn with its status, model, output, and whether it was a resume.",
    auth: true,
    project: true,
    params: &[Param {
        name: "session_id",
        location: In::Path,
        required: true,
        kind: ParamType::Text,
        description: "The session.",
    }],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{session_id, count, turns}`",
        bodies: &[Body::Json("TurnsResponse")],
    }],
    failures: &[Failure {
        code: GatehouseCode::NotFound,
        when: "the session has no turn in this project (\"Session not found\")",
    }],
};

/// `POST /api/workflows/revisions/commit` (`commitRevision`).
pub const COMMIT_REVISION: Operation = Operation {
    id: "commitRevision",
    method: Method::Post,
    path: "/api/workflows/revisions/commit",
    family: Family::Gatehouse,
    summary: "Commit a workflow revision and move its variant's HEAD",
    description: "Creates the workflow and variant by slug when new. A later turn hydrated from the variant runs this revision; a gated turn resumes under the config it was gated with (A6).",
    auth: true,
    project: true,
    params: &[],
    request: Some((Body::Json("CommitRevisionRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "the workflow, variant and new revision",
        bodies: &[Body::Json("CommitRevisionResponse")],
    }],
    failures: &[],
};

/// `GET /api/webhooks/deliveries` (`listWebhookDeliveries`).
pub const LIST_WEBHOOK_DELIVERIES: Operation = Operation {
    id: "listWebhookDeliveries",
    method: Method::Get,
    path: "/api/webhooks/deliveries",
    family: Family::Gatehouse,
    summary: "The webhook outbox of a project, newest first",
    description: "Each event for each configured endpoint: its `webhook-id`, type, state (`pending`, `delivered`, `failed`), attempts, next attempt and last error. Events are written with the change they announce and delivered at least once, signed as Standard Webhooks (CONTRACT.md, Webhooks).",
    auth: true,
    project: true,
    params: &[
        Param {
            name: "state",
            location: In::Query,
            required: false,
            kind: ParamType::Text,
            description: "Only deliveries in this state: `pending`, `delivered` or `failed`.",
        },
        Param {
            name: "limit",
            location: In::Query,
            required: false,
            kind: ParamType::Count,
            description: "At most this many (default 100, at most 1000).",
        },
    ],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{count, deliveries}`",
        bodies: &[Body::Json("WebhookDeliveriesResponse")],
    }],
    failures: &[],
};

/// `GET /api/capabilities` (`getCapabilities`).
pub const GET_CAPABILITIES: Operation = Operation {
    id: "getCapabilities",
    method: Method::Get,
    path: "/api/capabilities",
    family: Family::Gatehouse,
    summary: "What this host serves (C5)",
    description: "C5. No key needed. A client asks once and caches the answer; a host without this route is learned from its route-not-found 404.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{service, version, capabilities}`",
        bodies: &[Body::Json("CapabilitiesResponse")],
    }],
    failures: &[],
};

/// `GET /api/openapi.json` (`getOpenApi`).
pub const GET_OPEN_API: Operation = Operation {
    id: "getOpenApi",
    method: Method::Get,
    path: "/api/openapi.json",
    family: Family::Gatehouse,
    summary: "This document",
    description: "The OpenAPI 3.1 description of this server, generated from the same Rust types as `schema/`. No key needed.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "an OpenAPI 3.1 document",
        bodies: &[Body::OpenApiDocument],
    }],
    failures: &[],
};

// ---- AgentPlat's execution sessions (B2), under /api ------------------------------

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

/// An event stream over the server's cap of open streams (derived from its open-file
/// limit): refused at once.
const STREAMS_FULL: Failure = Failure {
    code: GatehouseCode::Unavailable,
    when: "the server's open event streams are at their cap (derived from its open-file limit); `Retry-After` says when to try again",
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

/// `GET /health` (`health`).
pub const HEALTH: Operation = Operation {
    id: "health",
    method: Method::Get,
    path: "/health",
    family: Family::Gatehouse,
    summary: "Liveness",
    description: "Answers `{\"status\":\"ok\"}` as AgentPlat's own host does, for its clients and probes. No key needed.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "`{\"status\": \"ok\"}`",
        bodies: &[],
    }],
    failures: &[],
};

/// `GET /health/ready` (`readiness`).
pub const READINESS: Operation = Operation {
    id: "readiness",
    method: Method::Get,
    path: crate::health::READY_PATH,
    family: Family::Gatehouse,
    summary: "Readiness",
    description: "Whether this instance can do its work now (`/health` stays a pure liveness answer): the database takes a real write within 2 s and no write was refused for an unavailable database in the last 5 s, every embedded migration is applied, the resume workers, the reconciler and the webhook workers (when endpoints are configured) are alive. 200 when every check passes, else 503; the body names each check either way. No key needed.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "every check passed (`status: ok`)",
        bodies: &[Body::Json("ReadinessResponse")],
    }],
    failures: &[Failure {
        code: GatehouseCode::Unavailable,
        when: "a check failed, with `Retry-After`: the body is also a `ReadinessResponse` (`status: unavailable`, every check named) beside `detail` (the failing checks) and `code`",
    }],
};

/// The path of the metrics.
pub const METRICS_PATH: &str = "/metrics";

/// `GET /metrics` (`metrics`).
pub const METRICS: Operation = Operation {
    id: "metrics",
    method: Method::Get,
    path: METRICS_PATH,
    family: Family::Gatehouse,
    summary: "Metrics (Prometheus text format)",
    description: "This instance's metrics in Prometheus's text exposition format, for a Prometheus scrape: requests by method, matched route template and status (`gatehouse_http_requests_total`), their latency (`gatehouse_http_request_duration_seconds`), gates by status (`gatehouse_gates`), resume attempts (`gatehouse_resumes_total`), the resume backlog (`gatehouse_resume_backlog`), admission waits (`gatehouse_admission_waits_total`, `gatehouse_admission_wait_seconds`), lease takeovers (`gatehouse_lease_takeovers_total`), reconciler actions (`gatehouse_reconciler_actions_total`), webhook deliveries (`gatehouse_webhook_deliveries_total`), database pool use (`gatehouse_db_pool_connections`). No key needed. Served unless the server runs with metrics off (`gatehouse serve --metrics false`), when it answers 404 `ROUTE_NOT_FOUND`.",
    auth: false,
    project: false,
    params: &[],
    request: None,
    replies: &[Reply {
        status: 200,
        description: "the metrics, `text/plain; version=0.0.4`",
        bodies: &[Body::PrometheusText],
    }],
    failures: &[],
};

// ---- The runner tier (A1), outside /api -----------------------------------------

/// `POST /run` (`run`).
pub const RUN: Operation = Operation {
    id: "run",
    method: Method::Post,
    path: "/run",
    family: Family::Agenta,
    summary: "Run the deterministic harness on a /run request (runner tier)",
    description: "A1. Stateless: a tool step that needs approval ends the run with `stopReason` `awaiting_approval` and a `gate` event. `Accept: application/x-ndjson` streams `{\"kind\":\"event\"}` lines and exactly one final `{\"kind\":\"result\"}` line. The script comes from the extension key `script` (a Gatehouse extension), else the default script. The body is read as Agenta's runner reads it (JavaScript's `JSON.parse`: lone surrogate escapes and duplicate keys, the last winning, are read; at most 128 levels of nesting).",
    auth: true,
    project: false,
    params: &[],
    request: Some((Body::Json("RunRequest"), Optional::No)),
    replies: &[Reply {
        status: 200,
        description: "the result (JSON), or the NDJSON stream of records",
        bodies: &[Body::Json("RunResult"), Body::Ndjson("RunStreamRecord")],
    }],
    failures: &[Failure {
        code: GatehouseCode::ValidationError,
        when: "the `script` extension key is not a valid script",
    }],
};

/// Every operation the server routes, in the order of the crate docs' route table.
pub const OPERATIONS: &[Operation] = &[
    // ---- Agenta's interactions API (A5) ---------------------------------------------
    QUERY_INTERACTIONS,
    GET_INTERACTION,
    RESPOND_TO_INTERACTION,
    RESPOND_TO_INTERACTIONS,
    CREATE_INTERACTION,
    CREATE_INTERACTION_WITHOUT_SLASH,
    TRANSITION_INTERACTION,
    CANCEL_STALE_INTERACTIONS,
    WATCH_SESSION,
    // ---- Gatehouse's service tier (A6) ----------------------------------------------
    INVOKE,
    LIST_TURNS,
    COMMIT_REVISION,
    LIST_WEBHOOK_DELIVERIES,
    GET_CAPABILITIES,
    GET_OPEN_API,
    // ---- AgentPlat's execution sessions (B2), under /api ------------------------------
    GET_EXECUTION_SESSION,
    REQUEST_INTERVENTION,
    LIST_EXECUTION_EVENTS,
    STREAM_EXECUTION_EVENTS,
    CHANGE_EXECUTION_AUTHORITY,
    // ---- The same, at AgentPlat's own root paths (its clients' layout) ------------------
    GET_EXECUTION_SESSION_AT_ROOT,
    REQUEST_INTERVENTION_AT_ROOT,
    LIST_EXECUTION_EVENTS_AT_ROOT,
    STREAM_EXECUTION_EVENTS_AT_ROOT,
    HEALTH,
    READINESS,
    METRICS,
    // ---- The runner tier (A1), outside /api -----------------------------------------
    RUN,
];

/// A link from one operation's answer to another operation (OpenAPI `links`): where the
/// next call's parameters come from. Tools that walk an API (schemathesis' stateful
/// phase) follow them to reach rows that exist.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Link {
    /// The operation whose answer carries the values.
    pub from: &'static str,
    /// The status of that answer.
    pub status: u16,
    /// The operation to call next.
    pub to: &'static str,
    /// `(parameter, runtime expression)`, e.g. `("id", "$response.body#/interaction/id")`.
    pub parameters: &'static [(&'static str, &'static str)],
}

const SAME_PROJECT: (&str, &str) = ("query.project_id", "$request.query.project_id");

/// The links between operations.
pub const LINKS: &[Link] = &[
    Link {
        from: "createInteraction",
        status: 200,
        to: "getInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "createInteraction",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "createInteractionWithoutSlash",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "queryInteractions",
        status: 200,
        to: "getInteraction",
        parameters: &[("id", "$response.body#/interactions/0/id"), SAME_PROJECT],
    },
    Link {
        from: "getInteraction",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction/id"), SAME_PROJECT],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "listTurns",
        parameters: &[("session_id", "$response.body#/session_id"), SAME_PROJECT],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "respondToInteraction",
        parameters: &[("id", "$response.body#/interaction_ids/0"), SAME_PROJECT],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "getExecutionSession",
        parameters: &[
            ("room_id", "$response.body#/execution/room_id"),
            ("session_id", "$response.body#/execution/session_id"),
            SAME_PROJECT,
        ],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "requestIntervention",
        parameters: &[
            ("room_id", "$response.body#/execution/room_id"),
            ("session_id", "$response.body#/execution/session_id"),
            SAME_PROJECT,
        ],
    },
    Link {
        from: "invoke",
        status: 200,
        to: "listExecutionEvents",
        parameters: &[
            ("room_id", "$response.body#/execution/room_id"),
            ("session_id", "$response.body#/execution/session_id"),
            SAME_PROJECT,
        ],
    },
];

/// The operation of `method` on `path` (as registered, `{name}` segments included).
pub fn operation(method: Method, path: &str) -> Option<&'static Operation> {
    OPERATIONS
        .iter()
        .find(|op| op.method == method && op.path == path)
}

/// The registered paths, each once, in registry order.
pub fn paths() -> Vec<&'static str> {
    let mut paths: Vec<&'static str> = Vec::new();
    for op in OPERATIONS {
        if !paths.contains(&op.path) {
            paths.push(op.path);
        }
    }
    paths
}

/// One `/`-separated segment of a registered path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Segment {
    /// Text sent as it is (empty for the trailing `/` of `/api/sessions/interactions/`).
    Literal(&'static str),
    /// A `{name}` segment: the value of the path parameter `name`.
    Param(&'static str),
}

impl Operation {
    /// The segments of [`Operation::path`] after its leading `/`, in order.
    ///
    /// ```
    /// use gatehouse_wire::routes::{Segment, GET_INTERACTION};
    /// let segments: Vec<Segment> = GET_INTERACTION.segments().collect();
    /// assert_eq!(segments[3], Segment::Param("id"));
    /// ```
    pub fn segments(&self) -> impl Iterator<Item = Segment> {
        let path: &'static str = self.path;
        path.strip_prefix('/')
            .unwrap_or(path)
            .split('/')
            .map(
                |text| match text.strip_prefix('{').and_then(|t| t.strip_suffix('}')) {
                    Some(name) => Segment::Param(name),
                    None => Segment::Literal(text),
                },
            )
    }
}

/// The registered operation a concrete request is: `method` on `path` (as sent, without
/// the query), compared segment by segment, a `{name}` segment standing for any one
/// non-empty segment. Where two operations match, the one with a literal segment first
/// wins, as the server's router decides.
///
/// ```
/// use gatehouse_wire::routes::{self, Method};
/// let run = routes::matching(Method::Post, "/run").unwrap();
/// assert_eq!(run.id, "run");
/// assert_eq!(routes::matching(Method::Post, "/rooms/r/execution-sessions/s/authority"), None);
/// ```
pub fn matching(method: Method, path: &str) -> Option<&'static Operation> {
    let sent: Vec<&str> = path.strip_prefix('/').unwrap_or(path).split('/').collect();
    OPERATIONS
        .iter()
        .filter(|op| op.method == method)
        .filter_map(|op| {
            let template: Vec<Segment> = op.segments().collect();
            if template.len() != sent.len() {
                return None;
            }
            // Which segments are parameters: `false` (a literal) first sorts first.
            let mut shape = Vec::with_capacity(template.len());
            for (segment, text) in template.iter().zip(&sent) {
                match segment {
                    Segment::Literal(literal) if literal == text => shape.push(false),
                    Segment::Param(_) if !text.is_empty() => shape.push(true),
                    _ => return None,
                }
            }
            Some((shape, op))
        })
        .min_by(|(a, _), (b, _)| a.cmp(b))
        .map(|(_, op)| op)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A concrete path of `op`: each `{name}` filled with `<name>-1`.
    fn concrete(op: &Operation) -> String {
        let mut path = String::new();
        for segment in op.segments() {
            path.push('/');
            match segment {
                Segment::Literal(text) => path.push_str(text),
                Segment::Param(name) => path.push_str(&format!("{name}-1")),
            }
        }
        path
    }

    #[test]
    fn operation_ids_are_unique_and_every_path_parameter_is_declared() {
        let mut ids: Vec<&str> = OPERATIONS.iter().map(|op| op.id).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len(), "duplicate operationId");
        for op in OPERATIONS {
            let in_path: Vec<&str> = op
                .segments()
                .filter_map(|s| match s {
                    Segment::Param(name) => Some(name),
                    Segment::Literal(_) => None,
                })
                .collect();
            let declared: Vec<&str> = op
                .params
                .iter()
                .filter(|p| p.location == In::Path)
                .map(|p| p.name)
                .collect();
            assert_eq!(in_path, declared, "{}: path parameters", op.id);
        }
    }

    #[test]
    fn every_link_joins_two_registered_operations_by_their_parameters() {
        for link in LINKS {
            let from = OPERATIONS.iter().find(|op| op.id == link.from).unwrap();
            assert!(
                from.replies.iter().any(|r| r.status == link.status),
                "{link:?}"
            );
            let to = OPERATIONS.iter().find(|op| op.id == link.to).unwrap();
            for (name, _) in link.parameters {
                let bare = name.rsplit('.').next().unwrap();
                let known = to.params.iter().any(|p| p.name == bare)
                    || (bare == "project_id" && to.project);
                assert!(known, "{}: {} has no parameter {bare}", link.from, link.to);
            }
        }
    }

    #[test]
    fn every_operation_matches_its_own_concrete_path_and_nothing_else_does() {
        for op in OPERATIONS {
            let path = concrete(op);
            assert_eq!(matching(op.method, &path), Some(op), "{path}");
            assert_eq!(operation(op.method, op.path), Some(op));
        }
        for (method, path) in [
            (Method::Get, "/api/sessions/interactions/query/more"),
            (Method::Post, "/api/sessions/interactions/id-1"),
            (Method::Get, "/api/sessions/interactions/"),
            (Method::Get, "/api/sessions/interactions//respond"),
            (Method::Post, "/rooms/r/execution-sessions/s/authority"),
            (
                Method::Get,
                "/api/rooms/r/execution-sessions/s/events/stream/more",
            ),
            (Method::Get, "/"),
            (Method::Get, ""),
        ] {
            assert_eq!(matching(method, path), None, "{} {path}", method.as_str());
        }
    }

    #[test]
    fn a_literal_segment_wins_over_a_parameter() {
        let watch = matching(Method::Get, "/api/sessions/streams/watch");
        assert_eq!(watch, Some(&WATCH_SESSION));
        // A session named `interactions` would be ambiguous: the router reads a row.
        let row = matching(Method::Get, "/api/sessions/interactions/turns");
        assert_eq!(row, Some(&GET_INTERACTION));
        let turns = matching(Method::Get, "/api/sessions/s-1/turns");
        assert_eq!(turns, Some(&LIST_TURNS));
        let query = matching(Method::Post, "/api/sessions/interactions/query");
        assert_eq!(query, Some(&QUERY_INTERACTIONS));
    }
}
