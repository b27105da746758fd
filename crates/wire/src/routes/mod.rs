//! The HTTP API of Gatehouse's server as data: the route registry. Each operation (a
//! method on a path) is a named constant ([`RESPOND_TO_INTERACTION`], ...: the
//! `operationId` in SCREAMING_SNAKE_CASE), and [`OPERATIONS`] lists them all.
//!
//! Pure data: this module depends on nothing but the error codes, the tenant header's name
//! and the readiness path. The OpenAPI document is generated from it by [`crate::openapi`];
//! the server routes what it lists (a server test checks the real router against
//! [`OPERATIONS`] both ways), and the client takes every method and path it sends from here
//! (a client test checks each request it makes with [`matching`]).
//!
//! **Adding a route is one entry here** (beside its handler in the server): a named
//! constant in its family's file, listed in [`OPERATIONS`], with its method, path,
//! parameters, request and response bodies (by registered type name), the errors it can
//! answer, and whether it needs the API key. The errors every route shares (401 without a
//! key, 400/413/422 for a bad body, 500, and 503 for an unavailable database on the routes
//! that name a project) follow from the entry's flags; list only what is particular to the
//! route. Then `cargo xtask schema` (the committed `schema/openapi.json` is generated from
//! it).
//!
//! Every name is used from here (`gatehouse_wire::routes::RUN`); the files group them:
//!
//! | file | what |
//! |---|---|
//! | `operation.rs` | what an operation is: [`Operation`], [`Method`], [`Family`], [`Param`], [`Body`], [`Reply`], [`Failure`], its path's [`Segment`]s |
//! | `shared.rs` | what several families use: [`PROJECT_ID`], the refusal of a stream over the server's cap |
//! | `interactions.rs` | Agenta's interactions API (A5) |
//! | `sessions.rs` | Agenta's durable session control: the durable Stop, the snapshot, its replayable events (the resume of a continuation is in `interactions.rs`) |
//! | `service.rs` | Gatehouse's own `/api` routes: the service tier (A6), webhooks, capabilities (C5), the OpenAPI document |
//! | `execution.rs` | AgentPlat's execution sessions (B2), under `/api` and at its root paths ([`TENANT`]) |
//! | `host.rs` | liveness, readiness, metrics |
//! | `runner.rs` | the runner tier's `/run` (A1) |
//! | `links.rs` | [`LINKS`] between operations |
//! | `mod.rs` | [`OPERATIONS`], the lookups [`operation`], [`paths`], [`matching`] |
//!
//! `operation.rs` uses none of the others, `shared.rs` only it; the family files use those
//! two and none of each other.
//!
//! ```
//! use gatehouse_wire::routes::{self, Method};
//! let path = "/api/sessions/interactions/019fac94-0000-7000-8000-000000000001/respond";
//! let respond = routes::matching(Method::Post, path).unwrap();
//! assert_eq!(respond, &routes::RESPOND_TO_INTERACTION);
//! assert_eq!(respond.id, "respondToInteraction");
//! assert_eq!(routes::matching(Method::Get, path), None);
//! ```

mod execution;
mod host;
mod interactions;
mod links;
mod operation;
mod runner;
mod service;
mod sessions;
mod shared;

pub use execution::{
    CHANGE_EXECUTION_AUTHORITY, GET_EXECUTION_SESSION, GET_EXECUTION_SESSION_AT_ROOT,
    LIST_EXECUTION_EVENTS, LIST_EXECUTION_EVENTS_AT_ROOT, REQUEST_INTERVENTION,
    REQUEST_INTERVENTION_AT_ROOT, STREAM_EXECUTION_EVENTS, STREAM_EXECUTION_EVENTS_AT_ROOT, TENANT,
};
pub use host::{HEALTH, METRICS, METRICS_PATH, READINESS};
pub use interactions::{
    CANCEL_STALE_INTERACTIONS, CREATE_INTERACTION, CREATE_INTERACTION_WITHOUT_SLASH,
    GET_INTERACTION, QUERY_INTERACTIONS, RESPOND_TO_INTERACTION, RESPOND_TO_INTERACTIONS,
    RESUME_SESSION_CONTINUATION, TRANSITION_INTERACTION, WATCH_SESSION,
};
pub use links::{Link, LINKS};
pub use operation::{
    Body, Failure, Family, In, Method, Operation, Optional, Param, ParamType, Reply, Segment,
};
pub use runner::RUN;
pub use service::{
    COMMIT_REVISION, GET_CAPABILITIES, GET_OPEN_API, INVOKE, LIST_TURNS, LIST_WEBHOOK_DELIVERIES,
};
pub use sessions::{CANCEL_SESSION, GET_SESSION_SNAPSHOT, WATCH_SESSION_EVENTS};
pub use shared::PROJECT_ID;

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
    // ---- Agenta's durable session control (its durable contract) ----------------------
    RESUME_SESSION_CONTINUATION,
    CANCEL_SESSION,
    GET_SESSION_SNAPSHOT,
    WATCH_SESSION_EVENTS,
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
