//! No import circle inside any crate: the modules of every crate's `src/` import one way.
//!
//! The graph is at file granularity: `a.rs` and `a/mod.rs` are module `a`, `a/b.rs` is
//! `a::b`, `lib.rs` and `main.rs` the crate root; an inline `mod x { .. }` belongs to its
//! file. Its edges are the paths a file names: `use` trees and paths in code starting with
//! `crate::`, `self::`, `super::` (or a name a `use` brought in for a module), each resolved
//! to the deepest module that is a file. Test modules count (`#[cfg(test)]` code is read
//! like the rest); comments and string literals do not. A path between a module and its own
//! ancestor or descendant is no circle (a parent declares and re-exports its children), so
//! those edges are left out; a strongly connected component of what remains is a circle.
//!
//! Only `crates/*/src` is read: `tests/` holds one crate root per file (`support.rs`, each
//! test), which have no module tree to form a circle in.

// Test code: an unreadable source file should fail the test loudly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Circles known and scheduled to go, each the exact set of files of one circle (paths from
/// the workspace root). The test fails when one is no longer found, so that its entry goes
/// with the fix.
const KNOWN_CIRCLES: &[&[&str]] = &[];

#[test]
fn no_crate_has_an_import_circle_but_the_known_ones() {
    let root = gatehouse_tests::workspace_root();
    let mut crate_dirs: Vec<_> = std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("src"))
        .filter(|src| src.is_dir())
        .collect();
    crate_dirs.sort();
    assert!(!crate_dirs.is_empty(), "no crates/*/src under {root:?}");

    let mut found = Vec::new();
    for src in &crate_dirs {
        let mut files = Vec::new();
        read_sources(&root, src, src, &mut files);
        found.extend(find_circles(&files));
    }

    let failures = judge(&found, KNOWN_CIRCLES);
    assert!(
        failures.is_empty(),
        "modules must import one way (a circle: move the shared piece to the module both \
         can use, or the test next to what it tests):\n\n{}",
        failures.join("\n\n")
    );
}

/// What is wrong with the circles `found`, given the `known` ones: every circle not known,
/// and every known one no longer found (its entry must go with the fix).
fn judge(found: &[Circle], known: &[&[&str]]) -> Vec<String> {
    let file_set = |circle: &Circle| -> BTreeSet<String> { circle.files.iter().cloned().collect() };
    let known: Vec<BTreeSet<String>> = known
        .iter()
        .map(|files| files.iter().map(|file| file.to_string()).collect())
        .collect();
    let mut failures = Vec::new();
    for circle in found {
        if !known.contains(&file_set(circle)) {
            failures.push(format!("an import circle:\n{}", circle.describe()));
        }
    }
    for files in &known {
        if !found.iter().any(|circle| file_set(circle) == *files) {
            failures.push(format!(
                "the known circle {files:?} is gone (or changed its files): remove it from \
                 KNOWN_CIRCLES"
            ));
        }
    }
    failures
}

/// One source file: where it is (for messages), its module, its text.
struct SourceFile {
    display: String,
    module: ModulePath,
    text: String,
}

/// A module's path from its crate root (`[]` is the root).
type ModulePath = Vec<String>;

/// Every `.rs` file under `dir` (inside the crate's `src`), with its module.
fn read_sources(root: &Path, src: &Path, dir: &Path, files: &mut Vec<SourceFile>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let relative = path.strip_prefix(src).unwrap();
        if path.is_dir() {
            // Each file of `src/bin` is its own crate root, outside this module tree.
            if relative != Path::new("bin") {
                read_sources(root, src, &path, files);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = relative.to_str().unwrap().replace('\\', "/");
            files.push(SourceFile {
                display: path
                    .strip_prefix(root)
                    .unwrap()
                    .to_str()
                    .unwrap()
                    .replace('\\', "/"),
                module: module_of(&relative),
                text: std::fs::read_to_string(&path).unwrap(),
            });
        }
    }
}

