//! Every repository path a Markdown file or a `//!` comment names exists (issue 32).
//!
//! Read: every `*.md` of the repository (build output, VCS and package folders skipped) and
//! the `//!` lines of `crates/*/src/**/*.rs`. A "named path" is the text of an inline code
//! span or of a link target that looks like a file path ([`path_like`]) and starts where
//! ours do ([`Context::is_ours`]); other projects' files, build output, model names and
//! benchmark ids are left alone, so that what this test flags is always worth fixing.

// Test code: a repository it cannot read should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Component, Path, PathBuf};

/// Dead paths known and left for another change, as (document, path); each entry excuses
/// one mention. The test fails once an entry resolves or is no longer named, so the list
/// only shrinks.
const PENDING: &[(&str, &str)] = &[];

/// The extensions that make a name without a `/` a file name (`README.md`, `rules.rs`).
const EXTENSIONS: &[&str] = &[
    "rs", "md", "py", "kt", "swift", "ts", "json", "toml", "sh", "sql", "yml", "txt",
];

/// First segments that are never ours even if a folder of that name appears in a checkout:
/// `shared/` holds the upstream projects' fixtures (Agenta's, AgentPlat's), beside the
/// checkout in CI; `target/` is cargo's output.
const NOT_OURS: &[&str] = &["shared", "target"];

/// Folders that hold generated or installed files: never walked, and a path through one is
/// not checked (it exists only after a build).
fn is_generated_dir(name: &str) -> bool {
    matches!(
        name,
        ".git" | "target" | "build" | ".build" | "dist" | "node_modules" | "__pycache__"
    ) || name.starts_with(".pytest")
        || name.ends_with("venv")
        || name.ends_with(".egg-info")
}

/// One path a document names: where, and the text as written (no `#fragment`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Named {
    line: usize,
    path: String,
}

/// Where a document sits, which decides what its relative paths can mean.
struct Context {
    /// The repository root.
    root: PathBuf,
    /// The document, relative to the root (`docs/ARCHITECTURE.md`).
    document: PathBuf,
    /// For a `//!` comment: its crate (`crates/wire`).
    crate_dir: Option<PathBuf>,
    /// Every crate's folder (`crates/*`), absolute.
    crates: Vec<PathBuf>,
}

impl Context {
    fn new(root: &Path, document: PathBuf, crate_dir: Option<PathBuf>) -> Self {
        Context {
            root: root.to_path_buf(),
            document,
            crate_dir,
            crates: crate_dirs(root),
        }
    }

    fn document_dir(&self) -> PathBuf {
        self.root
            .join(self.document.parent().unwrap_or_else(|| Path::new("")))
    }

    /// The folders a path may be written from: the repository root and the document's
    /// folder (as a link would be read); for a `//!` comment also its crate's root and
    /// `src/` (module paths such as `interactions/store/jobs.rs`).
    fn bases(&self) -> Vec<PathBuf> {
        let mut bases = vec![self.root.clone(), self.document_dir()];
        if let Some(crate_dir) = &self.crate_dir {
            bases.push(self.root.join(crate_dir));
            bases.push(self.root.join(crate_dir).join("src"));
        }
        bases
    }

    /// Whether `path` is one of ours, to be checked: its first segment is an entry of a
    /// [base](Self::bases) or of any crate's root (`src/`, `tests/`, `migrations/`: so that
    /// "the server's `tests/it/openapi.rs`" is checked, and must be written in full), it
    /// climbs out of the document's folder with `..` and stays inside the repository, or it
    /// is a module file a `//!` comment names (`rules.rs`). Everything else is another
    /// project's path (`api/oss/...`, `agenta/sdk/...`), one inside a package
    /// (`gatehouse/__init__.py` in the wheel), a model (`openai/gpt-5`) or a benchmark id
    /// (`stamp_parts/walk`), and a bare file name in Markdown (`lib.rs`) is read by its
    /// section, which this test cannot do.
    fn is_ours(&self, path: &str) -> bool {
        let first = path.split('/').next().unwrap_or("");
        if NOT_OURS.contains(&first) || path.split('/').any(is_generated_dir) {
            return false;
        }
        if first == ".." {
            return normalized(&self.document_dir().join(path))
                .is_some_and(|resolved| resolved.starts_with(&self.root));
        }
        if self.crate_dir.is_some() && !path.contains('/') && path.ends_with(".rs") {
            return true;
        }
        self.bases()
            .iter()
            .chain(&self.crates)
            .any(|base| base.join(first).exists())
    }

