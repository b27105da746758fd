"""Regenerate tests/data/tolerant_json.vectors.json: what Agenta's two parsers make of texts
that strict JSON readers refuse (lone surrogate escapes, duplicate keys, NaN / Infinity, huge
integers, deep nesting), and the runner's configFingerprint of /run bodies holding them.
Deterministic (seeded). Needs CPython 3.11 and Node 20 (`node` on PATH). Usage:
    python3 tests/python/make_tolerant_vectors.py

- "texts": a JSON text; "python" is CPython's json.dumps(json.loads(text)) (or the error
  json.loads raises: its msg and pos, or "RecursionError"); "js" is Node's JSON.parse of it
  (false when it throws) and, when it reads, "canonical" / "sha256": the runner's canonical
  JSON of the value (keys sorted with JavaScript's `<`, JSON.stringify values), written from
  its description in CONTRACT.md A3.
- "run_bodies": a /run request text (A1 keys, with the values above mixed in, non-string
  `is_draft` and `revision.version`), and "fingerprint" / "fingerprint_main": sha256 of the
  canonical JSON of the config shape documented in crates/wire/src/fingerprint.rs (PR head,
  and main without workflowRevision / isDraft), computed by Node on JSON.parse's value.
"""

import inspect
import json
import random
import sys
import subprocess
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "tolerant_json.vectors.json"

# Escapes as they appear in a JSON text: lone high and low surrogates, pairs, reversed pairs.
ESCAPES = [r"\ud800", r"\udbff", r"\udc00", r"\udfff", r"\ud83d\ude00", r"\udc00\ud800",
           r"\ud800\u0041", r"\u00e9", r"\"", r"\\", r"\n", r"\u0000", r"\u001f", r"\/"]
PLAIN = list("abcXYZ 019~-_") + ["é", "中", "😀", "\ue000", "\uffff"]
KEYS = ["a", "b", "model", "1", "10", "2", "-1", "01", "é", "😀", "\ue000"]


def rand_string_text(rng, longest=6):
    parts = []
    for _ in range(rng.randrange(0, longest)):
        if rng.random() < 0.4:
            parts.append(rng.choice(ESCAPES))
        else:
            parts.append(json.dumps(rng.choice(PLAIN), ensure_ascii=rng.random() < 0.3)[1:-1])
    return '"' + "".join(parts) + '"'


def rand_number_text(rng, python_only):
    choices = ["0", "-0", "1", "-1.5", "1e400", "-1E+400", "1.0", "12345678901234567890123",
               "1e-7", "0.00001", "5e-324", "1E16"]
    if python_only:
        choices += ["NaN", "Infinity", "-Infinity"]
    return rng.choice(choices)


def rand_text(rng, depth=0, python_only=False):
    kind = rng.randrange(8 if depth < 4 else 5)
    if kind == 0:
        return rng.choice(["null", "true", "false"])
    if kind in (1, 2):
        return rand_number_text(rng, python_only and rng.random() < 0.3)
    if kind in (3, 4):
        return rand_string_text(rng)
    if kind == 5:
        return "[" + ", ".join(rand_text(rng, depth + 1, python_only) for _ in range(rng.randrange(0, 4))) + "]"
    keys = [rng.choice([rand_string_text(rng, 3), json.dumps(rng.choice(KEYS), ensure_ascii=rng.random() < 0.5)])
            for _ in range(rng.randrange(0, 5))]
    if keys and rng.random() < 0.4:
        keys.append(rng.choice(keys))  # a duplicate key: the last value wins, at the first position
    sep = rng.choice([": ", ":", " : "])
    return "{" + rng.choice([", ", ","]).join(k + sep + rand_text(rng, depth + 1, python_only) for k in keys) + "}"