/// The module of a file from its path inside `src` (`a/b.rs` and `a/b/mod.rs` are `a::b`).
fn module_of(relative: &str) -> ModulePath {
    if relative == "lib.rs" || relative == "main.rs" {
        return Vec::new();
    }
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_string)
        .collect();
    if parts.last().is_some_and(|last| last == "mod") {
        parts.pop();
    }
    parts
}

/// A circle: the files of one strongly connected component and the imports between them.
#[derive(Debug)]
struct Circle {
    files: Vec<String>,
    /// `file:line: path -> file`, one per import inside the circle.
    imports: Vec<String>,
}

impl Circle {
    fn describe(&self) -> String {
        format!(
            "  files: {}\n  imports:\n{}",
            self.files.join(", "),
            self.imports
                .iter()
                .map(|import| format!("    {import}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    }
}

/// One import of another module, where it is written.
struct Import {
    from: ModulePath,
    to: ModulePath,
    line: usize,
    path: String,
}

/// The circles among the modules of one crate's files.
fn find_circles(files: &[SourceFile]) -> Vec<Circle> {
    let modules: BTreeSet<ModulePath> = files
        .iter()
        .map(|file| file.module.clone())
        .chain([Vec::new()])
        .collect();
    let mut file_of: BTreeMap<&ModulePath, &str> = BTreeMap::new();
    for file in files {
        // A crate with both `lib.rs` and `main.rs`: the root is named once, and no edge
        // touches the root anyway (it is everyone's ancestor).
        file_of.entry(&file.module).or_insert(&file.display);
    }
    let mut imports: Vec<(&str, Import)> = Vec::new();
    for file in files {
        for import in imports_of(&file.module, &file.text, &modules) {
            imports.push((&file.display, import));
        }
    }
    let mut edges: BTreeMap<&ModulePath, BTreeSet<&ModulePath>> = BTreeMap::new();
    for (_, import) in &imports {
        edges.entry(&import.from).or_default().insert(&import.to);
    }

    let mut circles = Vec::new();
    for component in strongly_connected(&modules, &edges) {
        if component.len() < 2 {
            continue;
        }
        let members: BTreeSet<&ModulePath> = component.iter().copied().collect();
        let mut files: Vec<String> = members
            .iter()
            .map(|module| file_of.get(module).copied().unwrap_or("?").to_string())
            .collect();
        files.sort();
        let mut inside: Vec<&(&str, Import)> = imports
            .iter()
            .filter(|(_, import)| members.contains(&import.from) && members.contains(&import.to))
            .collect();
        inside.sort_by_key(|(display, import)| (*display, import.line, &import.path));
        let mut lines: Vec<String> = inside
            .iter()
            .map(|(display, import)| {
                format!(
                    "{display}:{}: {} -> {}",
                    import.line,
                    import.path,
                    file_of.get(&import.to).copied().unwrap_or("?")
                )
            })
            .collect();
        lines.dedup();
        circles.push(Circle {
            files,
            imports: lines,
        });
    }
    circles
}

/// Tarjan's strongly connected components.
fn strongly_connected<'m>(
    modules: &'m BTreeSet<ModulePath>,
    edges: &BTreeMap<&'m ModulePath, BTreeSet<&'m ModulePath>>,
) -> Vec<Vec<&'m ModulePath>> {
    struct Walk<'m, 'e> {
        edges: &'e BTreeMap<&'m ModulePath, BTreeSet<&'m ModulePath>>,
        index: BTreeMap<&'m ModulePath, usize>,
        low: BTreeMap<&'m ModulePath, usize>,
        stack: Vec<&'m ModulePath>,
        on_stack: BTreeSet<&'m ModulePath>,
        components: Vec<Vec<&'m ModulePath>>,
    }
    impl<'m> Walk<'m, '_> {
        fn visit(&mut self, module: &'m ModulePath) {
            let at = self.index.len();
            self.index.insert(module, at);
            self.low.insert(module, at);
            self.stack.push(module);
            self.on_stack.insert(module);
            let targets: Vec<&'m ModulePath> = self
                .edges
                .get(module)
                .map(|targets| targets.iter().copied().collect())
                .unwrap_or_default();
            for target in targets {
                if !self.index.contains_key(target) {
                    self.visit(target);
                    let low = self.low[module].min(self.low[target]);
                    self.low.insert(module, low);
                } else if self.on_stack.contains(target) {
                    let low = self.low[module].min(self.index[target]);
                    self.low.insert(module, low);
                }
            }
            if self.low[module] == self.index[module] {
                let mut component = Vec::new();
                while let Some(member) = self.stack.pop() {
                    self.on_stack.remove(member);
                    component.push(member);
                    if member == module {
                        break;
                    }
                }
                self.components.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        components: Vec::new(),
    };
    for module in modules {
        if !walk.index.contains_key(module) {
            walk.visit(module);
        }
    }
    walk.components
}

// ---------------------------------------------------------------------------------------
// Reading a file's imports
// ---------------------------------------------------------------------------------------

/// A token of Rust source, comments, literals and lifetimes left out.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    /// An identifier or keyword (`$crate` reads as `crate`; another `$name` keeps its `$`).
    Ident(String),
    /// `::`.
    PathSep,
    /// Any other punctuation character.
    Punct(char),
}

/// A token and the line it is on (from 1).
struct Lexed {
    token: Token,
    line: usize,
}

/// The tokens of `text`: comments (nested block comments too), string, raw-string, byte and
/// character literals, numbers and lifetimes are skipped.
fn lex(text: &str) -> Vec<Lexed> {
    let chars: Vec<char> = text.chars().collect();
    let at = |i: usize| chars.get(i).copied().unwrap_or('\0');
    let is_ident_start = |c: char| c == '_' || c.is_alphabetic();
    let is_ident_char = |c: char| c == '_' || c.is_alphanumeric();
    let mut tokens = Vec::new();
    let mut line = 1;
    let mut i = 0;
    // Skips a quoted literal whose opening quote is at `i`, escapes honoured.
    let skip_quoted = |i: &mut usize, line: &mut usize| {
        *i += 1;
        while *i < chars.len() {
            match chars[*i] {
                '\\' => {
                    if at(*i + 1) == '\n' {
                        *line += 1;
                    }
                    *i += 2;
                }
                '"' => {
                    *i += 1;
                    return;
                }
                c => {
                    if c == '\n' {
                        *line += 1;
                    }
                    *i += 1;
                }
            }
        }
    };
    while i < chars.len() {
        let c = chars[i];
        // A raw string: `r"..."`, `r#"..."#`, with a `b` or `c` prefix too.
        let raw_start = match (c, at(i + 1)) {
            ('r', _) => Some(i + 1),
            ('b' | 'c', 'r') => Some(i + 2),
            _ => None,
        };
        if let Some(after_r) = raw_start.filter(|_| i == 0 || !is_ident_char(chars[i - 1])) {
            let hashes = (after_r..).take_while(|&j| at(j) == '#').count();
            if at(after_r + hashes) == '"' {
                let mut j = after_r + hashes + 1;
                while j < chars.len() {
                    if chars[j] == '"' && (1..=hashes).all(|k| at(j + k) == '#') {
                        break;
                    }
                    if chars[j] == '\n' {
                        line += 1;
                    }
                    j += 1;
                }
                i = j + 1 + hashes;
                continue;
            }
            if c == 'r' && hashes == 1 && is_ident_start(at(after_r + 1)) {
                // A raw identifier, `r#name`.
                let start = after_r + 1;
                let end = (start..).find(|&j| !is_ident_char(at(j))).unwrap();
                tokens.push(Lexed {
                    token: Token::Ident(chars[start..end].iter().collect()),
                    line,
                });
                i = end;
                continue;
            }
        }
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if at(i + 1) == '/' => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if at(i + 1) == '*' => {
                let mut depth = 1;
                i += 2;
                while i < chars.len() && depth > 0 {
                    if chars[i] == '/' && at(i + 1) == '*' {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && at(i + 1) == '/' {
                        depth -= 1;
                        i += 2;
                    } else {
                        if chars[i] == '\n' {
                            line += 1;
                        }
                        i += 1;
                    }
                }
            }
            '"' => skip_quoted(&mut i, &mut line),
            'b' | 'c' if at(i + 1) == '"' => {
                i += 1;
                skip_quoted(&mut i, &mut line);
            }
            'b' if at(i + 1) == '\'' => {
                // A byte literal: the character literal after the `b`.
                i += 1;
                skip_char_or_lifetime(&chars, &mut i);
            }
            '\'' => skip_char_or_lifetime(&chars, &mut i),
            '$' if is_ident_start(at(i + 1)) => {
                let end = (i + 1..).find(|&j| !is_ident_char(at(j))).unwrap();
                let name: String = chars[i + 1..end].iter().collect();
                let name = if name == "crate" {
                    name
                } else {
                    format!("${name}")
                };
                tokens.push(Lexed {
                    token: Token::Ident(name),
                    line,
                });
                i = end;
            }
            c if is_ident_start(c) => {
                let end = (i..).find(|&j| !is_ident_char(at(j))).unwrap();
                tokens.push(Lexed {
                    token: Token::Ident(chars[i..end].iter().collect()),
                    line,
                });
                i = end;
            }
            c if c.is_ascii_digit() => {
                // A number, with its suffix and fraction (`1.5e3f64`), not a range's dots.
                i += 1;
                while is_ident_char(at(i)) || (at(i) == '.' && at(i + 1).is_ascii_digit()) {
                    i += 1;
                }
            }
            ':' if at(i + 1) == ':' => {
                tokens.push(Lexed {
                    token: Token::PathSep,
                    line,
                });
                i += 2;
            }
            c => {
                tokens.push(Lexed {
                    token: Token::Punct(c),
                    line,
                });
                i += 1;
            }
        }
    }
    tokens
}

/// Skips a character literal (`'a'`, `'\n'`, `'\u{1F600}'`) or a lifetime (`'a`) at `i`.
fn skip_char_or_lifetime(chars: &[char], i: &mut usize) {
    let at = |j: usize| chars.get(j).copied().unwrap_or('\0');
    if at(*i + 1) == '\\' {
        *i += 3;
        while *i < chars.len() && chars[*i] != '\'' {
            *i += 1;
        }
        *i += 1;
    } else if at(*i + 2) == '\'' {
        *i += 3;
    } else {
        *i += 1;
        while at(*i) == '_' || at(*i).is_alphanumeric() {
            *i += 1;
        }
    }
}

/// What one file imports from other modules of its crate (edges to itself, its ancestors
/// and its descendants left out).
fn imports_of(file_module: &ModulePath, text: &str, modules: &BTreeSet<ModulePath>) -> Vec<Import> {
    let tokens = lex(text);
    let ident = |i: usize| match tokens.get(i).map(|lexed| &lexed.token) {
        Some(Token::Ident(name)) => Some(name.as_str()),
        _ => None,
    };
    let is = |i: usize, token: &Token| tokens.get(i).is_some_and(|lexed| lexed.token == *token);
    let mut reader = ImportReader {
        file_module,
        modules,
        aliases: BTreeMap::new(),
        imports: Vec::new(),
    };
    // Inline modules (`mod tests { .. }`) open at a brace depth.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0;
    let mut pending_inline: Option<String> = None;
    let mut i = 0;
    while i < tokens.len() {
        let current: ModulePath = file_module
            .iter()
            .cloned()
            .chain(inline.iter().map(|(name, _)| name.clone()))
            .collect();
        let after_path_sep = i > 0 && is(i - 1, &Token::PathSep);
        match &tokens[i].token {
            Token::Punct('{') => {
                depth += 1;
                if let Some(name) = pending_inline.take() {
                    inline.push((name, depth));
                }
                i += 1;
            }
            Token::Punct('}') => {
                if inline.last().is_some_and(|(_, at)| *at == depth) {
                    inline.pop();
                }
                depth -= 1;
                i += 1;
            }
            Token::Punct(';') => {
                pending_inline = None;
                i += 1;
            }
            Token::Ident(word) if word == "mod" => {
                pending_inline = ident(i + 1).map(str::to_string);
                i += 2;
            }
            // `use` declarations (not the `use<'a>` of precise capturing).
            Token::Ident(word) if word == "use" && !is(i + 1, &Token::Punct('<')) => {
                let mut leaves = Vec::new();
                i += 1;
                read_use_tree(&tokens, &mut i, Vec::new(), &mut leaves);
                for leaf in leaves {
                    reader.use_leaf(&current, leaf);
                }
            }
            Token::Ident(word)
                if !after_path_sep
                    && is(i + 1, &Token::PathSep)
                    && (matches!(word.as_str(), "crate" | "self" | "super")
                        || reader.aliases.contains_key(word)) =>
            {
                let mut segments = vec![word.clone()];
                let mut line = tokens[i].line;
                i += 1;
                while is(i, &Token::PathSep) {
                    match ident(i + 1) {
                        Some(name) => {
                            segments.push(name.to_string());
                            line = tokens[i + 1].line;
                            i += 2;
                        }
                        None => break,
                    }
                }
                reader.path(&current, &segments, line);
            }
            _ => i += 1,
        }
    }
    reader.imports
}

/// One leaf of a `use` tree: its full path, its `as` name, its line; a glob's path ends
/// with `*`.
struct UseLeaf {
    segments: Vec<String>,
    rename: Option<String>,
    line: usize,
}

/// Reads a use tree at `i` (`a::b::{c, d::e as f, self, *}`), appending its leaves.
fn read_use_tree(
    tokens: &[Lexed],
    i: &mut usize,
    mut prefix: Vec<String>,
    leaves: &mut Vec<UseLeaf>,
) {
    while let Some(lexed) = tokens.get(*i) {
        match &lexed.token {
            // A leading `::` names an external crate.
            Token::PathSep => {
                prefix.push("::".to_string());
                *i += 1;
            }
            Token::Ident(name) => {
                *i += 1;
                if tokens
                    .get(*i)
                    .is_some_and(|next| next.token == Token::PathSep)
                {
                    prefix.push(name.clone());
                    *i += 1;
                    continue;
                }
                let mut rename = None;
                let next = tokens.get(*i).map(|t| &t.token);
                if matches!(next, Some(Token::Ident(word)) if word == "as") {
                    if let Some(Token::Ident(alias)) = tokens.get(*i + 1).map(|t| &t.token) {
                        rename = Some(alias.clone());
                    }
                    *i += 2;
                }
                let mut segments = prefix;
                if name != "self" {
                    segments.push(name.clone());
                }
                leaves.push(UseLeaf {
                    segments,
                    rename,
                    line: lexed.line,
                });
                return;
            }
            Token::Punct('*') => {
                *i += 1;
                prefix.push("*".to_string());
                leaves.push(UseLeaf {
                    segments: prefix,
                    rename: None,
                    line: lexed.line,
                });
                return;
            }
            Token::Punct('{') => {
                *i += 1;
                while let Some(next) = tokens.get(*i) {
                    match next.token {
                        Token::Punct('}') => {
                            *i += 1;
                            return;
                        }
                        Token::Punct(',') => *i += 1,
                        _ => {
                            let before = *i;
                            read_use_tree(tokens, i, prefix.clone(), leaves);
                            if *i == before {
                                *i += 1;
                            }
                        }
                    }
                }
                return;
            }
            // The end of the declaration (`;`), or something this reader does not know.
            _ => return,
        }
    }
}

/// Resolves the paths of one file to imports.
struct ImportReader<'a> {
    file_module: &'a ModulePath,
    modules: &'a BTreeSet<ModulePath>,
    /// Names a `use` gave a module (`use crate::redact;` makes `redact::` mean it).
    aliases: BTreeMap<String, ModulePath>,
    imports: Vec<Import>,
}

impl ImportReader<'_> {
    /// The absolute path `segments` name from the module `current`; `None` for an external
    /// or unknown path.
    fn absolute(&self, current: &ModulePath, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        let mut path = match first.as_str() {
            "crate" => Vec::new(),
            "self" => current.clone(),
            "super" => current[..current.len().checked_sub(1)?].to_vec(),
            name => {
                if let Some(module) = self.aliases.get(name) {
                    module.clone()
                } else {
                    // A child module named without `self::` (2018 paths).
                    let mut child = current.clone();
                    child.push(name.to_string());
                    if !self.modules.contains(&child) {
                        return None;
                    }
                    child
                }
            }
        };
        for segment in rest {
            if segment == "super" {
                path.pop()?;
            } else if segment != "*" {
                path.push(segment.clone());
            }
        }
        Some(path)
    }

