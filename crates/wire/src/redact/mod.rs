//! The redaction rule (CONTRACT.md A2, C2): which fields of a config are credentials, and
//! so never reach the `/run` wire or the interaction row a gate writes.
//!
//! It follows Agenta's `stamp_effective_parameters` exactly, including its quirks, with two
//! deliberate departures (C2) under the default [`Redaction::Gatehouse`]:
//! `headers`/`authorization` keys are matched in any letter case, and a bare template
//! (`mcps`/`tools` at the top level of the parameters) is walked too. The default also
//! strips, by rule, credential-shaped fields anywhere in the config
//! ([`is_credential_shaped_key`], `env` blocks, a `credentials` block's inline `value`) and
//! a URL's secrets ([`strip_url_secrets`]); a JSON Schema is never touched.
//! [`Redaction::AgentaCompatible`] turns all of that off: Agenta's rule alone.
//!
//! [`redact_effective_parameters`] redacts a config in place (no size check); the stamp
//! ([`crate::effective`]) redacts, measures and caps.
//!
//! Inside: `keys` (secret names and URLs), `tree` (the two JSON models the rule walks:
//! `serde_json::Value` and [`crate::pyjson::PyValue`]), `rule` (the rule, decided node by
//! node, and the walk that strips in place), `borrowed` (the same rule writing or measuring
//! a borrowed config as redacted, for the borrowing stamp), `measured` (a config read
//! with its `json.dumps` measure, and the stamp's walk over only what the rule touches).

mod borrowed;
mod keys;
mod measured;
mod rule;
mod tree;

pub(crate) use borrowed::{redacted_len, RedactedObject};
pub use keys::{is_credential_shaped_key, strip_url_secrets};
pub(crate) use measured::redacted_len_measured;
pub use measured::{MeasuredConfig, ReadConfigError};
pub use rule::{redact_effective_parameters, Redaction};
pub(crate) use rule::{redact_object, Rule};
