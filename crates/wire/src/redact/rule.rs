//! The one redaction rule (A2 + C2), decided node by node, and the walk that strips a
//! config in place by it.

use serde_json::Value;

use super::keys::{is_credential_shaped_key, strip_url_secrets};
use super::tree::Tree;
use crate::JsonObject;

/// Which redaction rule to apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub enum Redaction {
    /// Agenta's rule plus the two C2 departures: credential keys match in any letter
    /// case, and top-level `mcps`/`tools` (a bare template) are walked as well.
    #[default]
    Gatehouse,
    /// Agenta's rule exactly (case-sensitive keys, only `agent.mcps`/`agent.tools`).
    /// For parity tests; it lets `Authorization` and bare-template headers through.
    AgentaCompatible,
}

/// The connection-bearing lists of a config; the rest is inert authored text and JSON
/// Schema (a tool's input schema may name a property `headers`).
const CONNECTION_BEARING_LISTS: [&str; 2] = ["mcps", "tools"];
/// Nested objects of an entry that may hold credentials.
const NESTED_CONNECTION_KEYS: [&str; 2] = ["connection", "call"];

fn is_credential_key(key: &str, redaction: Redaction) -> bool {
    match redaction {
        Redaction::AgentaCompatible => key == "headers" || key == "authorization",
        Redaction::Gatehouse => {
            key.eq_ignore_ascii_case("headers") || key.eq_ignore_ascii_case("authorization")
        }
    }
}

/// True when [`Rule::strips`] could take `key` from some object, under either redaction and
/// in any place (a credential key, a credential-shaped key, `env`, a `credentials` block's
/// `value`). The measuring reader (`measured.rs`) marks a subtree with no such key, and no
/// string [`Rule::rewrite`] could change, as one the rule leaves whole: keep the two in step.
pub(super) fn may_strip_key(key: &str) -> bool {
    key == "value"
        || key.eq_ignore_ascii_case("env")
        || key.eq_ignore_ascii_case("headers")
        || key.eq_ignore_ascii_case("authorization")
        || is_credential_shaped_key(key)
}

/// True when [`Rule::rewrite`] could change the string `text` in some place (a URL with
/// secrets in it); see [`may_strip_key`].
pub(super) fn may_rewrite(text: &str) -> bool {
    strip_url_secrets(text).is_some()
}

/// True when `object` holds a credential key with a non-null value.
fn holds_credential<T: Tree>(object: &T::Object, redaction: Redaction) -> bool {
    T::any_entry(object, |key, value| {
        !value.is_null() && is_credential_key(key, redaction)
    })
}

/// True when redacting `container`'s lists would strip something non-null. A read-only
/// pass: only when it says yes does Agenta's part of the rule strip anything, so an input
/// with nothing (or only `null`s) to strip keeps its `"headers": null`, as Agenta's does.
fn lists_need_redaction<T: Tree>(container: &T::Object, redaction: Redaction) -> bool {
    CONNECTION_BEARING_LISTS.iter().any(|list_key| {
        let Some(entries) = T::get(container, list_key).and_then(T::as_array) else {
            return false;
        };
        entries.iter().any(|entry| {
            let Some(object) = entry.as_object() else {
                return false;
            };
            holds_credential::<T>(object, redaction)
                || NESTED_CONNECTION_KEYS.iter().any(|nested_key| {
                    T::get(object, nested_key)
                        .and_then(T::as_object)
                        .is_some_and(|nested| holds_credential::<T>(nested, redaction))
                })
        })
    })
}

/// Where in a config a node is, as the redaction rule sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The parameters object.
    Root,
    /// `agent`.
    Agent,
    /// A connection-bearing list: `agent.mcps`/`agent.tools` (or, walking a bare
    /// template, the top-level ones).
    List,
    /// An entry of such a list.
    Entry,
    /// An entry's `connection` or `call`.
    Nested(&'static str),
    /// Anywhere else.
    Other,
}

/// A node's context: its place, and whether it is inside a `credentials` block or a JSON
/// Schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Ctx {
    place: Place,
    in_credentials: bool,
    in_schema: bool,
}

impl Ctx {
    pub(super) const ROOT: Ctx = Ctx {
        place: Place::Root,
        in_credentials: false,
        in_schema: false,
    };

    /// The context of a scalar in an object at this one: the object's, as far as the rule
    /// goes.
    pub(super) fn of_scalar(self) -> Ctx {
        Ctx {
            place: Place::Other,
            ..self
        }
    }
}