    /// The deepest module of `path` that is a file.
    fn file_module_of(&self, path: &[String]) -> ModulePath {
        (0..=path.len())
            .rev()
            .map(|len| path[..len].to_vec())
            .find(|prefix| self.modules.contains(prefix))
            .unwrap_or_default()
    }

    fn use_leaf(&mut self, current: &ModulePath, leaf: UseLeaf) {
        let Some(path) = self.absolute(current, &leaf.segments) else {
            return;
        };
        let module = self.file_module_of(&path);
        let is_glob = leaf.segments.last().is_some_and(|last| last == "*");
        if !is_glob && module == path {
            if let Some(name) = leaf.rename.clone().or_else(|| path.last().cloned()) {
                self.aliases.insert(name, module.clone());
            }
        }
        self.record(module, leaf.segments.join("::"), leaf.line);
    }

    fn path(&mut self, current: &ModulePath, segments: &[String], line: usize) {
        if let Some(path) = self.absolute(current, segments) {
            let module = self.file_module_of(&path);
            self.record(module, segments.join("::"), line);
        }
    }

    fn record(&mut self, to: ModulePath, path: String, line: usize) {
        let from = self.file_module;
        let related = to.starts_with(from) || from.starts_with(&to);
        if !related {
            self.imports.push(Import {
                from: from.clone(),
                to,
                line,
                path,
            });
        }
    }
}

