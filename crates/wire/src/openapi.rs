//! The HTTP API of Gatehouse's server as data: the route registry ([`OPERATIONS`]) and
//! the OpenAPI 3.1 document generated from it ([`document`]).
//!
//! One source: every request and response body is a wire type of [`crate::schema`], the
//! same schemas `schema/` holds, hoisted into `components/schemas` under their contract
//! names; nothing here restates a shape. The document is committed as
//! `schema/openapi.json` (`cargo xtask schema` writes it with the other schema files,
//! `--check` and a contract test fail when it is stale) and served by the server at
//! `GET /api/openapi.json`. A server test checks this registry against the server's real
//! router both ways: every operation answers, and every routed path is registered.
//!
//! **Adding a route is one entry in [`OPERATIONS`]** (beside its handler in the server):
//! method, path, parameters, request and response bodies (by registered type name),
//! the errors it can answer, and whether it needs the API key. The errors every route
//! shares (401 without a key, 400/413/422 for a bad body, 500) follow from the entry's
//! flags; list only what is particular to the route.
//!
//! ```
//! let document = gatehouse_wire::openapi::document();
//! assert_eq!(document["openapi"], "3.1.0");
//! let respond = &document["paths"]["/api/sessions/interactions/{id}/respond"]["post"];
//! assert_eq!(respond["operationId"], "respondToInteraction");
//! assert_eq!(
//!     respond["responses"]["409"]["content"]["application/json"]["schema"]["$ref"],
//!     "#/components/schemas/FastApiErrorBody"
//! );
//! ```

use serde_json::{json, Value};

use crate::error::GatehouseCode;
use crate::schema::{self, SchemaEntry};
use crate::JsonObject;

/// The file name of the committed document in `schema/`.
pub const FILE_NAME: &str = "openapi.json";