    /// Whether `path` resolves from any base; for a `//!` comment a `.rs` path may also be
    /// a module's file below its parent module (the server's module map says "[`execution`]:
    /// a rule in `rules.rs`"), so any file of the crate's `src/` ending in it counts.
    fn exists(&self, path: &str) -> bool {
        if path.starts_with("..") {
            // Only as a link reads it; from the root it would reach outside the repository.
            return self.document_dir().join(path).exists();
        }
        if self.bases().iter().any(|base| base.join(path).exists()) {
            return true;
        }
        match &self.crate_dir {
            Some(crate_dir) if path.ends_with(".rs") => {
                let suffix = format!("/{path}");
                files_below(&self.root.join(crate_dir).join("src"))
                    .iter()
                    .any(|file| file.to_string_lossy().ends_with(&suffix))
            }
            _ => false,
        }
    }

    /// The paths this document names that are ours and do not exist.
    fn dead(&self, lines: &[(usize, String)]) -> Vec<Named> {
        named_paths(lines)
            .into_iter()
            .filter(|named| self.is_ours(&named.path) && !self.exists(&named.path))
            .collect()
    }
}

/// A lexically normalized path (`a/b/../c` is `a/c`); `None` when it climbs above its start.
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    Some(out)
}

/// The crates' folders (`crates/*`).
fn crate_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.is_dir())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Every file below `dir`, generated folders skipped, sorted.
fn files_below(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                if !is_generated_dir(&name) {
                    pending.push(path);
                }
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// `text` as a repository path if it looks like one, else `None`: a name of plain
/// characters (no space, no placeholder such as `*`, `<Type>`, `{url}`, `$DIR` or `...`,
/// no `::` of a Rust path, no `:` of a URL), not starting with `/` (an HTTP route such as
/// `/api/...` or `/health`, or an absolute path outside the repository), holding a `/` or
/// ending in one of [`EXTENSIONS`]. A `#fragment` and a leading `./` are dropped.
fn path_like(text: &str) -> Option<&str> {
    let text = text.split('#').next().unwrap_or("");
    let text = text.strip_prefix("./").unwrap_or(text);
    let plain = text
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/'));
    if text.is_empty() || !plain || text.starts_with('/') || text.contains("...") {
        return None;
    }
    let has_extension = text
        .rsplit_once('.')
        .is_some_and(|(stem, extension)| !stem.is_empty() && EXTENSIONS.contains(&extension));
    (text.contains('/') || has_extension).then_some(text)
}

/// The path-like texts of inline code spans and link targets in `lines` (a document's
/// lines with their numbers). A code span may run over lines; a blank line, a jump in the
/// numbering (a line that is no `//!`) or a fenced code block ends a paragraph, and fenced
/// blocks are not read (commands and examples, not references).
fn named_paths(lines: &[(usize, String)]) -> Vec<Named> {
    let mut named = Vec::new();
    let mut paragraph: Vec<(usize, &str)> = Vec::new();
    let mut in_fence = false;
    let mut previous: Option<usize> = None;
    for (number, text) in lines {
        let fence = text.trim_start().starts_with("```") || text.trim_start().starts_with("~~~");
        let gap = previous.is_some_and(|previous| previous + 1 != *number);
        previous = Some(*number);
        if fence || gap || text.trim().is_empty() {
            named.extend(paragraph_paths(&paragraph));
            paragraph.clear();
        }
        if fence {
            in_fence = !in_fence;
        } else if !in_fence && !text.trim().is_empty() {
            paragraph.push((*number, text));
        }
    }
    named.extend(paragraph_paths(&paragraph));
    named
}

/// The named paths of one paragraph, each with the line its text starts on.
fn paragraph_paths(paragraph: &[(usize, &str)]) -> Vec<Named> {
    let Some(&(first_line, _)) = paragraph.first() else {
        return Vec::new();
    };
    let text = paragraph
        .iter()
        .map(|(_, line)| *line)
        .collect::<Vec<_>>()
        .join("\n");
    let line_of = |offset: usize| first_line + text[..offset].matches('\n').count();
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            // A code span closes at the next run of exactly as many backticks; an opening
            // run without one is literal text.
            let run = bytes[i..].iter().take_while(|&&b| b == b'`').count();
            let start = i + run;
            let mut j = start;
            let mut close = None;
            while j < bytes.len() {
                if bytes[j] == b'`' {
                    let other = bytes[j..].iter().take_while(|&&b| b == b'`').count();
                    if other == run {
                        close = Some(j);
                        break;
                    }
                    j += other;
                } else {
                    j += 1;
                }
            }
            match close {
                Some(end) => {
                    found.push((start, text[start..end].trim()));
                    i = end + run;
                }
                None => i = start,
            }
        } else if bytes[i..].starts_with(b"](") {
            let start = i + 2;
            let end = text[start..]
                .find(|c: char| c == ')' || c.is_whitespace())
                .map_or(text.len(), |n| start + n);
            found.push((start, &text[start..end]));
            i = end;
        } else {
            i += 1;
        }
    }
    found
        .into_iter()
        .filter_map(|(offset, candidate)| {
            path_like(candidate).map(|path| Named {
                line: line_of(offset),
                path: path.to_string(),
            })
        })
        .collect()
}