/// The checker itself, on made-up crates: it must find what it is for.
mod checker {
    use super::*;

    fn crate_of(files: &[(&str, &str)]) -> Vec<SourceFile> {
        files
            .iter()
            .map(|(path, text)| SourceFile {
                display: path.to_string(),
                module: module_of(path),
                text: text.to_string(),
            })
            .collect()
    }

    fn circle_files(files: &[(&str, &str)]) -> Vec<Vec<String>> {
        find_circles(&crate_of(files))
            .into_iter()
            .map(|circle| circle.files)
            .collect()
    }

    #[test]
    fn a_circle_through_a_test_module_is_found_with_its_lines() {
        let mut files = vec![
            ("lib.rs", "pub mod a;\npub mod b;\npub mod c;\n"),
            ("a.rs", "use crate::b::leaf::Thing;\npub struct Other;\n"),
            ("b/mod.rs", "pub mod leaf;\n"),
            ("b/leaf.rs", "pub struct Thing(crate::c::Deep);\n"),
            ("c/mod.rs", "mod inner;\npub use inner::Deep;\n"),
            ("c/inner.rs", "pub struct Deep;\n"),
        ];
        assert!(circle_files(&files).is_empty());

        // c's test module imports a, a imports b's child, which imports c: one circle of
        // three files (test code counts, and so does a nested file).
        files[4].1 = "mod inner;\npub use inner::Deep;\n\
                      #[cfg(test)]\nmod tests {\n    use super::super::a::Other;\n}\n";
        let circles = find_circles(&crate_of(&files));
        assert_eq!(circles.len(), 1, "{circles:?}");
        assert_eq!(circles[0].files, ["a.rs", "b/leaf.rs", "c/mod.rs"]);
        assert_eq!(
            circles[0].imports,
            [
                "a.rs:1: crate::b::leaf::Thing -> b/leaf.rs",
                "b/leaf.rs:1: crate::c::Deep -> c/mod.rs",
                "c/mod.rs:5: super::super::a::Other -> a.rs",
            ]
        );
        let described = circles[0].describe();
        assert!(
            described.contains("files: a.rs, b/leaf.rs, c/mod.rs"),
            "{described}"
        );
    }

