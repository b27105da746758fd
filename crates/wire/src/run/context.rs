//! The run's context: per-call trace propagation (`context`), telemetry export
//! (`telemetry`) and the run's own identity (`runContext`).

use serde::{Deserialize, Serialize};

#[cfg(feature = "schema")]
use crate::json::Nullable;
use crate::json::{present_or_null, required_nullable};
use crate::JsonObject;

/// `context`: the run's per-call protocol context (W3C trace propagation).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RequestContext {
    /// The trace-propagation headers.
    pub propagation: Propagation,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `context.propagation`: both keys are always written, `null` when unset
/// (`"baggage": null` round-trips).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Propagation {
    /// W3C `traceparent`.
    #[serde(deserialize_with = "required_nullable")]
    #[cfg_attr(feature = "schema", schemars(required, with = "Nullable<String>"))]
    pub traceparent: Option<String>,
    /// W3C `baggage`.
    #[serde(deserialize_with = "required_nullable")]
    #[cfg_attr(feature = "schema", schemars(required, with = "Nullable<String>"))]
    pub baggage: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry`: where the run's spans go and whether content is captured.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Telemetry {
    /// The capture policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "TelemetryCapture"))]
    pub capture: Option<TelemetryCapture>,
    /// The exporters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "TelemetryExporters"))]
    pub exporters: Option<TelemetryExporters>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.capture`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TelemetryCapture {
    /// `telemetry.capture.content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "CaptureContent"))]
    pub content: Option<CaptureContent>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.capture.content`: whether message and tool content is put on spans.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CaptureContent {
    /// Capture content (Agenta's default is on).
    pub enabled: bool,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.exporters`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct TelemetryExporters {
    /// The OTLP exporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "OtlpExporter"))]
    pub otlp: Option<OtlpExporter>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `telemetry.exporters.otlp`: the traces endpoint and its `authorization` header.
// `Debug` (below) shows the header names and the unknown keys, never their values (the
// credential rides a header), so a `{:?}` in a log line leaks nothing.
#[derive(Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct OtlpExporter {
    /// OTLP/HTTP traces endpoint; `null` when the run has none (Agenta's SDK writes the key).
    // Absent is `None`, `null` is `Some(None)`: each is written back as read.
    #[serde(
        default,
        deserialize_with = "present_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Nullable<String>"))]
    pub endpoint: Option<Option<String>>,
    /// Headers (the credential rides `authorization`); a value is `null` when unset
    /// (Agenta's SDK writes `"authorization": null` for a run with no credential).
    // As `endpoint`: absent is `None`, `null` is `Some(None)`.
    #[serde(
        default,
        deserialize_with = "present_or_null",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "Nullable<NullableStringMap>"))]
    pub headers: Option<Option<NullableStringMap>>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl std::fmt::Debug for OtlpExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers = self.headers.as_ref().map(|headers| {
            headers
                .as_ref()
                .map(|map| map.keys().map(String::as_str).collect::<Vec<_>>())
        });
        f.debug_struct("OtlpExporter")
            .field(
                "endpoint",
                &self.endpoint.as_ref().map(|e| e.as_ref().map(|_| "<set>")),
            )
            .field("headers (names only)", &headers)
            .field(
                "extra (keys only)",
                &self.extra.keys().map(String::as_str).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// Header name to value, where a value may be `null` (an unset credential), in order.
pub type NullableStringMap = indexmap::IndexMap<String, Option<String>>;

/// `runContext`: the run's own identity. INNER keys are snake_case (they are the
/// namespace `$ctx.<dotted.path>` tokens address). Every part is written only when set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(extend("minProperties" = 1)))]
pub struct RunContext {
    /// The run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RunContextRun"))]
    pub run: Option<RunContextRun>,
    /// The running workflow.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RunContextWorkflow"))]
    pub workflow: Option<RunContextWorkflow>,
    /// The run's trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RunContextTrace"))]
    pub trace: Option<RunContextTrace>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RunContext {
    /// True when nothing is set (an empty run context is not written).
    pub fn is_empty(&self) -> bool {
        self.run.is_none()
            && self.workflow.is_none()
            && self.trace.is_none()
            && self.extra.is_empty()
    }

    /// True when the context, or one of its parts, is written empty (Agenta's `to_wire`
    /// leaves an empty part out).
    pub fn has_empty_part(&self) -> bool {
        self.is_empty()
            || self
                .run
                .as_ref()
                .is_some_and(|r| r.kind.is_none() && r.extra.is_empty())
            || self
                .workflow
                .as_ref()
                .is_some_and(RunContextWorkflow::is_empty)
            || self
                .trace
                .as_ref()
                .is_some_and(|t| t.trace_id.is_none() && t.span_id.is_none() && t.extra.is_empty())
    }
}

/// `runContext.run`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(extend("minProperties" = 1)))]
pub struct RunContextRun {
    /// Run kind, e.g. `test`, `playground`, `api`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub kind: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `runContext.workflow`: artifact, variant, revision, draft flag.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(extend("minProperties" = 1)))]
pub struct RunContextWorkflow {
    /// The workflow (artifact).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RunContextReference"))]
    pub artifact: Option<RunContextReference>,
    /// The variant.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RunContextReference"))]
    pub variant: Option<RunContextReference>,
    /// The revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "RunContextReference"))]
    pub revision: Option<RunContextReference>,
    /// The run uses unsaved (draft) config. Agenta's SDK writes a boolean; its runner reads
    /// any JSON value here (hashed as it is, `?? null`), so any is read and written back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub is_draft: Option<serde_json::Value>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl RunContextWorkflow {
    /// True when nothing is set.
    pub fn is_empty(&self) -> bool {
        self.artifact.is_none()
            && self.variant.is_none()
            && self.revision.is_none()
            && self.is_draft.is_none()
            && self.extra.is_empty()
    }
}

/// `{id?, slug?, version?}` inside `runContext.workflow`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(extend("minProperties" = 1)))]
pub struct RunContextReference {
    /// Id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub id: Option<String>,
    /// Slug.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub slug: Option<String>,
    /// Version (revisions). Agenta's SDK writes a string; its runner reads any JSON value
    /// here (a revision's is hashed as it is, `?? null`), so any is read and written back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub version: Option<serde_json::Value>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

/// `runContext.trace`: either id may be alone (Agenta writes only the ids that are set).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schema", schemars(extend("minProperties" = 1)))]
pub struct RunContextTrace {
    /// 32 hex characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub trace_id: Option<String>,
    /// 16 hex characters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub span_id: Option<String>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::RunRequest;

    /// What Agenta's SDK (`TraceContext.telemetry_to_wire`) writes for a run with a trace
    /// parent and no exporter or credential: both keys present, both `null`.
    const SDK_TELEMETRY_NULLS: &str = r#"{"capture":{"content":{"enabled":true}},"exporters":{"otlp":{"endpoint":null,"headers":{"authorization":null}}}}"#;

    #[test]
    fn telemetry_nulls_are_read_and_written_back_as_read() {
        let telemetry: Telemetry = serde_json::from_str(SDK_TELEMETRY_NULLS).unwrap();
        let otlp = telemetry.exporters.as_ref().unwrap().otlp.as_ref().unwrap();
        assert_eq!(otlp.endpoint, Some(None));
        let headers = otlp.headers.as_ref().unwrap().as_ref().unwrap();
        assert_eq!(headers.get("authorization"), Some(&None));
        assert_eq!(
            serde_json::to_string(&telemetry).unwrap(),
            SDK_TELEMETRY_NULLS
        );

        // Absent stays absent, `"headers": null` stays `null`, a value stays a value.
        for text in [
            r#"{"exporters":{"otlp":{}}}"#,
            r#"{"exporters":{"otlp":{"headers":null}}}"#,
            r#"{"exporters":{"otlp":{"endpoint":"https://otlp.example/v1/traces","headers":{"authorization":"Access t"}}}}"#,
        ] {
            let telemetry: Telemetry = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&telemetry).unwrap(), text);
        }
    }

    #[test]
    fn debug_never_shows_the_credential_or_the_endpoint() {
        let text = r#"{"exporters":{"otlp":{"endpoint":"https://otlp.example/v1/traces?token=t0ps3cret","headers":{"authorization":"Access s3cr3t-value"},"x-key":"k3y-value"}}}"#;
        let telemetry: Telemetry = serde_json::from_str(text).unwrap();
        let shown = format!("{telemetry:?}");
        for secret in ["t0ps3cret", "s3cr3t-value", "k3y-value"] {
            assert!(!shown.contains(secret), "{secret} in {shown}");
        }
        assert!(shown.contains("authorization"), "{shown}");
        assert!(shown.contains("x-key"), "{shown}");
    }

    #[test]
    fn a_run_request_with_the_sdks_telemetry_nulls_round_trips() {
        let body = format!(
            r#"{{"harness":"codex","sandbox":"local","sessionId":"s","agentsMd":null,"tools":[],"model":"gpt-5","messages":[{{"role":"user","content":"hi"}}],"context":{{"propagation":{{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01","baggage":null}}}},"telemetry":{SDK_TELEMETRY_NULLS}}}"#
        );
        let request: RunRequest = serde_json::from_str(&body).unwrap();
        let written: serde_json::Value = serde_json::to_value(&request).unwrap();
        let telemetry = &written["telemetry"]["exporters"]["otlp"];
        assert!(telemetry.get("endpoint").is_some_and(|v| v.is_null()));
        assert!(telemetry["headers"]
            .get("authorization")
            .is_some_and(|v| v.is_null()));
    }
}
