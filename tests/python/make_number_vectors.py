"""Regenerate tests/data/numbers.vectors.json: how Agenta's two languages read and write JSON
numbers, and the canonical JSON the runner's fingerprint hashes. Deterministic (seeded).
Needs CPython 3.11 and Node 20 (`node` on PATH). Usage:
    python3 tests/python/make_number_vectors.py

- "numbers": a literal, CPython's json.dumps(json.loads(literal)) ("python"), and Node's
  JSON.stringify(JSON.parse(literal)) ("js"; null where JSON.parse refuses the literal).
- "canonical": a JSON document text, its canonical JSON as the runner's configFingerprint
  builds it (object keys sorted with JavaScript's `<` on strings at every depth, values
  written by JSON.stringify, no whitespace) and the lowercase hex sha256 of that text.
  The canonicalizer below is written from that description (CONTRACT.md A3).
"""

import json
import random
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "numbers.vectors.json"

HAND_LITERALS = [
    "0", "-0", "1", "-1", "7", "1.0", "-0.0", "0.0", "1.50", "100", "100.0",
    "9007199254740991", "9007199254740992", "9007199254740993",
    "18446744073709551615", "18446744073709551616", "-9223372036854775808",
    "-9223372036854775809", "123456789012345678901234567890",
    "340282366920938463463374607431768211456", "1E+16", "1e16", "1e15", "1E-5", "1e-4",
    "0.0001", "0.00001", "1.5e-7", "1.5e-07", "1e21", "1e20", "123e18", "1e-7", "1e-6",
    "0.000001", "1.5e-6", "1e400", "-1e400", "1e-400", "-1e-400", "5e-324",
    "1.7976931348623157e308", "0.1", "0.30000000000000004", "1234567890123456.7",
    "12345678901234567", "2.5E+00", "3.14159", "-2.5e-7", "NaN", "Infinity", "-Infinity",
]

KEY_ALPHABET = list("abcXYZ_09 ") + ["é", "\ue000", "\uffff", "😀", "𝄞", "\u2028", "\x7f"]
STRING_ALPHABET = KEY_ALPHABET + ['"', "\\", "\n", "\t", "\x00", "\x1f", "/"]


def rand_literal(rng):
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice([lit for lit in HAND_LITERALS if lit not in ("NaN", "Infinity", "-Infinity")])
    if kind == 1:
        return str(rng.randrange(-10**30, 10**30))
    if kind == 2:
        return repr(rng.uniform(-1, 1) * 10 ** rng.randrange(-30, 30))
    if kind == 3:
        mantissa = rng.randrange(1, 10**rng.randrange(1, 18))
        return f"{mantissa}{rng.choice(['e', 'E'])}{rng.choice(['', '+', '-'])}{rng.randrange(0, 40)}"
    return f"{rng.randrange(-1000, 1000)}.{rng.randrange(0, 1000):03d}"


def rand_string(rng, alphabet, longest):
    return "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, longest)))


def rand_text(rng, depth=0):
    """A JSON document as TEXT, so number literals keep their exact spelling."""
    kind = rng.randrange(8 if depth < 4 else 6)
    if kind == 0:
        return rng.choice(["null", "true", "false"])
    if kind in (1, 2):
        return rand_literal(rng)
    if kind in (3, 4, 5):
        return json.dumps(rand_string(rng, STRING_ALPHABET, 8), ensure_ascii=rng.random() < 0.5)
    if kind == 6:
        return "[" + ", ".join(rand_text(rng, depth + 1) for _ in range(rng.randrange(0, 4))) + "]"
    keys = [rand_string(rng, KEY_ALPHABET, 4) for _ in range(rng.randrange(0, 5))]
    if keys and rng.random() < 0.2:
        keys.append(keys[0])  # a duplicate key: the last value wins
    items = [json.dumps(k, ensure_ascii=False) + ": " + rand_text(rng, depth + 1) for k in keys]
    return "{" + ", ".join(items) + "}"


NODE = r"""
const crypto = require("crypto");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
function canonical(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  const keys = Object.keys(value).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
}
const numbers = input.numbers.map((lit) => {
  try { return JSON.stringify(JSON.parse(lit)); } catch (e) { return null; }
});
const canon = input.documents.map((text) => {
  const c = canonical(JSON.parse(text));
  return { canonical: c, sha256: crypto.createHash("sha256").update(c).digest("hex") };
});
process.stdout.write(JSON.stringify({ numbers, canon }));
"""


def main():
    rng = random.Random(5689)
    literals = HAND_LITERALS + [rand_literal(rng) for _ in range(150)]
    documents = [rand_text(rng) for _ in range(150)]
    documents = [d if d.startswith("{") else '{"v": ' + d + "}" for d in documents]
    node = subprocess.run(
        ["node", "-e", NODE],
        input=json.dumps({"numbers": literals, "documents": documents}),
        capture_output=True, text=True, check=True,
    )
    js = json.loads(node.stdout)
    numbers = [
        {"literal": lit, "python": json.dumps(json.loads(lit)), "js": js_text}
        for lit, js_text in zip(literals, js["numbers"])
    ]
    canonical = [
        {"document": doc, "canonical": c["canonical"], "sha256": c["sha256"]}
        for doc, c in zip(documents, js["canon"])
    ]
    document = {
        "_provenance": "generated by tests/python/make_number_vectors.py: python = CPython "
        "json.dumps(json.loads(literal)); js = Node JSON.stringify(JSON.parse(literal)); "
        "canonical = keys sorted with JavaScript string order, JSON.stringify values, sha256 hex",
        "numbers": numbers,
        "canonical": canonical,
    }
    OUT.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(numbers)} numbers and {len(canonical)} documents to {OUT}")


if __name__ == "__main__":
    main()