    #[test]
    fn a_known_circle_passes_and_fails_once_it_is_gone() {
        let circle = &[
            ("jobs.rs", "use super::turns::insert;\n"),
            ("turns.rs", "use super::jobs::lease;\n"),
        ];
        let found = find_circles(&crate_of(circle));
        assert!(judge(&found, &[&["jobs.rs", "turns.rs"]]).is_empty());
        let unknown = judge(&found, &[]);
        assert_eq!(unknown.len(), 1);
        assert!(
            unknown[0].contains("files: jobs.rs, turns.rs"),
            "{unknown:?}"
        );
        assert!(
            unknown[0].contains("jobs.rs:1: super::turns::insert -> turns.rs"),
            "{unknown:?}"
        );

        let fixed = find_circles(&crate_of(&[
            ("jobs.rs", "use super::turns::insert;\n"),
            ("turns.rs", "pub fn insert() {}\n"),
        ]));
        let gone = judge(&fixed, &[&["jobs.rs", "turns.rs"]]);
        assert_eq!(gone.len(), 1);
        assert!(gone[0].contains("remove it from KNOWN_CIRCLES"), "{gone:?}");
    }

    #[test]
    fn two_siblings_importing_each_other_are_a_circle() {
        let found = circle_files(&[
            ("lib.rs", "mod value;\nmod write;\n"),
            ("value.rs", "use super::write::escape;\npub enum Value {}\n"),
            ("write.rs", "use super::value::Value;\npub fn escape() {}\n"),
        ]);
        assert_eq!(found, [["value.rs", "write.rs"]]);
        let circles = find_circles(&crate_of(&[
            ("pyjson/value.rs", "use super::write::escape;\n"),
            ("pyjson/write.rs", "use crate::pyjson::value::Value;\n"),
        ]));
        assert_eq!(
            circles[0].imports,
            [
                "pyjson/value.rs:1: super::write::escape -> pyjson/write.rs",
                "pyjson/write.rs:1: crate::pyjson::value::Value -> pyjson/value.rs",
            ]
        );
    }

