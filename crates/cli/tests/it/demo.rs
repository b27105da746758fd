//! `gatehouse demo` passes, narrates every step, explains its words, and hands off to the
//! quick starts (its speed is a benchmark concern, not a test).

use std::process::Command;

use crate::common::BIN;

/// The words the demo explains in one line where it first uses them.
const GLOSSED: [&str; 9] = [
    "variant",
    "HEAD",
    "draft",
    "stamped config",
    "intervention",
    "execution session",
    "room",
    "checkpoint",
    "durable contract",
];

#[test]
fn demo_passes_and_narrates_every_step() {
    let out = Command::new(BIN).arg("demo").output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    for needle in [
        "the turn parked at an approval gate",
        "the MCP connection's headers were stripped",
        "the secret appears nowhere in the row",
        "HEAD of support-agent.default is now v2",
        "the resumed turn ran under anthropic/claude-sonnet-4-5",
        "AlreadyAnswered",
        "the client reports it as requested, not applied",
        "applied, on the persisted intervention_applied event",
        "the instruction shows in the run's next step",
        "RevisionConflict",
        "the session is unchanged",
        "GET /api/capabilities lists interactions but not execution",
        "CapabilityUnavailable",
        "the host lists durable_approvals",
        "reported as requested: the 202 records a pending command",
        "stopped, on the session's execution.stopped event naming this Stop's command",
        "the turn did not run to its end",
        "neither late Stop is called stopped",
    ] {
        assert!(stdout.contains(needle), "missing {needle:?} in:\n{stdout}");
    }
    assert!(!stdout.contains("sk-demo-0000-never-stored"));
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("All 15 steps passed in ")),
        "{stdout}"
    );
}

#[test]
fn demo_shows_the_stamp_as_a_short_before_and_after() {
    let stdout = demo_stdout();
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|line| line.contains("before (the draft sent) -> after"))
        .unwrap_or_else(|| panic!("no before/after in:\n{stdout}"));
    let fields = &lines[at + 1..at + 4];
    let expected = [
        (
            "agent.llm.model",
            "\"anthropic/claude-sonnet-4-5\" -> \"anthropic/claude-sonnet-4-5\"",
        ),
        (
            "agent.mcps[0].connection.headers",
            "{\"Authorization\":\"Bearer ****\"} -> (stripped)",
        ),
        (
            "agent.mcps[0].connection.credentials.headers",
            "{\"authorization\":\"NOTION_TOKEN\"} -> {\"authorization\":\"NOTION_TOKEN\"}",
        ),
    ];
    for (line, (field, change)) in fields.iter().zip(expected) {
        assert!(
            line.trim_start().starts_with(field) && line.ends_with(change),
            "{line:?} is not {field} {change}"
        );
    }
    // The stamp is those lines, not the whole config: no harness script, no pretty dump.
    for harness in [
        "\"script\"",
        "\"runner\"",
        "data.parameters (the stamped config):",
    ] {
        assert!(!stdout.contains(harness), "{harness} in:\n{stdout}");
    }
    // The scripted agent's `[model=...]` prefix stays out of the story.
    assert!(!stdout.contains("[model="), "{stdout}");
}

#[test]
fn demo_explains_each_word_once_where_it_is_first_used() {
    let stdout = demo_stdout();
    let lines: Vec<&str> = stdout.lines().collect();
    let is_step_title = |line: &str| {
        let line = line.trim_start();
        line.split_once(". ").is_some_and(|(number, _)| {
            !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit())
        })
    };
    for term in GLOSSED {
        let gloss = format!("· {term}: ");
        let glosses: Vec<usize> = (0..lines.len())
            .filter(|&i| lines[i].trim_start().starts_with(&gloss))
            .collect();
        assert_eq!(
            glosses.len(),
            1,
            "{term} explained {} times in:\n{stdout}",
            glosses.len()
        );
        let explained = glosses[0];
        let first_use = lines
            .iter()
            .position(|line| line.contains(term))
            .unwrap_or(explained);
        // Explained in the step that first uses it, before any later step begins.
        assert!(
            lines[first_use..explained]
                .iter()
                .skip(1)
                .all(|line| !is_step_title(line)),
            "{term} is used at line {first_use} but explained only at line {explained}:\n{stdout}"
        );
    }
}

#[test]
fn demo_ends_with_the_next_steps() {
    let stdout = demo_stdout();
    let next = stdout
        .split("\nnext: ")
        .nth(1)
        .unwrap_or_else(|| panic!("no \"next:\" in:\n{stdout}"));
    assert!(next.contains("gatehouse serve --demo-gates 3"), "{next}");
    assert!(
        next.contains("cargo run -p gatehouse-cli -- serve --demo-gates 3"),
        "{next}"
    );
    assert!(next.contains("README.md, \"Start here\""), "{next}");
    for language in ["Rust", "Kotlin", "Swift", "Python", "the command line"] {
        assert!(next.contains(language), "{language} missing from: {next}");
    }
    // The hand-off is the last thing printed.
    assert!(stdout
        .trim_end()
        .ends_with("(Rust, Kotlin, Swift, Python, the command line)"));
}

fn demo_stdout() -> String {
    let out = Command::new(BIN).arg("demo").output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}
