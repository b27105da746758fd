//! The OpenAPI 3.1 document of Gatehouse's server ([`document`]), generated from the
//! route registry ([`crate::routes`]) and the wire types' schemas ([`crate::schema`]).
//!
//! One source: every request and response body is a wire type of [`crate::schema`], the
//! same schemas `schema/` holds, hoisted into `components/schemas` under their contract
//! names; every operation is an entry of [`crate::routes::OPERATIONS`]; nothing here
//! restates a shape or a route. The document is committed as `schema/openapi.json`
//! (`cargo xtask schema` writes it with the other schema files, `--check` and a contract
//! test fail when it is stale) and served by the server at `GET /api/openapi.json`.
//!
//! ```
//! let document = gatehouse_wire::openapi::document();
//! assert_eq!(document["openapi"], "3.1.0");
//! let respond = &document["paths"]["/api/sessions/interactions/{id}/respond"]["post"];
//! assert_eq!(respond["operationId"], "respondToInteraction");
//! // A 409 is Gatehouse's `{"detail", "code"}` (legacy), or Agenta's durable envelope.
//! assert_eq!(
//!     respond["responses"]["409"]["content"]["application/json"]["schema"]["anyOf"][1]["$ref"],
//!     "#/components/schemas/ErrorEnvelope"
//! );
//! ```

use serde_json::{json, Value};

use crate::error::GatehouseCode;
use crate::routes::{
    self, Body, Family, Operation, Optional, Param, ParamType, LINKS, OPERATIONS, PROJECT_ID,
    TENANT,
};
use crate::schema::{self, SchemaEntry};
use crate::JsonObject;

/// The file name of the committed document in `schema/`.
pub const FILE_NAME: &str = "openapi.json";

/// The path the server serves the document at.
pub const PATH: &str = routes::GET_OPEN_API.path;

const JSON_ERROR_NOTE: &str =
    "Every error body carries Gatehouse's machine `code` beside the upstream's own fields.";

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
    if op.project || op.params.iter().any(|p| p.name == routes::TENANT.name) {
        add_error(
            &mut errors,
            503,
            "`UNAVAILABLE`: the database is unavailable (unreachable, out of space, or its write lock held past the server's `--db-acquire-timeout`); the answer carries `Retry-After`, and a retry can succeed once the database is back".to_string(),
        );
    }
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

/// The schema of one event's `data` on a stream of `name`. A session's events stream
/// (Agenta's) carries more than its durable events: `event: ready` with `{}`, live frames
/// and a last `relay-close`.
fn event_data_schema(name: &str) -> Value {
    match name {
        "SessionDurableEvent" => json!({"anyOf": [
            component_ref("SessionDurableEvent"),
            component_ref("SessionLiveFrame"),
            component_ref("SessionRelayClose"),
            {"type": "object", "maxProperties": 0, "description": "`event: ready`: the replay is done"},
        ]}),
        other => component_ref(other),
    }
}

fn content(body: &Body) -> (&'static str, Value) {
    match body {
        Body::Json(name) => ("application/json", json!({ "schema": component_ref(name) })),
        Body::OpenApiDocument => (
            "application/json",
            json!({"schema": {"type": "object", "required": ["openapi", "paths"]}}),
        ),
        Body::PrometheusText => (
            "text/plain",
            json!({"schema": {
                "type": "string",
                "description": "Prometheus's text exposition format, version 0.0.4: `# HELP` and `# TYPE` lines, then one sample per line.",
            }}),
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
                            "contentSchema": event_data_schema(name),
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
    let also = durable_error_bodies(op);
    for error in errors_of(op) {
        let family = component_ref(op.family.error_body());
        let schema = if also.is_empty() || error.status < 409 || error.status > 422 {
            family
        } else {
            let mut any = vec![family];
            any.extend(also.iter().map(|name| component_ref(name)));
            json!({ "anyOf": any })
        };
        responses.insert(
            error.status.to_string(),
            json!({
                "description": format!("{}. {JSON_ERROR_NOTE}", error.lines.join("; ")),
                "content": {"application/json": {"schema": schema}},
            }),
        );
    }
    object.insert("responses".into(), Value::Object(responses));
    if !op.auth {
        object.insert("security".into(), json!([]));
    }
    Value::Object(object)
}

/// The error bodies Agenta's durable session control answers (409 and 422) besides its
/// family's `{"detail"}`: the durable respond's top-level envelope (`ErrorEnvelope`), and
/// the Stop's `{"detail": ...}` forms (`CancelError`) and its key's envelope.
fn durable_error_bodies(op: &Operation) -> &'static [&'static str] {
    match op.id {
        "respondToInteraction" => &["ErrorEnvelope"],
        "cancelSession" => &["ErrorEnvelope", "CancelError"],
        _ => &[],
    }
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
    for path in routes::paths() {
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
    schema::pretty(&document())
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_body_of_every_operation_is_a_registered_type() {
        let names: Vec<&str> = schema::all().iter().map(|e| e.name).collect();
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
                    let schema = &response["content"]["application/json"]["schema"];
                    let family = format!("#/components/schemas/{}", op.family.error_body());
                    // Agenta's durable session control also answers its own 409/422
                    // bodies: the family's envelope comes first among them.
                    let first = match schema.get("anyOf") {
                        Some(any) => {
                            assert!(!durable_error_bodies(op).is_empty(), "{} {status}", op.id);
                            &any[0]["$ref"]
                        }
                        None => &schema["$ref"],
                    };
                    assert_eq!(first, &Value::String(family), "{} {status}", op.id);
                }
            }
        }
    }

    #[test]
    fn capabilities_and_error_codes_admit_any_string_the_other_enums_do_not() {
        let document = document();
        let schemas = &document["components"]["schemas"];
        for open in ["Capability", "GatehouseCode"] {
            let open_form = admits_any_string(&schemas[open]);
            assert!(
                open_form,
                "{open} should admit any string: {}",
                schemas[open]
            );
        }
        for closed in [
            "Order",
            "ExecutionSessionStatus",
            "InteractionStatus",
            "Harness",
        ] {
            assert_eq!(schemas[closed]["type"], "string", "{closed}");
            assert!(schemas[closed]["enum"].is_array(), "{closed}");
        }
        assert!(schemas["ExecutionSessionStatus"]["description"]
            .as_str()
            .unwrap()
            .ends_with(
                "- `canceled`: The run was cancelled (including by a `stop` intervention)."
            ));
        assert_eq!(schemas["Order"]["enum"], json!(["ascending", "descending"]));
        assert_eq!(schemas["Capability"]["anyOf"][0]["title"], "Capability");
        assert!(schemas["GatehouseCode"]["description"]
            .as_str()
            .unwrap()
            .contains("- `ALREADY_ANSWERED`: 409"));
    }

    /// True when the schema is the open form: a known-values branch, then any string.
    fn admits_any_string(schema: &Value) -> bool {
        schema["anyOf"][1]["type"] == "string" && schema["anyOf"][1].get("enum").is_none()
    }
}