/// A document's lines, numbered from 1: all of a Markdown file; of a `.rs` file the
/// `//!` lines only, their text after `//!`.
fn document_lines(path: &Path) -> Vec<(usize, String)> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let markdown = path.extension().is_some_and(|extension| extension == "md");
    text.lines()
        .enumerate()
        .filter_map(|(index, line)| {
            if markdown {
                return Some((index + 1, line.to_string()));
            }
            let doc = line.trim_start().strip_prefix("//!")?;
            Some((index + 1, doc.strip_prefix(' ').unwrap_or(doc).to_string()))
        })
        .collect()
}

/// Every document this test reads, each with its context.
fn documents(root: &Path) -> Vec<Context> {
    let relative = |path: &Path| path.strip_prefix(root).unwrap().to_path_buf();
    let mut contexts: Vec<Context> = files_below(root)
        .into_iter()
        .filter(|path| path.extension().is_some_and(|extension| extension == "md"))
        .map(|path| Context::new(root, relative(&path), None))
        .collect();
    for crate_dir in crate_dirs(root) {
        for path in files_below(&crate_dir.join("src")) {
            if path.extension().is_some_and(|extension| extension == "rs") {
                contexts.push(Context::new(
                    root,
                    relative(&path),
                    Some(relative(&crate_dir)),
                ));
            }
        }
    }
    contexts
}

/// The checkout under test, read when the test runs: cargo sets `CARGO_MANIFEST_DIR` for
/// the test process, and a target directory shared by several checkouts can hand this
/// binary (or `gatehouse_tests`) another checkout's compile-time value.
fn repository_root() -> PathBuf {
    let manifest_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    manifest_dir
        .parent()
        .expect("tests/ lives inside the repository")
        .to_path_buf()
}

#[test]
fn every_repository_path_a_document_names_exists() {
    let root = repository_root();
    let contexts = documents(&root);
    assert!(
        contexts
            .iter()
            .any(|c| c.document == Path::new("README.md")),
        "found no README.md under {}",
        root.display()
    );
    let mut dead = Vec::new();
    let mut pending: Vec<(&str, &str)> = PENDING.to_vec();
    for context in &contexts {
        let document = context.document.to_string_lossy().replace('\\', "/");
        for named in context.dead(&document_lines(&context.root.join(&context.document))) {
            let excused = pending
                .iter()
                .position(|&entry| entry == (document.as_str(), named.path.as_str()));
            match excused {
                Some(index) => {
                    pending.remove(index);
                }
                None => dead.push(format!("{document}:{}: {}", named.line, named.path)),
            }
        }
    }
    assert!(
        dead.is_empty(),
        "{} path(s) named in the docs do not exist (point them at the file that holds the \
         thing now, or reword):\n{}",
        dead.len(),
        dead.join("\n")
    );
    let stale: Vec<String> = pending
        .iter()
        .map(|(document, path)| format!("{document}: {path}"))
        .collect();
    assert!(
        stale.is_empty(),
        "PENDING entries that exist now or are no longer named (remove them from PENDING):\n{}",
        stale.join("\n")
    );
}

