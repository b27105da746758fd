"""Prints one language's quick start from the repository's README.md: the fenced block
between `<!-- quickstart:LANG -->` and `<!-- /quickstart:LANG -->`, so the program a test
compiles or runs is exactly the text a reader pastes.

    python3 bindings/quickstart.py kotlin|swift|python [README.md]

Standard library only; exits 1 when the markers or the fence are missing.
"""

from __future__ import annotations

import pathlib
import sys


def quickstart(text: str, language: str) -> str:
    begin, end = f"<!-- quickstart:{language} -->", f"<!-- /quickstart:{language} -->"
    if text.count(begin) != 1 or text.count(end) != 1:
        raise ValueError(f"README.md needs exactly one {begin} ... {end}")
    lines = text.split(begin, 1)[1].split(end, 1)[0].strip().split("\n")
    if lines[0].strip() != f"```{language}" or lines[-1].strip() != "```":
        raise ValueError(f"the {language} quick start is not one ```{language} block")
    return "\n".join(lines[1:-1]) + "\n"


def main() -> int:
    language = sys.argv[1]
    readme = pathlib.Path(sys.argv[2]) if len(sys.argv) > 2 else pathlib.Path(__file__).resolve().parents[1] / "README.md"
    try:
        sys.stdout.write(quickstart(readme.read_text(encoding="utf-8"), language))
    except ValueError as error:
        print(error, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