    #[test]
    fn a_parent_and_its_children_are_no_circle() {
        let found = circle_files(&[
            ("lib.rs", "pub mod run;\nuse run::Request;\n"),
            (
                "run/mod.rs",
                "mod request;\npub use self::request::Request;\n\
                 fn f() { crate::run::request::g() }\n",
            ),
            ("run/request.rs", "use super::Model;\nuse crate::Thing;\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn comments_strings_and_external_paths_are_no_import() {
        let found = circle_files(&[
            (
                "a.rs",
                "// use crate::b;\n/* crate::b::x /* nested */ crate::b::y */\n\
                 #[serde(with = \"crate::b::z\")]\nconst S: &str = r#\"crate::b::w\"#;\n\
                 const C: char = '\"'; fn f<'a>(_: &'a str) {}\nuse ::b::x;\nuse other::b;\n",
            ),
            ("b.rs", "use crate::a::S;\n"),
        ]);
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_module_named_through_its_use_counts_and_as_names_too() {
        let found = circle_files(&[
            ("a.rs", "use crate::b;\nfn f() { b::g() }\n"),
            ("b/mod.rs", "pub fn g() {}\n"),
            (
                "b/deep.rs",
                "use crate::{c as renamed};\nfn h() { renamed::k() }\n",
            ),
            ("c.rs", "fn k() { super::a::f() }\n"),
        ]);
        // a -> b is a dead end (b's own code imports nothing), so no circle yet ...
        assert!(found.is_empty(), "{found:?}");
        // ... but through b::deep it is one.
        let found = circle_files(&[
            ("a.rs", "use crate::b;\nfn f() { b::deep::h() }\n"),
            ("b/mod.rs", "pub mod deep;\n"),
            (
                "b/deep.rs",
                "use crate::{c as renamed};\nfn h() { renamed::k() }\n",
            ),
            ("c.rs", "fn k() { super::a::f() }\n"),
        ]);
        assert_eq!(found, [["a.rs", "b/deep.rs", "c.rs"]]);
    }
}