HAND_TEXTS = [
    '"\\ud800"', '{"\\ud800": 1}', '{"a": 1, "a": 2}', '{"a": 1, "b": 2, "a": 3}',
    '{"\\u0061": 1, "a": 2}', '[NaN]', '[Infinity, -Infinity]', '1e400', '-0', '-0.0',
    '{"\\ud83d\\ude00": 1, "\\ue000": 2, "\\ud800": 3, "\\udfff": 4, "z": 5}',
    '{"2": 1, "1": 2, "b": 3, "a": 4, "1": 5}', '"\\udc00\\ud800"', '"\\ud800\\ud800\\udc00"',
    "9" * 4300, "9" * 4301, "[" * 993 + "]" * 993, "[" * 994 + "]" * 994,
    '{"a":' * 993 + "1" + "}" * 993, '{"a":' * 994 + "1" + "}" * 994,
    "[" * 2048 + "]" * 2048, '{"a": 1,}', "[1,]", "\ufeff{}", "{} x", '"\\x"', '"\\u12"',
    '"a\nb"', "nan", "+1", "01", "1.", "",
]


def rand_object_text(rng):
    text = rand_text(rng, 2)
    return text if text.startswith("{") else '{"v": ' + text + "}"


def rand_run_body(rng):
    """A /run request text: A1's keys in order, values from the generator above."""
    harness = rng.choice(['"codex"', '"pi_core"', '"claude"'])
    parts = [
        f'"harness": {harness}', '"sandbox": "local"', '"sessionId": "s-1"', '"agentsMd": null',
        f'"model": {rand_string_text(rng, 3) if rng.random() < 0.5 else json.dumps("gpt-5")}',
        f'"messages": [{{"role": "user", "content": {rand_string_text(rng)}}}]',
        '"context": null', '"telemetry": null', '"tools": []', '"customTools": []',
        '"toolCallback": {"endpoint": "https://cb.example/t", "authorization": "Bearer t"}',
        '"permissions": {"default": "ask"}',
    ]
    if rng.random() < 0.6:
        parts.append(f'"systemPrompt": {rand_string_text(rng)}')
    if rng.random() < 0.5:
        parts.append(f'"mcpServers": [{{"name": {rand_string_text(rng, 3)}, "connection": {{"type": "http", '
                     f'"url": "https://mcp.example", "credentials": [{{"binding": {{"kind": "header", "name": "Authorization"}}, '
                     f'"value": "v", "usage": "opaque_http"}}]}}, "policy": {rand_object_text(rng)}}}]')
    if rng.random() < 0.4:
        parts.append(f'"modelConnection": {{"provider": "openai", "deployment": "direct", "credentialMode": "env", "credentials": [], '
                     f'"endpoint": {{"baseUrl": {rand_string_text(rng, 3)}}}}}')
    if harness == '"codex"' and rng.random() < 0.5:
        mode = rng.choice(['"agent"', '"read-only"', '"agent-full-access"'])
        parts.append(f'"harnessMode": {mode}')
    workflow = []
    if rng.random() < 0.7:
        version = rng.choice(['"3"', "3", "3.0", "null", "true", '{"n": 3}', rand_string_text(rng, 2)])
        workflow.append(f'"revision": {{"id": {rand_string_text(rng, 3)}, "version": {version}}}')
    if rng.random() < 0.7:
        draft = rng.choice(["true", "false", "null", "0", "1", '"yes"', '""', "[]"])
        workflow.append(f'"is_draft": {draft}')
    if workflow:
        parts.append('"runContext": {"workflow": {' + ", ".join(workflow) + "}}")
    if rng.random() < 0.3:
        dup = rng.choice(parts[:5])
        parts.append(dup.split(":")[0] + ': "gpt-dup"' if dup.startswith('"model"') else dup)
    if rng.random() < 0.3:
        parts.append(f'"extraKey": {rand_text(rng)}')
    return "{" + ", ".join(parts) + "}"


