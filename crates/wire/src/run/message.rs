//! Chat messages and their content blocks: the conversation a `/run` request carries
//! (`messages`) and a result returns.

use serde::{Deserialize, Serialize};

use crate::json::open_enum;
use crate::JsonObject;

/// The content of a chat message: plain text or a list of blocks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum MessageContent {
    /// Plain text.
    Text(String),
    /// Content blocks.
    Blocks(Vec<ContentBlock>),
}

/// One chat message: `{role, content}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChatMessage {
    /// `user`, `assistant`, `system` or `tool`.
    pub role: String,
    /// Text or blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "MessageContent"))]
    pub content: Option<MessageContent>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ChatMessage {
    /// A message with plain text content.
    pub fn text(role: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: role.into(),
            content: Some(MessageContent::Text(text.into())),
            extra: JsonObject::new(),
        }
    }
}

open_enum! {
    /// The kinds of content block (Agenta's `type` is a free string; another kind is kept).
    pub enum ContentBlockType {
        /// Text.
        Text = "text",
        /// An inline image.
        Image = "image",
        /// A resource by URI.
        Resource = "resource",
        /// An uploaded attachment.
        Attachment = "attachment",
        /// A tool call the assistant made.
        ToolCall = "tool_call",
        /// The result of a tool call.
        ToolResult = "tool_result",
    }
}

/// One content block. Which fields are set depends on `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ContentBlock {
    /// The block kind.
    #[serde(rename = "type")]
    pub block_type: ContentBlockType,
    /// Text (text blocks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub text: Option<String>,
    /// Base64 data (images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub data: Option<String>,
    /// MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub mime_type: Option<String>,
    /// Resource URI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub uri: Option<String>,
    /// Attachment id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub attachment_id: Option<String>,
    /// Attachment file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub filename: Option<String>,
    /// Attachment size in bytes (a whole number: `2048.0` reads as `2048`).
    #[serde(
        default,
        deserialize_with = "crate::json::optional_whole_u64",
        skip_serializing_if = "Option::is_none"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "u64"))]
    pub size: Option<u64>,
    /// Tool call id (tool_call / tool_result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub tool_call_id: Option<String>,
    /// Tool name (tool_call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    pub tool_name: Option<String>,
    /// Tool input (tool_call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub input: Option<serde_json::Value>,
    /// Tool output (tool_result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Value"))]
    pub output: Option<serde_json::Value>,
    /// The tool failed (tool_result).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(with = "bool"))]
    pub is_error: Option<bool>,
    /// Fields this version does not know, kept for round trips.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl ContentBlock {
    /// A block of `block_type` with every optional field unset.
    pub fn empty(block_type: ContentBlockType) -> Self {
        Self {
            block_type,
            text: None,
            data: None,
            mime_type: None,
            uri: None,
            attachment_id: None,
            filename: None,
            size: None,
            tool_call_id: None,
            tool_name: None,
            input: None,
            output: None,
            is_error: None,
            extra: JsonObject::new(),
        }
    }
}

impl ContentBlock {
    /// A `text` block.
    ///
    /// ```
    /// use gatehouse_wire::run::ContentBlock;
    /// let block = ContentBlock::text_block("hi");
    /// assert_eq!(serde_json::to_string(&block).unwrap(), r#"{"type":"text","text":"hi"}"#);
    /// ```
    pub fn text_block(text: impl Into<String>) -> Self {
        let mut block = Self::empty(ContentBlockType::Text);
        block.text = Some(text.into());
        block
    }
}
