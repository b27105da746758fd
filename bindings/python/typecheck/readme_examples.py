"""Writes every ```python block of the given Markdown files to its own module, for mypy and
pyright: `bindings/run-tests.sh` checks them against the installed package like
`consumer.py`, so a README example a type checker refuses fails CI.

    python3 readme_examples.py OUT_DIR README.md [MORE.md ...]

Each block must be a whole program (its imports included). The module is named after the
file and the block's first line (`bindings_README_md_line312.py`) and starts with
`# pyright: strict` and a line naming its source, so a reported line N is line N - 2 of the
block. Standard library only.
"""

from __future__ import annotations

import pathlib
import re
import sys


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(the block's first line number, its code) for each ```python block."""
    blocks = []
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```python":
            start = index + 1
            end = start
            while end < len(lines) and lines[end].strip() != "```":
                end += 1
            if end == len(lines):
                raise SystemExit(f"line {index + 1}: a ```python block is never closed")
            blocks.append((start + 1, "\n".join(lines[start:end]) + "\n"))
            index = end
        index += 1
    return blocks


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: readme_examples.py OUT_DIR README.md [MORE.md ...]", file=sys.stderr)
        return 2
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    written = 0
    for name in sys.argv[2:]:
        path = pathlib.Path(name)
        stem = re.sub(r"[^A-Za-z0-9]", "_", name.lstrip("./"))
        for line, code in python_blocks(path.read_text(encoding="utf-8")):
            module = out / f"{stem}_line{line}.py"
            module.write_text(f"# pyright: strict\n# {name}, the block from line {line}\n{code}", encoding="utf-8")
            print(f"{module.name}: {name} line {line}")
            written += 1
    if written == 0:
        print("readme_examples.py: no ```python block found", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
