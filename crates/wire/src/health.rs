//! Readiness (`GET /health/ready`), apart from liveness (`GET /health`, always
//! `{"status":"ok"}` while the process serves HTTP): whether this instance can do its
//! work now. 200 with [`ReadinessStatus::Ok`] when every check passes, else 503 with
//! [`ReadinessStatus::Unavailable`]; the body names every check either way. A 503 is
//! also Gatehouse's error envelope (`detail` and `code: "UNAVAILABLE"` beside `status`
//! and `checks`, read as a [`crate::error::FastApiErrorBody`] too), as every refusal is.
//!
//! ```
//! use gatehouse_wire::health::{ReadinessCheck, ReadinessResponse, ReadinessStatus};
//! let answer = ReadinessResponse::from_checks(vec![
//!     ReadinessCheck::new("database", false, "the write probe failed: database is locked"),
//!     ReadinessCheck::new("migrations", true, "5 of 5 applied"),
//! ]);
//! assert_eq!((answer.status, answer.http_status()), (ReadinessStatus::Unavailable, 503));
//! let text = serde_json::to_string(&answer).unwrap();
//! let error: gatehouse_wire::error::FastApiErrorBody = serde_json::from_str(&text).unwrap();
//! assert_eq!(error.code, Some(gatehouse_wire::error::GatehouseCode::Unavailable));
//! assert_eq!(error.detail_text(), "Not ready: database (the write probe failed: database is locked)");
//! let read: ReadinessResponse = serde_json::from_str(&text).unwrap();
//! assert_eq!(read.failing().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["database"]);
//! ```

use serde::{Deserialize, Serialize};

use crate::error::GatehouseCode;
use crate::JsonObject;

/// The path of the readiness answer.
pub const READY_PATH: &str = "/health/ready";

/// The names of the checks Gatehouse's server runs (see [`ReadinessCheck::name`]).
pub mod check {
    /// A real write within a short timeout, and no write refused for an unavailable
    /// database in the last seconds.
    pub const DATABASE: &str = "database";
    /// Every migration this version embeds is applied.
    pub const MIGRATIONS: &str = "migrations";
    /// This instance's resume workers are alive.
    pub const RESUME_WORKERS: &str = "resume_workers";
    /// This instance's reconciler is alive.
    pub const RECONCILER: &str = "reconciler";
    /// This instance's webhook delivery workers are alive (none run without endpoints).
    pub const WEBHOOK_WORKERS: &str = "webhook_workers";
}

/// Whether every check passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "schema", schemars(transform = crate::json::StringEnum { name: "ReadinessStatus", open: false }))]
pub enum ReadinessStatus {
    /// Every check passed (HTTP 200).
    Ok,
    /// At least one check failed (HTTP 503).
    Unavailable,
}

/// One check of a readiness answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReadinessCheck {
    /// What was checked: one of [`check`]'s names (`database`, `migrations`,
    /// `resume_workers`, `reconciler`, `webhook_workers`); a newer server may add checks.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found, in words (never a secret or SQL).
    pub detail: String,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// The answer to `GET /health/ready`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ReadinessResponse {
    /// `ok` when every check passed, else `unavailable`.
    pub status: ReadinessStatus,
    /// Every check, passed or not.
    pub checks: Vec<ReadinessCheck>,
    /// When not ready: the failing checks in one line (the error envelope's `detail`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// When not ready: `UNAVAILABLE` (the error envelope's `code`; a code this version
    /// does not know reads as `None`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::error::known_code"
    )]
    pub code: Option<GatehouseCode>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ReadinessResponse {
    /// The answer of `checks`: `ok` when all passed.
    /// The answer of `checks`: `ok` when all passed, else `unavailable` with the error
    /// envelope's `detail` (the failing checks) and `code`.
    pub fn from_checks(checks: Vec<ReadinessCheck>) -> Self {
        let failing: Vec<String> = checks
            .iter()
            .filter(|check| !check.ok)
            .map(|check| format!("{} ({})", check.name, check.detail))
            .collect();
        let (status, detail, code) = if failing.is_empty() {
            (ReadinessStatus::Ok, None, None)
        } else {
            (
                ReadinessStatus::Unavailable,
                Some(format!("Not ready: {}", failing.join("; "))),
                Some(GatehouseCode::Unavailable),
            )
        };
        Self {
            status,
            checks,
            detail,
            code,
            extra: JsonObject::new(),
        }
    }

    /// The checks that failed.
    pub fn failing(&self) -> impl Iterator<Item = &ReadinessCheck> {
        self.checks.iter().filter(|check| !check.ok)
    }

    /// The HTTP status this answer travels with: 200 or 503.
    pub fn http_status(&self) -> u16 {
        match self.status {
            ReadinessStatus::Ok => 200,
            ReadinessStatus::Unavailable => 503,
        }
    }
}

impl ReadinessCheck {
    /// A check named `name` that passed (`ok`) or not, saying what was found.
    pub fn new(name: &str, ok: bool, detail: impl Into<String>) -> Self {
        Self {
            name: name.to_string(),
            ok,
            detail: detail.into(),
            extra: JsonObject::new(),
        }
    }
}
