//! A small incremental Server-Sent Events parser (the WHATWG event-stream format),
//! shared by the interaction watch and, later, the execution event stream.

/// One dispatched SSE event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SseEvent {
    /// The `event:` name (`message` when none was given).
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` seen.
    pub id: Option<String>,
}

/// Longest line kept; a longer one is dropped (a hostile or broken server).
const MAX_LINE_BYTES: usize = 1024 * 1024;

/// Feeds bytes in, takes events out. Handles `\n`, `\r\n` and `\r` line ends split
/// anywhere across chunks, comments, and multi-line data.
#[derive(Debug, Default)]
pub(crate) struct SseParser {
    line: Vec<u8>,
    skipping_long_line: bool,
    last_was_cr: bool,
    event: Option<String>,
    data: Vec<String>,
    has_data: bool,
    last_id: Option<String>,
    retry_ms: Option<u64>,
}

impl SseParser {
    /// Parse `chunk`, returning every event completed by it.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut out = Vec::new();
        for &byte in chunk {
            match byte {
                b'\n' if self.last_was_cr => {
                    // The `\n` of a `\r\n` pair: the line already ended at `\r`.
                    self.last_was_cr = false;
                }
                b'\n' | b'\r' => {
                    self.last_was_cr = byte == b'\r';
                    self.end_line(&mut out);
                }
                _ => {
                    self.last_was_cr = false;
                    if self.skipping_long_line {
                        continue;
                    }
                    if self.line.len() >= MAX_LINE_BYTES {
                        tracing::warn!("SSE line longer than {MAX_LINE_BYTES} bytes dropped");
                        self.line.clear();
                        self.skipping_long_line = true;
                        continue;
                    }
                    self.line.push(byte);
                }
            }
        }
        out
    }

    /// The last `retry:` value the server sent, in milliseconds.
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    fn end_line(&mut self, out: &mut Vec<SseEvent>) {
        if self.skipping_long_line {
            self.skipping_long_line = false;
            self.line.clear();
            return;
        }
        let line = String::from_utf8_lossy(&self.line).into_owned();
        self.line.clear();
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line.starts_with(':') {
            return; // comment (heartbeat)
        }
        let (field, value) = match line.find(':') {
            Some(i) => {
                let value = &line[i + 1..];
                (&line[..i], value.strip_prefix(' ').unwrap_or(value))
            }
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => {
                self.data.push(value.to_string());
                self.has_data = true;
            }
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            "retry" => {
                if let Ok(ms) = value.parse::<u64>() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = self.event.take();
        if !self.has_data && event.is_none() {
            self.data.clear();
            return;
        }
        out.push(SseEvent {
            event: event
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| "message".to_string()),
            data: self.data.join("\n"),
            id: self.last_id.clone(),
        });
        self.data.clear();
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_events_split_across_chunks_and_line_ends() {
        let mut p = SseParser::default();
        let mut events = Vec::new();
        let stream = b"retry: 1500\r\n\r\n: heartbeat\n\nevent: ready\ndata: {\"type\":\"ready\"}\r\n\r\nevent: interaction\rdata: {\"a\":\rdata: 1}\r\r";
        for chunk in stream.chunks(3) {
            events.extend(p.feed(chunk));
        }
        assert_eq!(p.retry_ms(), Some(1500));
        assert_eq!(events.len(), 2, "{events:?}");
        assert_eq!(events[0].event, "ready");
        assert_eq!(events[0].data, "{\"type\":\"ready\"}");
        assert_eq!(events[1].event, "interaction");
        assert_eq!(events[1].data, "{\"a\":\n1}");
    }

    #[test]
    fn data_without_event_name_is_a_message() {
        let mut p = SseParser::default();
        let events = p.feed(b"id: 7\ndata:x\n\n");
        assert_eq!(
            events,
            vec![SseEvent {
                event: "message".into(),
                data: "x".into(),
                id: Some("7".into())
            }]
        );
    }
}
