//! Human output (aligned tables, key/value blocks, a spinner) and `--json` output.
//!
//! Everything a person reads goes through here, and no control character reaches the
//! terminal raw: a value from the server (an id, a tool name, its arguments, an error
//! text) could otherwise move the cursor, rewrite a line or forge one (an ESC sequence
//! can make a `Bash rm -rf ~` gate look like a `Read`). Cells, fields, the lines of
//! `outln!` / `errln!` and error messages escape every control character, line breaks
//! included; a rendered table escapes every control character but its own line breaks.
//! `--json` escapes them by itself.

use std::borrow::Cow;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use crate::exit::{CliError, CliResult};

/// True for a character a terminal may act on instead of showing: C0 and C1 controls,
/// DEL, and the bidirectional controls that reorder what is shown.
fn is_control(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
        )
}

/// `c` as visible text: `\n`, `\r`, `\t`, otherwise `\u{1b}`.
fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        other => out.extend(other.escape_unicode()),
    }
}

/// `text` with every control character escaped, line breaks included: one value, shown
/// on one line, never acted on by the terminal (`Read\x1b[2K\r` shows as
/// `Read\u{1b}[2K\r`).
pub fn escape(text: &str) -> Cow<'_, str> {
    escape_except(text, None)
}

/// Like [`escape`], keeping `keep` raw.
fn escape_except(text: &str, keep: Option<char>) -> Cow<'_, str> {
    if !text.chars().any(|c| is_control(c) && Some(c) != keep) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_control(c) && Some(c) != keep {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Write `text` and a newline to stdout, every control character but its line breaks
/// escaped. A closed pipe (e.g. `| head`) is not worth a panic: the rest is dropped
/// quietly.
pub fn write_out(text: &str) {
    let text = escape_except(text, Some('\n'));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

/// Write `text` and a newline to stderr, every control character but its line breaks
/// escaped.
pub fn write_err(text: &str) {
    let text = escape_except(text, Some('\n'));
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{text}");
    let _ = err.flush();
}

/// `println!` for this CLI: one line on stdout, every control character in it escaped,
/// line breaks included (a value in it cannot start another line).
macro_rules! outln {
    () => {
        $crate::output::write_out("")
    };
    ($($arg:tt)*) => {
        $crate::output::write_out(&$crate::output::escape(&format!($($arg)*)))
    };
}
pub(crate) use outln;

/// `eprintln!` for this CLI: one line on stderr, escaped as [`outln!`]'s.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::write_err(&$crate::output::escape(&format!($($arg)*)))
    };
}
pub(crate) use errln;

/// Print `value` as pretty JSON on stdout.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> CliResult {
    let text = serde_json::to_string_pretty(value)
        .map_err(|err| CliError::other(format!("could not render JSON output: {err}")))?;
    write_out(&text);
    Ok(())
}

/// Print `value` as one compact JSON line on stdout (for streams: NDJSON).
pub fn print_json_line<T: Serialize + ?Sized>(value: &T) -> CliResult {
    let text = serde_json::to_string(value)
        .map_err(|err| CliError::other(format!("could not render JSON output: {err}")))?;
    let mut out = std::io::stdout().lock();
    // A closed pipe (e.g. `| head`) is not worth a panic; stop quietly.
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
    Ok(())
}

/// A text table with left-aligned columns sized to their widest cell.
#[derive(Debug, Clone)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<I, S>(headers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            headers: headers.into_iter().map(Into::into).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row (missing cells render empty, extra cells are kept).
    pub fn row<I, S>(&mut self, cells: I)
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        // A cell is one value: its control characters, line breaks included, escaped.
        self.rows.push(
            cells
                .into_iter()
                .map(|cell| escape(&cell.into()).into_owned())
                .collect(),
        );
    }

    /// Render to a string, one line per row, header first.
    pub fn render(&self) -> String {
        self.render_lines(&self.widths(), true)
    }

    /// The width of each column: its widest cell, header included.
    fn widths(&self) -> Vec<usize> {
        let columns = self
            .rows
            .iter()
            .map(Vec::len)
            .chain(std::iter::once(self.headers.len()))
            .max()
            .unwrap_or(0);
        let mut widths = vec![0usize; columns];
        for line in std::iter::once(&self.headers).chain(self.rows.iter()) {
            for (i, cell) in line.iter().enumerate() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
        widths
    }

    /// The rows (and the header, when asked) padded to `widths`; a wider cell pushes the
    /// rest of its line right.
    fn render_lines(&self, widths: &[usize], header: bool) -> String {
        let header = header.then_some(&self.headers);
        let mut out = String::new();
        for line in header.into_iter().chain(self.rows.iter()) {
            let mut text = String::new();
            let columns = widths.len().max(line.len());
            for i in 0..columns {
                let cell = line.get(i).map(String::as_str).unwrap_or("");
                text.push_str(cell);
                if i + 1 < columns {
                    let width = widths.get(i).copied().unwrap_or(0);
                    let pad = width.saturating_sub(cell.chars().count()) + 2;
                    text.extend(std::iter::repeat_n(' ', pad));
                }
            }
            out.push_str(text.trim_end());
            out.push('\n');
        }
        out
    }

    /// Print to stdout.
    pub fn print(&self) {
        write_out(self.render().trim_end_matches('\n'));
    }
}