/// The path the server serves the document at.
pub const PATH: &str = "/api/openapi.json";

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
    fn as_str(self) -> &'static str {
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
    /// `application/json`: an OpenAPI document (this module's [`document`]).
    OpenApiDocument,
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
const TENANT: Param = Param {
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

const JSON_ERROR_NOTE: &str =
    "Every error body carries Gatehouse's machine `code` beside the upstream's own fields.";

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

const GET_EXECUTION_SESSION: Operation = Operation {
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

const REQUEST_INTERVENTION: Operation = Operation {
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

const LIST_EXECUTION_EVENTS: Operation = Operation {
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

const CHANGE_AUTHORITY: Operation = Operation {
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

const STREAM_EXECUTION_EVENTS: Operation = Operation {
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
    ],
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

/// Every operation the server routes, in the order of the crate docs' route table.
pub const OPERATIONS: &[Operation] = &[
    // ---- Agenta's interactions API (A5) ---------------------------------------------
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
        failures: &[Failure {
            code: GatehouseCode::BadRequest,
            when: "`session_id` is missing or blank",
        }],
    },
    // ---- Gatehouse's service tier (A6) ----------------------------------------------
    Operation {
        id: "invoke",
        method: Method::Post,
        path: "/api/invoke",
        family: Family::Gatehouse,
        summary: "Run a turn",
        description: "A6. Resolves the config (inline `data.parameters`, else hydrated from `references`), stamps `effectiveParameters` on the `/run` request, runs the deterministic harness, and answers how the turn ended: `completed`, `failed`, or `parked` at a gate (its interaction ids listed).",
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
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
    },
    Operation {
        id: "getOpenApi",
        method: Method::Get,
        path: PATH,
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
    },
    // ---- AgentPlat's execution sessions (B2), under /api ------------------------------
    GET_EXECUTION_SESSION,
    REQUEST_INTERVENTION,
    LIST_EXECUTION_EVENTS,
    STREAM_EXECUTION_EVENTS,
    CHANGE_AUTHORITY,
    // ---- The same, at AgentPlat's own root paths (its clients' layout) ------------------
    at_agentplat_root(
        GET_EXECUTION_SESSION,
        "getExecutionSessionAtRoot",
        "/rooms/{room_id}/execution-sessions/{session_id}",
        &[TENANT, ROOM_ID, EXECUTION_SESSION_ID],
        "B1, B2 at AgentPlat's root path. The session as AgentPlat writes it: AgentPlat's fields only (no `runtimeProfile`, `authorityRevision`, `roleRevision`, `checkpointProgress`, `outcome`; no `sessionRevision` on an intervention, no `details` on an event), in AgentPlat's order, times in milliseconds. Served only when the host runs the execution service; otherwise 404 `ROUTE_NOT_FOUND`.",
    ),
    at_agentplat_root(
        REQUEST_INTERVENTION,
        "requestInterventionAtRoot",
        "/rooms/{room_id}/execution-sessions/{session_id}/interventions",
        &[TENANT, ROOM_ID, EXECUTION_SESSION_ID],
        "B2, B3, C6 at AgentPlat's root path, answering the session in AgentPlat's JSON. Compare-and-set on `expectedRevision` (a missing one matches no revision, as in AgentPlat); replay-first on `operationId`; at most 256 interventions per session. 202 means requested. The requester is the authenticated actor; under AgentPlat's header-only tenant auth (no key) it is the body's `requestedByParticipantId`, which is then required (403 without it).",
    ),
    at_agentplat_root(
        LIST_EXECUTION_EVENTS,
        "listExecutionEventsAtRoot",
        "/rooms/{room_id}/execution-sessions/{session_id}/events",
        &[TENANT, ROOM_ID, EXECUTION_SESSION_ID, AFTER],
        "B1, B2 at AgentPlat's root path: the events after a sequence, as AgentPlat writes them (`sequence` first on `session_opened`, last on the others; no `details`; times in milliseconds).",
    ),
    at_agentplat_root(
        STREAM_EXECUTION_EVENTS,
        "streamExecutionEventsAtRoot",
        "/rooms/{room_id}/execution-sessions/{session_id}/events/stream",
        &[TENANT, ROOM_ID, EXECUTION_SESSION_ID, AFTER],
        "B2 at AgentPlat's root path, framed as `@agentplat/streaming`'s `streamToSSE` frames it: each frame is `id: stream:<frame on this connection>`, `event: agentplat.execution_session_event`, `data: {\"version\":1,\"sequence\":<frame on this connection>,\"type\":\"execution_session_event\",\"payload\":<the event as AgentPlat writes it>}`; no `retry:` line; a failure is AgentPlat's `agentplat.failed` frame, numbered like any other. Starts after `?after=`; `Last-Event-ID` is ignored, as AgentPlat ignores it. Heartbeat comments; ends once the session is terminal and every event was sent (capability `execution_event_stream`).",
    ),
    Operation {
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
    },
    // ---- The runner tier (A1), outside /api -----------------------------------------
    Operation {
        id: "run",
        method: Method::Post,
        path: "/run",
        family: Family::Agenta,
        summary: "Run the deterministic harness on a /run request (runner tier)",
        description: "A1. Stateless: a tool step that needs approval ends the run with `stopReason` `awaiting_approval` and a `gate` event. `Accept: application/x-ndjson` streams `{\"kind\":\"event\"}` lines and exactly one final `{\"kind\":\"result\"}` line. The script comes from the extension key `script` (a Gatehouse extension), else the default script.",
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
    },
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

/// One error status of an operation: the codes that can come with it.
struct ErrorStatus {
    status: u16,
    lines: Vec<String>,
}

fn add_error(errors: &mut Vec<ErrorStatus>, status: u16, line: String) {
    match errors.iter_mut().find(|e| e.status == status) {
        Some(existing) => {
            if !existing.lines.contains(&line) {
                existing.lines.push(line);
            }
        }
        None => errors.push(ErrorStatus {
            status,
            lines: vec![line],
        }),
    }
}

/// The HTTP status `code` is answered with on a route of `family`.
fn status_of(code: GatehouseCode, family: Family) -> u16 {
    match (family, code) {
        // AgentPlat answers 400 for a shape error (VALIDATION_ERROR is 422 on Agenta's).
        (Family::AgentPlat, GatehouseCode::ValidationError) => 400,
        _ => code.http_status(),
    }
}

/// Every error an operation can answer: its own failures, then the shared ones its
/// flags imply, by status.
fn errors_of(op: &Operation) -> Vec<ErrorStatus> {
    let mut errors = Vec::new();
    let family = op.family;
    for failure in op.failures {
        add_error(
            &mut errors,
            status_of(failure.code, family),
            format!("`{}`: {}", failure.code.as_str(), failure.when),
        );
    }
    let params_with_rules = op
        .params
        .iter()
        .any(|p| matches!(p.kind, ParamType::Uuid | ParamType::Count));
    if op.project || params_with_rules {
        add_error(
            &mut errors,
            family.validation_status(),
            format!(
                "`{}`: a query or path parameter is missing or malformed (`project_id` must be a UUID)",
                if family == Family::AgentPlat {
                    "BAD_REQUEST"
                } else {
                    "VALIDATION_ERROR"
                }
            ),
        );
    }
    if let Some((_, optional)) = op.request {
        if optional == Optional::No {
            add_error(
                &mut errors,
                400,
                "`BAD_REQUEST`: the body is empty or not JSON".to_string(),
            );
        } else {
            add_error(
                &mut errors,
                400,
                "`BAD_REQUEST`: the body is not JSON".to_string(),
            );
        }
        add_error(
            &mut errors,
            family.validation_status(),
            format!(
                "`{}`: the body is JSON of the wrong shape (the error names the field path)",
                if family == Family::AgentPlat {
                    "BAD_REQUEST"
                } else {
                    "VALIDATION_ERROR"
                }
            ),
        );
        add_error(
            &mut errors,
            413,
            "`PAYLOAD_TOO_LARGE`: the body is over the server's size limit".to_string(),
        );
    }
    if op.params.iter().any(|p| p.name == TENANT.name) {
        add_error(
            &mut errors,
            400,
            format!(
                "`{}`: no `{}` header (AgentPlat: \"{}\")",
                GatehouseCode::TenantRequired.as_str(),
                TENANT.name,
                crate::error::messages::MISSING_TENANT_HEADER
            ),
        );
    }
    if op.project || op.params.iter().any(|p| p.name == TENANT.name) {
        add_error(
            &mut errors,
            403,
            "`FORBIDDEN`: the API key is not bound to this project (an id of another project answers 404 instead)".to_string(),
        );
    }
    if op.auth {
        add_error(
            &mut errors,
            401,
            "`UNAUTHORIZED`: no `Authorization` header, or an unknown key".to_string(),
        );
    }
    if op.family == Family::AgentPlat {
        add_error(
            &mut errors,
            404,
            "`ROUTE_NOT_FOUND`: the host does not run the execution service (`gatehouse serve --no-execution`); a client caches this and never retries".to_string(),
        );
    }
    add_error(
        &mut errors,
        500,
        "`INTERNAL_ERROR`: the server failed (storage); the body never leaks SQL".to_string(),
    );
    errors.sort_by_key(|e| e.status);
    errors
}

fn component_ref(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn param_schema(kind: ParamType) -> Value {
    match kind {
        ParamType::Text => json!({"type": "string", "minLength": 1}),
        ParamType::Uuid => json!({"type": "string", "format": "uuid"}),
        ParamType::Count => json!({"type": "integer", "minimum": 0}),
        ParamType::AnyText => json!({"type": "string"}),
    }
}

fn parameter(param: &Param) -> Value {
    json!({
        "name": param.name,
        "in": param.location.as_str(),
        "required": param.required,
        "description": param.description,
        "schema": param_schema(param.kind),
    })
}

const PROJECT_ID: Param = Param {
    name: "project_id",
    location: In::Query,
    required: true,
    kind: ParamType::Uuid,
    description: "The project every `/api` route is scoped to.",
};

fn content(body: &Body) -> (&'static str, Value) {
    match body {
        Body::Json(name) => ("application/json", json!({ "schema": component_ref(name) })),
        Body::OpenApiDocument => (
            "application/json",
            json!({"schema": {"type": "object", "required": ["openapi", "paths"]}}),
        ),
        Body::EventStream(name) => (
            "text/event-stream",
            json!({
                // OpenAPI 3.1 has no stream keyword: as tools read it, the media type's
                // schema describes ONE event; its `data` is JSON text of the wire type.
                "schema": {
                    "type": "object",
                    "description": format!("One Server-Sent Event; its `data` is a `{name}` as JSON text. `: heartbeat` comments keep the connection open."),
                    "properties": {
                        "event": {"type": "string"},
                        "id": {"type": "string"},
                        "retry": {"type": "integer", "minimum": 0},
                        "data": {
                            "type": "string",
                            "contentMediaType": "application/json",
                            "contentSchema": component_ref(name),
                        },
                    },
                },
            }),
        ),
        Body::Ndjson(name) => (
            "application/x-ndjson",
            json!({
                "schema": {
                    "type": "string",
                    "description": format!("Newline-delimited JSON; each line is a `{name}` (#/components/schemas/{name})."),
                },
                "x-gatehouse-line": format!("#/components/schemas/{name}"),
            }),
        ),
    }
}

fn operation_object(op: &Operation) -> Value {
    let mut object = JsonObject::new();
    object.insert("operationId".into(), op.id.into());
    object.insert("tags".into(), json!([op.family.tag()]));
    object.insert("summary".into(), op.summary.into());
    object.insert("description".into(), op.description.into());
    let mut params: Vec<Value> = Vec::new();
    if op.project {
        params.push(parameter(&PROJECT_ID));
    }
    params.extend(op.params.iter().map(parameter));
    if !params.is_empty() {
        object.insert("parameters".into(), Value::Array(params));
    }
    if let Some((body, optional)) = &op.request {
        let (media, schema) = content(body);
        object.insert(
            "requestBody".into(),
            json!({
                "required": *optional == Optional::No,
                "content": { (media): schema },
            }),
        );
    }
    let mut responses = JsonObject::new();
    for reply in op.replies {
        let mut response = JsonObject::new();
        response.insert("description".into(), reply.description.into());
        if !reply.bodies.is_empty() {
            let mut media = JsonObject::new();
            for body in reply.bodies {
                let (name, schema) = content(body);
                media.insert(name.into(), schema);
            }
            response.insert("content".into(), Value::Object(media));
        }
        let mut links = JsonObject::new();
        for link in LINKS
            .iter()
            .filter(|l| l.from == op.id && l.status == reply.status)
        {
            let parameters: JsonObject = link
                .parameters
                .iter()
                .map(|(name, expression)| (name.to_string(), Value::from(*expression)))
                .collect();
            links.insert(
                link.to.to_string(),
                json!({"operationId": link.to, "parameters": parameters}),
            );
        }
        if !links.is_empty() {
            response.insert("links".into(), Value::Object(links));
        }
        responses.insert(reply.status.to_string(), Value::Object(response));
    }
    for error in errors_of(op) {
        responses.insert(
            error.status.to_string(),
            json!({
                "description": format!("{}. {JSON_ERROR_NOTE}", error.lines.join("; ")),
                "content": {"application/json": {"schema": component_ref(op.family.error_body())}},
            }),
        );
    }
    object.insert("responses".into(), Value::Object(responses));
    if !op.auth {
        object.insert("security".into(), json!([]));
    }
    Value::Object(object)
}

/// Rewrite every `#/$defs/X` reference inside `value` to `#/components/schemas/X`.
fn rewrite_refs(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                if key == "$ref" {
                    if let Value::String(target) = inner {
                        if let Some(name) = target.strip_prefix("#/$defs/") {
                            *target = format!("#/components/schemas/{name}");
                        }
                    }
                } else {
                    rewrite_refs(inner);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// Drop the keys a schema's documentation adds, to compare two schemas' shapes.
fn without_docs(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| !matches!(k.as_str(), "title" | "description"))
                .map(|(k, v)| (k.clone(), without_docs(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_docs).collect()),
        other => other.clone(),
    }
}

/// `components/schemas`: every registered wire type under its contract name, and every
/// type those reference (their `$defs`), with references rewritten to point here.
///
/// Two types of the same name with different shapes would make one name mean two
/// things: that is refused (a registered type keeps its name; the test suite would fail).
pub fn component_schemas(entries: &[SchemaEntry]) -> Result<JsonObject, String> {
    let mut components = JsonObject::new();
    for entry in entries {
        let mut schema = entry.schema.clone();
        let defs = schema
            .as_object_mut()
            .and_then(|map| {
                map.shift_remove("$schema");
                map.shift_remove("$id");
                map.shift_remove("$defs")
            })
            .unwrap_or(Value::Null);
        rewrite_refs(&mut schema);
        components.insert(entry.name.to_string(), schema);
        if let Value::Object(defs) = defs {
            for (name, mut def) in defs {
                rewrite_refs(&mut def);
                match components.get(&name) {
                    Some(existing) if without_docs(existing) == without_docs(&def) => {}
                    Some(_) => {
                        return Err(format!(
                            "two different shapes are both named `{name}` (one in {}); rename one",
                            entry.file_name
                        ))
                    }
                    None => {
                        components.insert(name, def);
                    }
                }
            }
        }
    }
    Ok(components)
}

/// The OpenAPI 3.1 document of the server: every operation of [`OPERATIONS`], its
/// auth, parameters, bodies and error bodies; components from [`schema::all`].
pub fn document() -> Value {
    let entries = schema::all();
    // The registry of shapes decides the names; a conflict is a bug the contract test
    // reports, and the document still names every registered type.
    let components = component_schemas(&entries).unwrap_or_else(|problem| {
        let mut fallback = JsonObject::new();
        fallback.insert("x-gatehouse-error".into(), Value::String(problem));
        fallback
    });
    let mut paths = JsonObject::new();
    for path in self::paths() {
        let mut item = JsonObject::new();
        for op in OPERATIONS.iter().filter(|op| op.path == path) {
            item.insert(op.method.key().into(), operation_object(op));
        }
        paths.insert(path.to_string(), Value::Object(item));
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "Gatehouse server",
            "version": env!("CARGO_PKG_VERSION"),
            "summary": "Steer and approve running AI agents: Agenta's interactions API, AgentPlat's execution sessions, and Gatehouse's own routes.",
            "description": "The reference control plane's HTTP API, generated from the Rust wire types (the same schemas as `schema/*.schema.json`). Agenta-shaped routes answer errors as `{\"detail\", \"code\"}`; AgentPlat-shaped routes (`/api/rooms/...`) answer `{\"data\": ...}` and errors as `{\"error\": {\"code\", \"message\", \"gatehouseCode\"}}`. `code`/`gatehouseCode` is Gatehouse's machine code (one per meaning). An unknown route answers 404 `ROUTE_NOT_FOUND`, a known route with another method 405. See docs/CONTRACT.md.",
            "license": {"name": "Apache-2.0", "identifier": "Apache-2.0"},
        },
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "servers": [{"url": "http://127.0.0.1:8787", "description": "`gatehouse serve` (default address)"}],
        "security": [{"apiKey": []}, {"bearer": []}],
        "tags": [
            {"name": "agenta", "description": "Agenta's interactions API (A5) and the runner's /run (A1), as Agenta shapes them."},
            {"name": "agentplat", "description": "AgentPlat's execution sessions and interventions (B2), as AgentPlat shapes them; present only when the host runs the execution service."},
            {"name": "gatehouse", "description": "Gatehouse's own routes: the service tier (invoke, turns, revisions), capabilities (C5), this document."},
        ],
        "paths": paths,
        "components": {
            "schemas": components,
            "securitySchemes": {
                "apiKey": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "Authorization",
                    "description": "`Authorization: ApiKey <key>`. `gatehouse serve` accepts the development key `gatehouse-dev` when no key is configured.",
                },
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "`Authorization: Bearer <key>`: the same keys (what a runner sends).",
                },
            },
        },
    })
}

/// The committed file's contents: pretty-printed JSON with a trailing newline.
pub fn document_text() -> String {
    let mut text = serde_json::to_string_pretty(&document()).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_are_unique_and_every_body_is_a_registered_type() {
        let names: Vec<&str> = schema::all().iter().map(|e| e.name).collect();
        let mut ids: Vec<&str> = OPERATIONS.iter().map(|op| op.id).collect();
        ids.sort_unstable();
        let before = ids.len();
        ids.dedup();
        assert_eq!(before, ids.len(), "duplicate operationId");
        for op in OPERATIONS {
            let bodies = op
                .request
                .iter()
                .map(|(body, _)| *body)
                .chain(op.replies.iter().flat_map(|r| r.bodies.iter().copied()));
            for body in bodies {
                let (Body::Json(name) | Body::EventStream(name) | Body::Ndjson(name)) = body else {
                    continue;
                };
                assert!(names.contains(&name), "{}: {name} is not registered", op.id);
            }
            for param in op.params.iter().filter(|p| p.location == In::Path) {
                assert!(
                    op.path.contains(&format!("{{{}}}", param.name)),
                    "{}: path parameter {} is not in {}",
                    op.id,
                    param.name,
                    op.path
                );
            }
            let segments = op.path.matches('{').count();
            let declared = op.params.iter().filter(|p| p.location == In::Path).count();
            assert_eq!(segments, declared, "{}: undeclared path parameter", op.id);
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
    fn the_components_hold_every_registered_type_without_a_name_conflict() {
        let components = component_schemas(&schema::all()).unwrap();
        for entry in schema::all() {
            assert!(components.contains_key(entry.name), "{}", entry.name);
        }
        let text = serde_json::to_string(&components).unwrap();
        assert!(!text.contains("#/$defs/"), "a reference was not rewritten");
        // Every reference points at a component.
        let document = document();
        let all = serde_json::to_string(&document).unwrap();
        for target in all.split("\"#/components/schemas/").skip(1) {
            let name = target.split('"').next().unwrap();
            assert!(
                components.contains_key(name),
                "dangling reference to {name}"
            );
        }
    }

    #[test]
    fn every_operation_documents_its_error_bodies_in_its_family_envelope() {
        let document = document();
        for op in OPERATIONS {
            let responses = &document["paths"][op.path][op.method.key()]["responses"];
            assert!(responses["500"].is_object(), "{}", op.id);
            if op.auth {
                assert!(responses["401"].is_object(), "{}", op.id);
            }
            for (status, response) in responses.as_object().unwrap() {
                if status.starts_with('4') || status.starts_with('5') {
                    assert_eq!(
                        response["content"]["application/json"]["schema"]["$ref"],
                        format!("#/components/schemas/{}", op.family.error_body()),
                        "{} {status}",
                        op.id
                    );
                }
            }
        }
    }
}
