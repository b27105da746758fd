//! What an operation of the registry is: its method and path, its family (whose error
//! envelope it answers in), its parameters, request body, success answers and the failures
//! particular to it; and the segments of its path.

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
