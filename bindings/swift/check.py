#!/usr/bin/env python3
"""Check the generated Swift bindings as far as a Linux machine without Swift allows.

    python3 bindings/swift/check.py --library target/release/libgatehouse_ffi.so

1. The C header compiles, and a C program that references every function it declares
   links against the library (GCC gets `_Nonnull`/`_Nullable`, Clang-only qualifiers,
   defined away; Clang compiles it as is).
2. The header and the library agree: every function the header declares is exported by
   the library (`nm -D`), and every uniffi entry point the library exports is declared
   (API checksums of methods on enums are exported but never declared by uniffi).
3. The Swift source and the header agree: every FFI function Gatehouse.swift calls is
   declared in the header.
4. The modulemap names the header that is here.
5. Gatehouse.swift parses with tree-sitter-swift (PyPI). Two constructs that are valid
   Swift but that the grammar (tree-sitter-swift 0.7.x) does not know are normalized first,
   keeping line numbers: the `#if swift(>=5.8) @_documentation(visibility: private) #endif`
   attribute blocks (blanked) and the `{ () }` closure (read as `{ Void() }`, the same
   value). Any other parse error fails the check.

What this does NOT check: that the Swift code type-checks, compiles and runs. That is the
Swift package's suite (`swift test` at the repository root, run by bindings/run-tests.sh
where a Swift toolchain exists); this check is what remains on machines without one.
Exit status 0 when every check passes.
"""

from __future__ import annotations

import argparse
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
HEADER = HERE / "Sources" / "gatehouse_ffiFFI" / "gatehouse_ffiFFI.h"
MODULEMAP = HERE / "Sources" / "gatehouse_ffiFFI" / "module.modulemap"
SWIFT = HERE / "Sources" / "Gatehouse" / "Gatehouse.swift"

FUNCTION_NAME = re.compile(r"\b((?:uniffi|ffi)_gatehouse_ffi_[A-Za-z0-9_]+)\s*\(")
DOC_ATTRIBUTE_BLOCK = re.compile(
    r"^[ \t]*#if swift\(>=5\.8\)\n[ \t]*@_documentation\(visibility: private\)\n[ \t]*#endif\n",
    re.MULTILINE,
)


def declared_functions(header_text: str) -> set[str]:
    """Function names the header declares (typedef lines excluded)."""
    names = set()
    for line in header_text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("typedef", "#", "//")):
            continue
        names.update(FUNCTION_NAME.findall(line))
    return names


def exported_functions(library: pathlib.Path) -> set[str]:
    out = subprocess.run(
        ["nm", "-D", "--defined-only", str(library)], check=True, capture_output=True, text=True
    ).stdout
    names = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[1] in ("T", "t"):
            names.add(parts[2])
    return names


def c_compiler() -> str | None:
    return shutil.which("cc") or shutil.which("clang") or shutil.which("gcc")


def nullability_flags(compiler: str) -> list[str]:
    """Clang knows `_Nonnull`/`_Nullable` (the header uses them for Swift); GCC does not,
    so for GCC they are defined away. Nothing else is changed."""
    version = subprocess.run([compiler, "--version"], capture_output=True, text=True).stdout
    return [] if "clang" in version.lower() else ["-D_Nonnull=", "-D_Nullable="]


def check_header_compiles_and_links(library: pathlib.Path, failures: list[str]) -> None:
    """Compile a C file that includes the header and takes the address of every declared
    function, then link it against the library: every declaration must resolve."""
    compiler = c_compiler()
    if compiler is None:
        failures.append("no C compiler (cc/clang/gcc) on PATH")
        return
    declared = sorted(declared_functions(HEADER.read_text()))
    with tempfile.TemporaryDirectory(prefix="gatehouse-swift-check-") as scratch:
        probe = pathlib.Path(scratch) / "probe.c"
        probe.write_text(
            f'#include "{HEADER.name}"\n'
            "typedef void (*any_fn)(void);\n"
            "any_fn gatehouse_probe[] = {\n"
            + "".join(f"    (any_fn){name},\n" for name in declared)
            + "};\n"
            "int main(void) { return gatehouse_probe[0] == 0; }\n"
        )
        flags = ["-std=c11", "-Wall", "-Werror", *nullability_flags(compiler), f"-I{HEADER.parent}"]
        syntax = subprocess.run(
            [compiler, "-fsyntax-only", *flags, str(probe)], capture_output=True, text=True
        )
        if syntax.returncode != 0:
            failures.append(f"{HEADER.name} does not compile with {compiler}:\n{syntax.stderr[:4000]}")
            return
        print(f"ok: {HEADER.name} compiles ({compiler} {' '.join(flags[:-1])})")
        link = subprocess.run(
            [compiler, *flags, str(probe), f"-L{library.parent}", f"-l:{library.name}",
             "-o", str(pathlib.Path(scratch) / "probe")],
            capture_output=True,
            text=True,
        )
        if link.returncode != 0:
            failures.append(f"a program using every header function does not link against {library}:\n{link.stderr[:4000]}")
        else:
            print(f"ok: a C program referencing all {len(declared)} header functions links against {library.name}")


