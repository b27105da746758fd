//! Exit codes and the one error type every command returns.
//!
//! | code | meaning |
//! |---|---|
//! | 0 | ok |
//! | 1 | any other error (server down, invalid input, invalid document, timeout, ...) |
//! | 2 | usage error (bad flags, unknown schema type name, an unusable connection setting) |
//! | 3 | already answered (also answered differently, no longer pending), or a conflict (stale revision, operationId bound elsewhere, ...); `wire stamp`: nothing would be stamped |
//! | 4 | not found |
//! | 5 | capability unavailable on this host |
//! | 6 | permission denied (403) |
//! | 7 | missing or unknown tenant |
//! | 8 | the server refused the request as invalid (validation failure, malformed request) |
//! | 9 | the execution session is not active (its run ended) |
//! | 10 | the session's intervention limit is reached |
//! | 11 | answered; whose answer is not knowable from this host (a respond whose outcome was lost) |
//! | 12 | the host answered with another project's rows than `--project` asked for |
//! | 13 | the turn can no longer be continued (Agenta's `execution_terminal` with its state or outcome) |
//! | 14 | stale execution: the gate or the running turn is another execution than expected (Agenta's `execution_mismatch`, Stop's stale expectation) |
//! | 15 | the idempotency key was already used for another request |
//! | 16 | a Stop still unresolved: no outcome at the `--wait-timeout`, or none the session's events establish |
//!
//! A client error's code follows from its `gatehouse_client::ErrorKind` through
//! [`exit_for`], the one table.

use std::fmt;

use gatehouse_client::ErrorKind;

/// The process exit codes of the `gatehouse` command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok,
    /// 1: any other error.
    Other,
    /// 2: usage error (clap's own code for bad arguments).
    Usage,
    /// 3: already answered, or a conflict.
    Conflict,
    /// 4: not found.
    NotFound,
    /// 5: the host does not serve the capability.
    Unavailable,
    /// 6: permission denied (403).
    Forbidden,
    /// 7: missing or unknown tenant.
    Tenant,
    /// 8: the server refused the request as invalid.
    Invalid,
    /// 9: the execution session is not active.
    SessionNotActive,
    /// 10: the intervention limit is reached.
    InterventionLimit,
    /// 11: the gate is answered; whose answer is not knowable from this host.
    AnswerOwnerUnknown,
    /// 12: the host answered for another project than the one asked for.
    ProjectMismatch,
    /// 13: the turn can no longer be continued (stopping, or settled).
    TurnNotContinuable,
    /// 14: the gate (or the running turn) is another execution than expected.
    StaleExecution,
    /// 15: the idempotency key was used for another request.
    IdempotencyKeyReused,
    /// 16: a Stop whose outcome could not be established (still stopping at the
    /// timeout, or no event says how the turn ended).
    StopUnresolved,
    /// 17: the gate changed after it was read (its digest is not the one answered):
    /// nothing was recorded.
    StaleGate,
}

impl Exit {
    /// The numeric process exit code.
    pub fn code(self) -> u8 {
        match self {
            Exit::Ok => 0,
            Exit::Other => 1,
            Exit::Usage => 2,
            Exit::Conflict => 3,
            Exit::NotFound => 4,
            Exit::Unavailable => 5,
            Exit::Forbidden => 6,
            Exit::Tenant => 7,
            Exit::Invalid => 8,
            Exit::SessionNotActive => 9,
            Exit::InterventionLimit => 10,
            Exit::AnswerOwnerUnknown => 11,
            Exit::ProjectMismatch => 12,
            Exit::TurnNotContinuable => 13,
            Exit::StaleExecution => 14,
            Exit::IdempotencyKeyReused => 15,
            Exit::StopUnresolved => 16,
            Exit::StaleGate => 17,
        }
    }
}

/// A failed command: what to print on stderr and which exit code to use.
#[derive(Debug)]
pub struct CliError {
    /// The exit code.
    pub exit: Exit,
    /// A one-line (or few-line) explanation for a person.
    pub message: String,
}

impl CliError {
    /// An error with an explicit exit code.
    pub fn new(exit: Exit, message: impl Into<String>) -> Self {
        Self {
            exit,
            message: message.into(),
        }
    }

    /// Exit 1 with `message`.
    pub fn other(message: impl Into<String>) -> Self {
        Self::new(Exit::Other, message)
    }

    /// Exit 2 with `message`.
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(Exit::Usage, message)
    }
}

impl fmt::Display for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for CliError {}

/// The result type of every command.
pub type CliResult<T = ()> = Result<T, CliError>;

