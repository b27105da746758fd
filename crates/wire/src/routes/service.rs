//! Gatehouse's own `/api` routes: the service tier (A6: invoke a turn, a session's turns,
//! commit a workflow revision), the webhook outbox, capability discovery (C5) and the
//! OpenAPI document.

use super::operation::{
    Body, Failure, Family, In, Method, Operation, Optional, Param, ParamType, Reply,
};
use crate::error::GatehouseCode;

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