/// The one redaction rule (A2 + C2), decided per node: the mutating redaction and the
/// borrowing stamp ([`crate::effective::stamp_borrowed`]) both walk a config with it, so
/// they cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Rule {
    redaction: Redaction,
    /// Agenta's part strips anything only when something non-null is there to strip.
    agenta_applies: bool,
}

impl Rule {
    /// The rule for the parameters object `params`.
    pub(crate) fn for_params<T: Tree>(params: &T::Object, redaction: Redaction) -> Self {
        let agent_needs = T::get(params, "agent")
            .and_then(T::as_object)
            .is_some_and(|agent| lists_need_redaction::<T>(agent, redaction));
        let bare_needs =
            redaction == Redaction::Gatehouse && lists_need_redaction::<T>(params, redaction);
        Self {
            redaction,
            agenta_applies: agent_needs || bare_needs,
        }
    }

    /// Strip and rewrite `params` (the object this rule is for) in place; returns the
    /// sorted, deduplicated labels of what was stripped.
    pub(crate) fn redact<T: Tree>(self, params: &mut T::Object) -> Vec<String> {
        let mut stripped = Vec::new();
        redact_in_place::<T>(params, self, Ctx::ROOT, &mut String::new(), &mut stripped);
        stripped.sort();
        stripped.dedup();
        stripped
    }

    /// True when nothing under a node at `ctx` can be stripped or rewritten (its
    /// redacted form is itself).
    pub(super) fn is_inert(&self, ctx: Ctx) -> bool {
        ctx.place == Place::Other
            && (ctx.in_schema || self.redaction == Redaction::AgentaCompatible)
    }

    /// Whether `key` (with `value`) goes from an object at `ctx`, and under which label.
    pub(super) fn strips<T: Tree>(&self, ctx: Ctx, key: &str, value: &T) -> Option<Label> {
        // Agenta's part: the credential keys of a list entry and of its connection/call
        // (popped even when null, once anything non-null is stripped; not reported then).
        if self.agenta_applies && is_credential_key(key, self.redaction) {
            match ctx.place {
                Place::Entry => return Some(Label::Agenta(None, !value.is_null())),
                Place::Nested(nested) => {
                    return Some(Label::Agenta(Some(nested), !value.is_null()))
                }
                _ => {}
            }
        }
        // C2, by rule: credential-shaped fields anywhere (Gatehouse's default only).
        if self.redaction != Redaction::Gatehouse || ctx.in_schema || value.is_null() {
            return None;
        }
        let strip = if ctx.in_credentials {
            key == "value"
        } else {
            is_credential_shaped_key(key)
                || (key.eq_ignore_ascii_case("env")
                    && (value.as_object().is_some() || value.as_array().is_some()))
        };
        strip.then_some(Label::Path)
    }

    /// The context of the value under `key` of an object at `ctx`.
    pub(super) fn child<T: Tree>(&self, ctx: Ctx, key: &str, value: &T) -> Ctx {
        let list = CONNECTION_BEARING_LISTS.contains(&key) && value.as_array().is_some();
        let place = match ctx.place {
            Place::Root if key == "agent" && value.as_object().is_some() => Place::Agent,
            Place::Root if list && self.redaction == Redaction::Gatehouse => Place::List,
            Place::Agent if list => Place::List,
            Place::Entry if value.as_object().is_some() => NESTED_CONNECTION_KEYS
                .iter()
                .find(|nested| **nested == key)
                .map(|nested| Place::Nested(nested))
                .unwrap_or(Place::Other),
            _ => Place::Other,
        };
        Ctx {
            place,
            in_credentials: ctx.in_credentials || key.eq_ignore_ascii_case("credentials"),
            in_schema: ctx.in_schema
                || SCHEMA_KEYS.contains(&key)
                || (key == "parameters" && value.as_object().is_some_and(looks_like_schema::<T>)),
        }
    }

    /// The context of an element of an array at `ctx`.
    pub(super) fn element<T: Tree>(&self, ctx: Ctx, value: &T) -> Ctx {
        Ctx {
            place: if ctx.place == Place::List && value.as_object().is_some() {
                Place::Entry
            } else {
                Place::Other
            },
            ..ctx
        }
    }

