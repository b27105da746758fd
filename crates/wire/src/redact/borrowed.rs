//! The rule applied to a borrowed config, which it neither copies nor changes: written
//! ([`RedactedObject`]) or measured ([`redacted_len`]) as redacted. The borrowing stamp
//! ([`crate::effective::stamp_borrowed`]) is made of these two.

use serde_json::Value;

use super::rule::{Ctx, Rule};
use crate::pyjson::{python_json_dumps_len, python_string_len};
use crate::JsonObject;

/// A parameters object written as the rule redacts it (for
/// [`crate::effective::StampedView`]'s `Serialize`).
pub(crate) struct RedactedObject<'a> {
    map: &'a JsonObject,
    rule: Rule,
    ctx: Ctx,
}

impl<'a> RedactedObject<'a> {
    /// `params`, the object `rule` is for, as the rule redacts it.
    pub(crate) fn new(params: &'a JsonObject, rule: Rule) -> Self {
        Self {
            map: params,
            rule,
            ctx: Ctx::ROOT,
        }
    }
}

struct RedactedValue<'a> {
    value: &'a Value,
    rule: Rule,
    ctx: Ctx,
}

impl serde::Serialize for RedactedObject<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.map {
            if self.rule.strips(self.ctx, key, value).is_some() {
                continue;
            }
            let ctx = self.rule.child(self.ctx, key, value);
            map.serialize_entry(
                key,
                &RedactedValue {
                    value,
                    rule: self.rule,
                    ctx,
                },
            )?;
        }
        map.end()
    }
}

impl serde::Serialize for RedactedValue<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeSeq;
        match self.value {
            Value::Object(map) => RedactedObject {
                map,
                rule: self.rule,
                ctx: self.ctx,
            }
            .serialize(serializer),
            Value::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    let ctx = self.rule.element(self.ctx, item);
                    seq.serialize_element(&RedactedValue {
                        value: item,
                        rule: self.rule,
                        ctx,
                    })?;
                }
                seq.end()
            }
            Value::String(text) => match self.rule.rewrite(self.ctx, text) {
                Some(rewritten) => serializer.serialize_str(&rewritten),
                None => serializer.serialize_str(text),
            },
            other => other.serialize(serializer),
        }
    }
}

/// [`python_json_dumps_len`] of `params` (the object `rule` is for) as the rule redacts
/// it, and whether the rule strips or rewrites anything of it.
pub(crate) fn redacted_len(params: &JsonObject, rule: Rule) -> (usize, bool) {
    let mut changed = false;
    let measured_bytes = redacted_object_len(params, rule, Ctx::ROOT, &mut changed);
    (measured_bytes, changed)
}

/// [`python_json_dumps_len`] of `map` as the rule redacts it; `changed` is set when the
/// rule strips or rewrites anything.
fn redacted_object_len(map: &JsonObject, rule: Rule, ctx: Ctx, changed: &mut bool) -> usize {
    let mut total = 2;
    let mut kept = 0;
    for (key, value) in map {
        if rule.strips(ctx, key, value).is_some() {
            *changed = true;
            continue;
        }
        let value_len = match value {
            Value::String(_) | Value::Number(_) | Value::Bool(_) | Value::Null => {
                redacted_value_len(value, rule, ctx.of_scalar(), changed)
            }
            _ => redacted_value_len(value, rule, rule.child(ctx, key, value), changed),
        };
        total += python_string_len(key) + 2 + value_len;
        kept += 1;
    }
    if kept > 1 {
        total += 2 * (kept - 1);
    }
    total
}

fn redacted_value_len(value: &Value, rule: Rule, ctx: Ctx, changed: &mut bool) -> usize {
    // Nothing below to strip or rewrite: the plain length.
    if rule.is_inert(ctx) {
        return python_json_dumps_len(value);
    }
    match value {
        Value::Object(map) => redacted_object_len(map, rule, ctx, changed),
        Value::Array(items) if !items.is_empty() => {
            let inner: usize = items
                .iter()
                .map(|item| redacted_value_len(item, rule, rule.element(ctx, item), changed))
                .sum();
            2 + inner + 2 * (items.len() - 1)
        }
        Value::String(text) => match rule.rewrite(ctx, text) {
            Some(rewritten) => {
                *changed = true;
                python_string_len(&rewritten)
            }
            None => python_string_len(text),
        },
        other => python_json_dumps_len(other),
    }
}