def check_symbols(library: pathlib.Path, failures: list[str]) -> None:
    declared = declared_functions(HEADER.read_text())
    exported = exported_functions(library)
    missing = sorted(declared - exported)
    # Entry points only: uniffi exports API checksums for methods on enums that no binding
    # declares or calls, which is harmless.
    undeclared = sorted(
        n for n in exported - declared if FUNCTION_NAME.fullmatch(n + "(") and "_checksum_" not in n
    )
    if not declared:
        failures.append(f"found no function declarations in {HEADER.name}")
    if missing:
        failures.append(f"{len(missing)} header functions are not exported by {library}: {missing[:10]}")
    if undeclared:
        failures.append(f"{len(undeclared)} exported functions are not in the header (stale?): {undeclared[:10]}")
    if not missing and not undeclared and declared:
        print(f"ok: all {len(declared)} header functions are exported by {library.name}, and every exported entry point is declared")

    called = set(FUNCTION_NAME.findall(SWIFT.read_text()))
    not_declared = sorted(called - declared)
    if not called:
        failures.append(f"{SWIFT.name} calls no FFI function: not a uniffi binding?")
    elif not_declared:
        failures.append(f"{SWIFT.name} calls {len(not_declared)} functions the header lacks: {not_declared[:10]}")
    else:
        print(f"ok: the {len(called)} FFI functions {SWIFT.name} calls are all declared in the header")


def check_modulemap(failures: list[str]) -> None:
    text = MODULEMAP.read_text()
    headers = re.findall(r'header\s+"([^"]+)"', text)
    if headers != [HEADER.name]:
        failures.append(f"{MODULEMAP.name} names headers {headers}, expected [{HEADER.name!r}]")
    elif "module gatehouse_ffiFFI" not in text:
        failures.append(f"{MODULEMAP.name} does not declare module gatehouse_ffiFFI")
    else:
        print(f"ok: {MODULEMAP.name} declares module gatehouse_ffiFFI over {HEADER.name}")


def normalize_for_grammar(source: str) -> str:
    """Blank the constructs tree-sitter-swift 0.7.x misparses, keeping line numbers."""
    source = DOC_ATTRIBUTE_BLOCK.sub(lambda m: "\n" * m.group(0).count("\n"), source)
    return source.replace("{ () }", "{ Void() }")


def check_swift_parses(failures: list[str]) -> None:
    try:
        import tree_sitter
        import tree_sitter_swift
    except ImportError as error:
        failures.append(
            f"tree-sitter-swift is not installed ({error}); "
            "`python3 -m pip install tree-sitter tree-sitter-swift`"
        )
        return
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_swift.language()))
    source = normalize_for_grammar(SWIFT.read_text()).encode()
    tree = parser.parse(source)
    problems = []

    def walk(node) -> None:
        if node.type == "ERROR" or node.is_missing:
            row, column = node.start_point
            snippet = source[node.start_byte : node.end_byte][:80].decode(errors="replace")
            problems.append(f"line {row + 1}:{column + 1}: {'missing ' if node.is_missing else ''}{node.type} {snippet!r}")
            return
        for child in node.children:
            walk(child)

    walk(tree.root_node)
    if problems:
        failures.append(f"{SWIFT.name} does not parse ({len(problems)} errors):\n  " + "\n  ".join(problems[:20]))
    else:
        declarations = sum(1 for c in tree.root_node.children if c.type.endswith("declaration"))
        print(f"ok: {SWIFT.name} parses with tree-sitter-swift ({declarations} top-level declarations)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", required=True, type=pathlib.Path, help="the built libgatehouse_ffi")
    args = parser.parse_args()
    if not args.library.is_file():
        print(f"FAIL: {args.library} does not exist: build gatehouse-ffi first", file=sys.stderr)
        return 1

    failures: list[str] = []
    check_header_compiles_and_links(args.library, failures)
    check_symbols(args.library, failures)
    check_modulemap(failures)
    check_swift_parses(failures)
    for failure in failures:
        print(f"FAIL: {failure}", file=sys.stderr)
    print("swift checks: " + ("FAILED" if failures else "passed (compiling and running is `swift test`'s part)"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
