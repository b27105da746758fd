//! What the operations of several families share: the project parameter of every `/api`
//! route scoped to a project, and the refusal of an event stream over the server's cap.

use super::operation::{Failure, In, Param, ParamType};
use crate::error::GatehouseCode;

/// `?project_id=`: every operation whose [`Operation::project`](super::Operation::project)
/// is set takes it.
pub const PROJECT_ID: Param = Param {
    name: "project_id",
    location: In::Query,
    required: true,
    kind: ParamType::Uuid,
    description: "The project every `/api` route is scoped to. On Agenta's interaction routes a key bound to exactly one project may leave it out, as Agenta takes the project from the key.",
};

/// An event stream over the server's cap of open streams (derived from its open-file
/// limit): refused at once.
pub(super) const STREAMS_FULL: Failure = Failure {
    code: GatehouseCode::Unavailable,
    when: "the server's open event streams are at their cap (derived from its open-file limit); `Retry-After` says when to try again",
};
