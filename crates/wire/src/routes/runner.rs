//! The runner tier (A1), outside `/api`: `POST /run`.

use super::operation::{Body, Failure, Family, Method, Operation, Optional, Reply};
use crate::error::GatehouseCode;

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