    /// The text a string at `ctx` is written as, when the rule changes it (a URL's
    /// secrets).
    pub(super) fn rewrite(&self, ctx: Ctx, text: &str) -> Option<String> {
        if self.redaction != Redaction::Gatehouse || ctx.in_schema {
            return None;
        }
        strip_url_secrets(text)
    }
}

/// How a stripped field is reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Label {
    /// Agenta's way: `headers`, `connection.headers`, ...; reported only when the value
    /// was not null.
    Agenta(Option<&'static str>, bool),
    /// The field's dotted path.
    Path,
}

/// Redact the top-level object `params` in place; returns the sorted, deduplicated labels
/// of what was stripped (see [`redact_effective_parameters`]).
pub(crate) fn redact_object<T: Tree>(params: &mut T::Object, redaction: Redaction) -> Vec<String> {
    Rule::for_params::<T>(params, redaction).redact::<T>(params)
}

fn redact_in_place<T: Tree>(
    object: &mut T::Object,
    rule: Rule,
    ctx: Ctx,
    path: &mut String,
    stripped: &mut Vec<String>,
) {
    T::retain(object, |key, value| match rule.strips(ctx, key, value) {
        None => true,
        Some(Label::Agenta(nested, reported)) => {
            if reported {
                stripped.push(match nested {
                    Some(nested) => format!("{nested}.{key}"),
                    None => key.to_string(),
                });
            }
            false
        }
        Some(Label::Path) => {
            stripped.push(if path.is_empty() {
                key.to_string()
            } else {
                format!("{path}.{key}")
            });
            false
        }
    });
    T::for_each_mut(object, |key, value| {
        let start = path.len();
        if !path.is_empty() {
            path.push('.');
        }
        path.push_str(key);
        let child = rule.child(ctx, key, &*value);
        redact_value_in_place(value, rule, child, path, stripped);
        path.truncate(start);
    });
}

fn redact_value_in_place<T: Tree>(
    value: &mut T,
    rule: Rule,
    ctx: Ctx,
    path: &mut String,
    stripped: &mut Vec<String>,
) {
    if let Some(object) = value.as_object_mut() {
        redact_in_place::<T>(object, rule, ctx, path, stripped);
    } else if let Some(items) = value.as_array_mut() {
        for item in items.iter_mut() {
            let element = rule.element(ctx, &*item);
            redact_value_in_place(item, rule, element, path, stripped);
        }
    } else if let Some(rewritten) = value.as_text().and_then(|text| rule.rewrite(ctx, text)) {
        stripped.push(format!("{path}?query"));
        value.set_text(rewritten);
    }
}

/// Keys whose value is a JSON Schema (a tool's parameters): never touched, so a schema
/// property named `headers` or `token` stays a parameter name. (A `parameters` value that
/// reads as a schema is one too: [`looks_like_schema`].)
const SCHEMA_KEYS: [&str; 7] = [
    "inputSchema",
    "input_schema",
    "outputSchema",
    "output_schema",
    "jsonSchema",
    "json_schema",
    "schema",
];

/// True when `object` reads as a JSON Schema (`$schema`, or an object type with
/// `properties`): an OpenAI-style tool's `parameters`.
fn looks_like_schema<T: Tree>(object: &T::Object) -> bool {
    T::get(object, "$schema").is_some()
        || (T::get(object, "properties").is_some_and(|p| p.as_object().is_some())
            && T::get(object, "type").and_then(T::as_text) == Some("object"))
}

/// Redact `params` (no size check): returns the redacted object and the sorted,
/// deduplicated labels of the stripped fields.
///
/// `params` is consumed and redacted in place: when nothing non-null is to be stripped it
/// is returned as is (moved, no copy); otherwise only the list entries (and their nested
/// `connection`/`call` objects) that hold a credential key change.
///
/// Agenta's quirks are kept: only object entries of `agent.mcps`/`agent.tools` are
/// touched; `headers`/`authorization` are popped from the entry and from its nested
/// `connection`/`call` objects (other keys keep their positions); a key whose value is
/// `null` is popped but not counted, and when nothing non-null was stripped the INPUT is
/// returned unchanged (so `"headers": null` survives then). `credentials` (vault key
/// names) always survives.
pub fn redact_effective_parameters(
    mut params: JsonObject,
    redaction: Redaction,
) -> (JsonObject, Vec<String>) {
    let stripped = redact_object::<Value>(&mut params, redaction);
    (params, stripped)
}