#[test]
fn the_path_shape_takes_paths_and_leaves_everything_else() {
    for path in [
        "crates/wire/src/error.rs",
        "tests/data/",
        "README.md",
        "../bindings/README.md",
        "openai/gpt-5",
    ] {
        assert_eq!(path_like(path), Some(path), "{path}");
    }
    assert_eq!(
        path_like("bindings/README.md#packages"),
        Some("bindings/README.md")
    );
    for not_a_path in [
        "https://example.com/a.rs",
        "/api/sessions/{id}/interactions",
        "/health",
        "/usr/lib/libc.so",
        "gatehouse_wire::error::GatehouseCode",
        "tests/data/samples/<Type>.<label>.json",
        "crates/*/src/lib.rs",
        "$CARGO_TARGET_DIR/debug",
        "/api/rooms/...",
        "cargo test -p gatehouse-tests",
        "GatehouseCode",
        "0.125.1",
        "#errors",
    ] {
        assert_eq!(path_like(not_a_path), None, "{not_a_path}");
    }
}

/// A throwaway repository with a crate, so the rules are tested apart from the real tree.
fn fake_repository() -> PathBuf {
    let root = std::env::temp_dir().join(format!("gatehouse-doc-paths-{}", std::process::id()));
    let _ = fs::remove_dir_all(&root);
    for file in [
        "README.md",
        "docs/GUIDE.md",
        "crates/demo/src/lib.rs",
        "crates/demo/src/area/rules.rs",
        "crates/demo/tests/it/main.rs",
    ] {
        let path = root.join(file);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, "").unwrap();
    }
    root
}

fn numbered(text: &str) -> Vec<(usize, String)> {
    text.lines()
        .enumerate()
        .map(|(index, line)| (index + 1, line.to_string()))
        .collect()
}

#[test]
fn a_document_s_dead_paths_are_flagged_and_nothing_else() {
    let root = fake_repository();
    let markdown = Context::new(&root, PathBuf::from("docs/GUIDE.md"), None);
    let text = "\
A real file `crates/demo/src/lib.rs`, a moved one `crates/demo/tests/old.rs`, a link
[the readme](../README.md) and a dead one [gone](../docs/GONE.md#top).
The crate's `tests/it/main.rs`; a URL `https://example.com/crates/x.rs`, a route
`/api/sessions/{id}`, a Rust path `gatehouse_wire::routes`, a placeholder
`crates/<name>/src/lib.rs`, another project's `shared/fixtures/agenta` and `agenta/sdk/x.py`,
a model `openai/gpt-5`, build output `crates/demo/target/debug/x.rs`, a path out of
the checkout `../../elsewhere/x.md`.
A span over two lines `crates/demo/src/
gone.rs` is not a path; `docs/MISSING.md`
```
`docs/IN_A_FENCE.md`
```
";
    let dead = markdown.dead(&numbered(text));
    assert_eq!(
        dead,
        vec![
            Named {
                line: 1,
                path: "crates/demo/tests/old.rs".into()
            },
            Named {
                line: 2,
                path: "../docs/GONE.md".into()
            },
            // A crate's file is written from the root in Markdown: prose can say which.
            Named {
                line: 3,
                path: "tests/it/main.rs".into()
            },
            Named {
                line: 9,
                path: "docs/MISSING.md".into()
            },
        ]
    );

    let module_docs = Context::new(
        &root,
        PathBuf::from("crates/demo/src/lib.rs"),
        Some(PathBuf::from("crates/demo")),
    );
    let doc_comment = "\
//! The rules in `area/rules.rs` (or just `rules.rs` beside [`area`]); the tests in
//! `tests/it/main.rs`; the old `area/store.rs` and `store.rs` are gone.
";
    let lines: Vec<(usize, String)> = numbered(doc_comment)
        .into_iter()
        .map(|(number, line)| (number, line.trim_start_matches("//! ").to_string()))
        .collect();
    assert_eq!(
        module_docs.dead(&lines),
        vec![
            Named {
                line: 2,
                path: "area/store.rs".into()
            },
            Named {
                line: 2,
                path: "store.rs".into()
            },
        ]
    );
    let _ = fs::remove_dir_all(&root);
}
