//! Human output (aligned tables, key/value blocks, a spinner) and `--json` output.

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use serde::Serialize;

use crate::exit::{CliError, CliResult};

/// Write `text` and a newline to stdout. A closed pipe (e.g. `| head`) is not worth a
/// panic: the rest is dropped quietly.
fn write_out(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

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
        self.rows.push(cells.into_iter().map(Into::into).collect());
    }

    /// Render to a string, one line per row, header first.
    pub fn render(&self) -> String {
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
        let mut out = String::new();
        for line in std::iter::once(&self.headers).chain(self.rows.iter()) {
            let mut text = String::new();
            for (i, width) in widths.iter().enumerate() {
                let cell = line.get(i).map(String::as_str).unwrap_or("");
                if i + 1 == columns {
                    text.push_str(cell);
                } else {
                    text.push_str(cell);
                    let pad = width - cell.chars().count() + 2;
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

/// Print `key: value` pairs aligned on the colon.
pub fn print_fields(fields: &[(&str, String)]) {
    let width = fields.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    for (key, value) in fields {
        write_out(&format!("{key:<width$}  {value}"));
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
    fn truncate_marks_the_cut() {
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(truncate("abc", 4), "abc");
    }
}
