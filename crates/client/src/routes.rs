//! The registered route of every client [`Operation`]: the one place the client names
//! the server's routes. Each is a constant of the route registry
//! ([`gatehouse_wire::routes`]), which gives the method and the path template the
//! transport fills; no path is spelled in the client.
//!
//! The [`Upstream`] picks between the registry's two layouts of the execution routes:
//! under `/api` (Gatehouse's, with `?project_id=`), or at the root of an AgentPlat host
//! (the tenant in a header).

use gatehouse_wire::routes::{self as registry, Operation as Route};

use crate::error::Operation;
use crate::upstream::Upstream;

/// The registered route `operation` takes on a host of kind `upstream`, or `None` when
/// there is none to take: building a client sends nothing, and AgentPlat has no route
/// to change a session's authority (a Gatehouse route, under `/api` only) nor Agenta's
/// session paths.
pub(crate) fn route(operation: Operation, upstream: Upstream) -> Option<&'static Route> {
    let at_root = upstream == Upstream::AgentPlat;
    let route = match operation {
        Operation::BuildClient => return None,
        Operation::QueryInteractions => &registry::QUERY_INTERACTIONS,
        Operation::GetInteraction => &registry::GET_INTERACTION,
        Operation::RespondInteraction => &registry::RESPOND_TO_INTERACTION,
        Operation::RespondInteractions => &registry::RESPOND_TO_INTERACTIONS,
        Operation::CreateInteraction => &registry::CREATE_INTERACTION,
        Operation::TransitionInteraction => &registry::TRANSITION_INTERACTION,
        Operation::CancelStaleInteractions => &registry::CANCEL_STALE_INTERACTIONS,
        Operation::WatchInteractions => &registry::WATCH_SESSION,
        Operation::GetCapabilities => &registry::GET_CAPABILITIES,
        Operation::Run | Operation::StreamRun => &registry::RUN,
        Operation::GetExecutionSession if at_root => &registry::GET_EXECUTION_SESSION_AT_ROOT,
        Operation::GetExecutionSession => &registry::GET_EXECUTION_SESSION,
        Operation::RequestIntervention if at_root => &registry::REQUEST_INTERVENTION_AT_ROOT,
        Operation::RequestIntervention => &registry::REQUEST_INTERVENTION,
        Operation::ListExecutionEvents if at_root => &registry::LIST_EXECUTION_EVENTS_AT_ROOT,
        Operation::ListExecutionEvents => &registry::LIST_EXECUTION_EVENTS,
        Operation::WatchExecutionEvents if at_root => &registry::STREAM_EXECUTION_EVENTS_AT_ROOT,
        Operation::WatchExecutionEvents => &registry::STREAM_EXECUTION_EVENTS,
        Operation::ChangeExecutionAuthority if at_root => return None,
        Operation::ChangeExecutionAuthority => &registry::CHANGE_EXECUTION_AUTHORITY,
        Operation::Invoke => &registry::INVOKE,
        Operation::ListTurns => &registry::LIST_TURNS,
        Operation::CommitRevision => &registry::COMMIT_REVISION,
        Operation::ListWebhookDeliveries => &registry::LIST_WEBHOOK_DELIVERIES,
        // The durable respond is the same route; the host's contract says which body.
        // AgentPlat's Rooms API has no Agenta session paths.
        Operation::RespondInteractionDurable
        | Operation::CancelSession
        | Operation::GetSessionSnapshot
        | Operation::WatchSessionEvents
        | Operation::ResumeSessionContinuation
            if at_root =>
        {
            return None
        }
        Operation::RespondInteractionDurable => &registry::RESPOND_TO_INTERACTION,
        Operation::CancelSession => &registry::CANCEL_SESSION,
        Operation::GetSessionSnapshot => &registry::GET_SESSION_SNAPSHOT,
        Operation::WatchSessionEvents => &registry::WATCH_SESSION_EVENTS,
        Operation::ResumeSessionContinuation => &registry::RESUME_SESSION_CONTINUATION,
    };
    Some(route)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gatehouse_wire::capabilities::Capability;
    use gatehouse_wire::routes::{Family, OPERATIONS};

    /// The operations that have no route on `upstream`.
    fn without_route(upstream: Upstream) -> Vec<Operation> {
        match upstream {
            Upstream::AgentPlat => {
                vec![
                    Operation::BuildClient,
                    Operation::ChangeExecutionAuthority,
                    Operation::RespondInteractionDurable,
                    Operation::CancelSession,
                    Operation::GetSessionSnapshot,
                    Operation::WatchSessionEvents,
                    Operation::ResumeSessionContinuation,
                ]
            }
            _ => vec![Operation::BuildClient],
        }
    }

    #[test]
    fn every_operation_takes_a_registered_route_on_every_upstream() {
        for upstream in Upstream::ALL {
            for &operation in Operation::ALL {
                let Some(route) = route(operation, upstream) else {
                    assert!(
                        without_route(upstream).contains(&operation),
                        "{operation} has no route on {upstream}"
                    );
                    continue;
                };
                assert!(
                    !without_route(upstream).contains(&operation),
                    "{operation} on {upstream}"
                );
                assert!(
                    OPERATIONS.contains(route),
                    "{operation} on {upstream}: {} is not in the registry",
                    route.id
                );
            }
        }
    }

    #[test]
    fn the_execution_routes_follow_the_upstream_layout() {
        for upstream in Upstream::ALL {
            for &operation in Operation::ALL {
                let execution = matches!(
                    operation.capability(),
                    Some(Capability::Execution | Capability::ExecutionEventStream)
                );
                let Some(route) = route(operation, upstream).filter(|_| execution) else {
                    continue;
                };
                assert_eq!(route.family, Family::AgentPlat, "{operation}");
                let at_root = !route.path.starts_with("/api/");
                assert_eq!(
                    at_root,
                    upstream == Upstream::AgentPlat,
                    "{operation} on {upstream}: {}",
                    route.path
                );
                // The root layout takes the tenant header, never `?project_id=`.
                assert_eq!(route.project, !at_root, "{}", route.id);
            }
        }
    }

    #[test]
    fn operations_are_listed_once() {
        let mut names: Vec<&str> = Operation::ALL.iter().map(|op| op.as_str()).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len());
    }
}