/// THE table from the client's error kinds to exit codes.
pub fn exit_for(kind: ErrorKind) -> Exit {
    match kind {
        ErrorKind::AlreadyAnswered
        | ErrorKind::RevisionConflict
        | ErrorKind::OperationConflict
        | ErrorKind::DispatchOwnershipLost
        | ErrorKind::ResolvedDifferently
        | ErrorKind::Conflict => Exit::Conflict,
        ErrorKind::TurnNotContinuable => Exit::TurnNotContinuable,
        ErrorKind::StaleExecution => Exit::StaleExecution,
        ErrorKind::IdempotencyKeyReused => Exit::IdempotencyKeyReused,
        ErrorKind::StaleGate => Exit::StaleGate,
        ErrorKind::NotFound => Exit::NotFound,
        ErrorKind::CapabilityUnavailable => Exit::Unavailable,
        ErrorKind::Forbidden => Exit::Forbidden,
        ErrorKind::TenantRejected => Exit::Tenant,
        ErrorKind::Validation | ErrorKind::Invalid => Exit::Invalid,
        ErrorKind::SessionNotActive => Exit::SessionNotActive,
        ErrorKind::InterventionLimit => Exit::InterventionLimit,
        ErrorKind::AnswerOwnerUnknown => Exit::AnswerOwnerUnknown,
        ErrorKind::ProjectMismatch => Exit::ProjectMismatch,
        _ => Exit::Other,
    }
}

/// Map a client error onto its exit code ([`exit_for`] its kind) and a message.
pub fn client_error(err: gatehouse_client::Error) -> CliError {
    let kind = err.kind();
    let message = match kind {
        ErrorKind::Transport | ErrorKind::Timeout => {
            format!("cannot reach the server: {err}")
        }
        ErrorKind::AlreadyAnswered => format!("already answered: {err}"),
        // The rows are not shown: say whose they are and where the project comes from.
        ErrorKind::ProjectMismatch => format!(
            "{err}; nothing is shown (the API key's project may differ from --project / GATEHOUSE_PROJECT)"
        ),
        ErrorKind::TenantRejected => {
            format!("{err} (set the tenant with --tenant or GATEHOUSE_TENANT)")
        }
        // The server names the missing or malformed query parameter in its detail; say
        // where the CLI takes it from.
        ErrorKind::Validation if validation_names_project(&err) => {
            format!("{err} (set the project with --project or GATEHOUSE_PROJECT)")
        }
        _ => err.to_string(),
    };
    CliError::new(exit_for(kind), message)
}

/// A validation failure whose server detail names `project_id`.
fn validation_names_project(err: &gatehouse_client::Error) -> bool {
    matches!(err, gatehouse_client::Error::Validation { detail, .. } if detail.contains("project_id"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_has_a_failure_code() {
        for kind in ErrorKind::ALL {
            let exit = exit_for(*kind);
            assert!(
                !matches!(exit, Exit::Ok | Exit::Usage),
                "{kind} must not exit {}",
                exit.code()
            );
        }
        assert_eq!(exit_for(ErrorKind::ResolvedDifferently), Exit::Conflict);
        assert_eq!(exit_for(ErrorKind::AlreadyAnswered).code(), 3);
        assert_eq!(exit_for(ErrorKind::TurnNotContinuable).code(), 13);
        assert_eq!(exit_for(ErrorKind::StaleExecution).code(), 14);
        assert_eq!(exit_for(ErrorKind::IdempotencyKeyReused).code(), 15);
        assert_eq!(exit_for(ErrorKind::StaleGate).code(), 17);
        assert_eq!(exit_for(ErrorKind::NotFound), Exit::NotFound);
        assert_eq!(
            exit_for(ErrorKind::CapabilityUnavailable),
            Exit::Unavailable
        );
        assert_eq!(exit_for(ErrorKind::Server), Exit::Other);
        assert_eq!(exit_for(ErrorKind::Forbidden).code(), 6);
        assert_eq!(exit_for(ErrorKind::TenantRejected).code(), 7);
        assert_eq!(exit_for(ErrorKind::Validation).code(), 8);
        assert_eq!(exit_for(ErrorKind::SessionNotActive).code(), 9);
        assert_eq!(exit_for(ErrorKind::InterventionLimit).code(), 10);
        assert_eq!(exit_for(ErrorKind::AnswerOwnerUnknown).code(), 11);
        assert_eq!(exit_for(ErrorKind::ProjectMismatch).code(), 12);
        let codes: std::collections::HashSet<u8> = [
            Exit::Ok,
            Exit::Other,
            Exit::Usage,
            Exit::Conflict,
            Exit::NotFound,
            Exit::Unavailable,
            Exit::Forbidden,
            Exit::Tenant,
            Exit::Invalid,
            Exit::SessionNotActive,
            Exit::InterventionLimit,
            Exit::AnswerOwnerUnknown,
            Exit::ProjectMismatch,
            Exit::TurnNotContinuable,
            Exit::StaleExecution,
            Exit::IdempotencyKeyReused,
            Exit::StopUnresolved,
            Exit::StaleGate,
        ]
        .iter()
        .map(|e| e.code())
        .collect();
        assert_eq!(codes.len(), 18, "every exit code is distinct");
    }
}