/// A table printed as its rows arrive (a page at a time), so that a long listing is
/// never held whole: the header and the column widths come from the first batch.
#[derive(Debug)]
pub struct StreamTable {
    headers: Vec<String>,
    widths: Option<Vec<usize>>,
}

impl StreamTable {
    /// A table with these column headers; nothing is printed before the first rows.
    pub fn new<I, S>(headers: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            headers: headers.into_iter().map(Into::into).collect(),
            widths: None,
        }
    }

    /// Print a batch of rows (the header first, with the first batch).
    pub fn print(&mut self, rows: Vec<Vec<String>>) {
        if rows.is_empty() {
            return;
        }
        let mut table = Table::new(self.headers.clone());
        for row in rows {
            table.row(row);
        }
        let text = match &self.widths {
            Some(widths) => table.render_lines(widths, false),
            None => {
                let widths = table.widths();
                let text = table.render_lines(&widths, true);
                self.widths = Some(widths);
                text
            }
        };
        write_out(text.trim_end_matches('\n'));
    }

    /// True once a row was printed.
    pub fn printed_any(&self) -> bool {
        self.widths.is_some()
    }
}

/// A JSON array printed as its elements arrive, in the layout of [`print_json`] of the
/// whole array, so that a long listing is never held whole.
#[derive(Debug, Default)]
pub struct StreamJsonArray {
    started: bool,
}

impl StreamJsonArray {
    /// Print one element (after the opening bracket, or a comma).
    pub fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> CliResult {
        let text = serde_json::to_string_pretty(value)
            .map_err(|err| CliError::other(format!("could not render JSON output: {err}")))?;
        let mut element = String::from(if self.started { ",\n" } else { "[\n" });
        self.started = true;
        for (i, line) in text.lines().enumerate() {
            if i > 0 {
                element.push('\n');
            }
            element.push_str("  ");
            element.push_str(line);
        }
        write_raw(&element);
        Ok(())
    }

    /// True once an element was printed.
    pub fn started(&self) -> bool {
        self.started
    }

    /// Close the array (`[]` when nothing was pushed).
    pub fn finish(self) {
        write_raw(if self.started { "\n]\n" } else { "[]\n" });
    }
}

/// Write `text` to stdout as it is (JSON only: it carries no raw control character).
fn write_raw(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Print `key: value` pairs aligned on the colon.
pub fn print_fields(fields: &[(&str, String)]) {
    let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in fields {
        write_out(&format!("{key:<width$}  {}", escape(value)));
    }
}

/// Shorten `text` to at most `max` characters, marking the cut with `…`.
pub fn truncate(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        text.to_string()
    } else {
        let kept: String = text.chars().take(max.saturating_sub(1)).collect();
        format!("{kept}…")
    }
}

/// `-` for a missing value.
pub fn or_dash(value: Option<&str>) -> String {
    value.unwrap_or("-").to_string()
}

/// A spinner drawn on stderr while the command waits. It is drawn only when stdout is a
/// terminal (scripts piping the output never see it); dropping it erases the line.
pub struct Spinner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Spinner {
    /// Start a spinner with `label`, or a no-op spinner when stdout is not a terminal.
    pub fn start(label: impl Into<String>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        if !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
            return Self { stop, thread: None };
        }
        let label = label.into();
        let flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            const FRAMES: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
            let mut i = 0usize;
            while !flag.load(Ordering::Relaxed) {
                let mut err = std::io::stderr().lock();
                let _ = write!(err, "\r{} {label}", FRAMES[i % FRAMES.len()]);
                let _ = err.flush();
                drop(err);
                i += 1;
                // Animation frame pacing only; the waiting itself is done by the caller.
                std::thread::park_timeout(Duration::from_millis(100));
            }
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        });
        Self {
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_aligns_columns() {
        let mut table = Table::new(["ID", "STATUS"]);
        table.row(["a", "pending"]);
        table.row(["longer-id", "resolved"]);
        assert_eq!(
            table.render(),
            "ID         STATUS\na          pending\nlonger-id  resolved\n"
        );
    }

    #[test]
    fn control_characters_are_shown_escaped() {
        assert_eq!(escape("Read"), "Read");
        assert_eq!(
            escape("Bash\x1b[2K\rRead\x07"),
            "Bash\\u{1b}[2K\\rRead\\u{7}"
        );
        assert_eq!(escape("a\nerror: forged"), "a\\nerror: forged");
        assert_eq!(escape("\u{9b}2K \u{202e}"), "\\u{9b}2K \\u{202e}");
        assert_eq!(escape_except("a\nb\r", Some('\n')), "a\nb\\r");
        let mut table = Table::new(["TOOL"]);
        table.row(["Bash\r\x1b[1ARead"]);
        assert_eq!(table.render(), "TOOL\nBash\\r\\u{1b}[1ARead\n");
    }

    #[test]
    fn a_streamed_table_keeps_the_first_batch_widths() {
        let mut table = Table::new(["ID", "STATUS"]);
        table.row(["a", "pending"]);
        let widths = table.widths();
        let mut later = Table::new(["ID", "STATUS"]);
        later.row(["longer-id", "resolved"]);
        assert_eq!(later.render_lines(&widths, false), "longer-id  resolved\n");
        assert_eq!(
            table.render_lines(&widths, true),
            "ID  STATUS\na   pending\n"
        );
    }

    #[test]
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