NODE = r"""
const crypto = require("crypto");
const input = JSON.parse(require("fs").readFileSync(0, "utf8"));
function canonical(value) {
  if (value === null || typeof value !== "object") return JSON.stringify(value);
  if (Array.isArray(value)) return "[" + value.map(canonical).join(",") + "]";
  const keys = Object.keys(value).filter((k) => value[k] !== undefined)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(value[k])).join(",") + "}";
}
const sha = (s) => crypto.createHash("sha256").update(s).digest("hex");
// The config shape of crates/wire/src/fingerprint.rs's table, in JavaScript's own terms.
function shape(r, head) {
  const mc = r.modelConnection;
  const creds = (list) => (list ?? []).map((c) => ({ binding: c.binding, usage: c.usage }));
  const modes = ["agent", "read-only", "agent-full-access"];
  const s = {
    harness: r.harness ?? null, sandbox: r.sandbox ?? null, model: r.model ?? null,
    harnessMode: r.harness === "codex" ? (modes.includes(r.harnessMode) ? r.harnessMode : "agent-full-access") : null,
    connection: r.connection ?? null,
    modelConnection: mc ? { provider: mc.provider, deployment: mc.deployment, endpoint: mc.endpoint ?? null,
      credentialMode: mc.credentialMode, environment: mc.environment ?? null, credentials: creds(mc.credentials) } : null,
    modelCapabilities: r.modelCapabilities ?? null, agentsMd: r.agentsMd ?? null,
    systemPrompt: r.systemPrompt ?? null, appendSystemPrompt: r.appendSystemPrompt ?? null,
    skills: r.skills ?? null, customTools: r.customTools ?? null,
    mcpServers: Array.isArray(r.mcpServers) ? r.mcpServers.map((m) => ({ ...m,
      connection: { ...m.connection, credentials: m.connection?.credentials?.map((c) => ({ binding: c.binding, usage: c.usage })) } })) : null,
    toolCallbackEndpoint: r.toolCallback?.endpoint ?? null,
    permissions: r.permissions ?? null, sandboxPermission: r.sandboxPermission ?? null,
    harnessFiles: r.harnessFiles ?? null,
  };
  if (head) {
    const w = r.runContext?.workflow;
    s.workflowRevision = w?.revision ? { id: w.revision.id ?? null, version: w.revision.version ?? null } : null;
    s.isDraft = w?.is_draft ?? null;
  }
  return s;
}
const texts = input.texts.map((text) => {
  let value;
  try { value = JSON.parse(text); } catch (e) { return { js: false }; }
  try { const c = canonical(value); return { js: true, canonical: c, sha256: sha(c) }; }
  catch (e) { return { js: true }; }
});
const bodies = input.bodies.map((text) => {
  const r = JSON.parse(text);
  return { fingerprint: sha(canonical(shape(r, true))), fingerprint_main: sha(canonical(shape(r, false))) };
});
process.stdout.write(JSON.stringify({ texts, bodies }));
"""


def python_reading(text):
    """json.dumps(json.loads(text)) where CPython's recursion limit stops it as it stops
    agenta 0.125.1's stamp_effective_parameters called from a script (measured: 993 nested
    containers read and stamped, 994 not): the limit is moved by the frames this generator
    has above the call, beyond the three of that measurement."""
    frames = len(inspect.stack()) - 3
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + frames)
    try:
        return {"dumps": json.dumps(json.loads(text))}
    except json.JSONDecodeError as err:
        return {"error": err.msg, "pos": err.pos}
    except RecursionError:
        return {"error": "RecursionError"}
    except ValueError as err:  # the integer digit limit
        return {"error": str(err).split(":")[0]}
    finally:
        sys.setrecursionlimit(limit)


def main():
    rng = random.Random(20261206)
    texts = HAND_TEXTS + [rand_text(rng, python_only=rng.random() < 0.3) for _ in range(400)]
    bodies = [rand_run_body(rng) for _ in range(300)]
    node = subprocess.run(
        ["node", "-e", NODE],
        input=json.dumps({"texts": texts, "bodies": bodies}),
        capture_output=True, text=True, check=True,
    )
    js = json.loads(node.stdout)
    document = {
        "_provenance": "generated by tests/python/make_tolerant_vectors.py (seeded): python = "
        "CPython 3.11 json.loads then json.dumps, or its error; js = Node 20 JSON.parse, and the "
        "runner's canonical JSON / configFingerprint shape as CONTRACT.md A3 and "
        "crates/wire/src/fingerprint.rs describe them, computed in JavaScript",
        "texts": [dict(text=t, python=python_reading(t), **j) for t, j in zip(texts, js["texts"])],
        "run_bodies": [dict(text=t, **b) for t, b in zip(bodies, js["bodies"])],
    }
    OUT.write_text(json.dumps(document, indent=1) + "\n")
    print(f"wrote {len(texts)} texts and {len(bodies)} run bodies to {OUT}")


if __name__ == "__main__":
    main()
