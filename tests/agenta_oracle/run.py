"""Upstream conformance against the oracle itself: Agenta's SDK (agenta==0.125.1 from PyPI)
and Gatehouse, on thousands of inputs this script generates (seeded), each compared.

`stamp_effective_parameters` (agenta/sdk/agents/utils/effective_config.py, the function
that builds the `effectiveParameters` stamp) is called on every generated config, with its
cap set to 65536 (Agenta main) and to 262144 (0.125.1), after Python's `json.loads` of the
config's text, exactly as the SDK receives it. Gatehouse stamps the same texts in one process,
`gatehouse wire stamp --batch --agenta-compatible --max-bytes CAP` (JSON Lines in and out:
`gatehouse_wire::effective::stamp_python_text`). Compared on every input: stamped or not,
the exact `json.dumps` text Agenta measures, the measured size (also of a config dropped over
the cap, as Agenta's warning reports it), and the labels of what the redaction stripped (as
Agenta's warning reports them; the warning is read by replacing the module's logger with a
recorder, the function itself runs unchanged).

`request_to_wire` (agenta/sdk/agents/utils/wire.py, the `/run` body the SDK sends) is called
on generated turns (every harness, sandbox, messages in any script, a session or none, a
config to stamp or none). Every body it returns must validate against Gatehouse's
`RunRequest` schema (`gatehouse wire validate --type RunRequest --batch`), and its
`effectiveParameters` must be exactly Gatehouse's stamp of the config the turn was given at
the SDK's cap, present exactly on a session run with something to stamp (A2).

Interaction rows (CONTRACT.md A4) are rendered by FastAPI and pydantic at the versions the SDK
pins (0.139.2 and 2.14.4, those of Agenta's API), through a handler declared with the row
model as Agenta's handlers are (`tests/python/make_agenta_api_row_vectors.py`: the model and
the row generator), and by `gatehouse wire row --batch` from the same row as Python's
`json.dumps` writes it: byte for byte equal, numbers spelled as pydantic spells them.

Nothing Python's `json.loads` accepts is excluded from the stamp's configs: Gatehouse's stamp
reads a config's text as Python does (`gatehouse_wire::pyjson`). Nesting stays shallow (under
10 levels): how deep Python reads, and where Gatehouse stops, is issue 24, item 3. The turns
given to `request_to_wire` hold standard JSON only (no NaN, no lone surrogate): a `/run` body
with either is left to issue 24, item 2 (the tolerant typed reader).

The configs cover what Python's `json` accepts and Gatehouse's stamp must read as Python does:
integers of any size, `-0`, every float spelling, NaN and the infinities, lone surrogate
escapes, duplicate keys (the last wins), escapes of every kind, credential keys in any letter
case where Agenta's rule looks and where it does not, non-object entries, configs padded
to exactly the cap and one byte over it, and configs holding one random double each (any bit
pattern: the float spelling, halfway ties between two shortest forms included).

Usage (cargo xtask test runs it in its own environment, see crates/xtask/src/test.rs):
    python tests/agenta_oracle/run.py --bin target/debug/gatehouse [--count N] [--doubles N] [--requests N] [--rows N] [--seed S]
Prints one line per comparison with its counts; exits 1 on the first differences (listed).
"""

import argparse
import json
import math
import os
import pathlib
import random
import struct
import subprocess
import sys

# The SDK imports litellm, which otherwise fetches its model price list from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

CAPS = (65536, 262144)


def load_oracle():
    """Agenta's stamp and a recorder of what it logs, or exit 2 when the SDK is missing."""
    try:
        from agenta.sdk.agents.utils import effective_config
    except ImportError as err:
        print(f"agenta oracle: agenta==0.125.1 is not importable: {err}", file=sys.stderr)
        sys.exit(2)

    class Recorder:
        """Stands in for the module's logger: keeps each warning's arguments."""

        def __init__(self):
            self.warnings = []

        def warning(self, message, *args, **_kwargs):
            self.warnings.append((message, args))

        def __getattr__(self, _name):
            return lambda *args, **kwargs: None

    recorder = Recorder()
    effective_config.log = recorder
    return effective_config, recorder


def agenta_stamp(module, recorder, text, cap):
    """What Agenta does with this config text at this cap, in Gatehouse's batch terms."""
    module.MAX_STAMPED_BYTES = cap
    recorder.warnings.clear()
    parameters = json.loads(text)
    result = module.stamp_effective_parameters(parameters)
    stripped = []
    over_cap = None
    for message, args in recorder.warnings:
        if "credential-shaped" in message:
            stripped = list(args[1])
        elif "over the" in message:
            over_cap = args[0]
    if result is not None:
        stamped = json.dumps(result)
        return {"stamped": stamped, "measured_bytes": len(stamped.encode("utf-8")), "stripped": stripped}
    if not isinstance(parameters, dict):
        return {"not_stamped": "empty" if parameters is None else "not_an_object"}
    if not parameters:
        return {"not_stamped": "empty"}
    if over_cap is None:
        raise AssertionError(f"Agenta stamped nothing without saying why: {text[:200]}")
    return {"not_stamped": "over_cap", "measured_bytes": over_cap}


# ---------------------------------------------------------------------------------------
# The generator: config TEXTS, so literals, escapes and duplicate keys reach json.loads as
# written.
# ---------------------------------------------------------------------------------------

CREDENTIAL_KEYS = ["headers", "authorization", "Headers", "AUTHORIZATION", "Authorization", "credentials"]
PLAIN_KEYS = ["name", "url", "model", "type", "x", "é", "😀", "a b", "", "call", "connection"]
ALPHABET = list("abcXYZ09 _-/") + ["é", "ß", "€", "😀", "𝄞", "\u2028", "\x7f", '"', "\\", "\n", "\t", "\x00", "\x1f"]
LONE_SURROGATES = ["\\ud800", "\\udfff", "\\udbff", "\\ud83d"]
NUMBER_LITERALS = [
    "0", "-0", "1", "-1", "1.0", "-0.0", "0.0", "1.50", "100.0", "1E+2", "1e16", "1E+16", "1e15",
    "1e-5", "1e-05", "0.00001", "1.5e-7", "1e21", "1e400", "-1e400", "1e-400", "5e-324",
    "1.7976931348623157e308", "0.1", "0.30000000000000004", "801185243389954.25",
    "9007199254740993", "18446744073709551616", "-9223372036854775809",
    "123456789012345678901234567890", "NaN", "Infinity", "-Infinity",
]


def rand_number(rng):
    kind = rng.randrange(5)
    if kind == 0:
        return rng.choice(NUMBER_LITERALS)
    if kind == 1:
        return str(rng.randrange(-10**rng.randrange(1, 40), 10**rng.randrange(1, 40)))
    if kind == 2:
        return repr(rng.uniform(-1, 1) * 10 ** rng.randrange(-30, 30))
    if kind == 3:
        return f"{rng.randrange(1, 10**rng.randrange(1, 18))}{rng.choice('eE')}{rng.choice(['', '+', '-'])}{rng.randrange(0, 330)}"
    return f"{rng.randrange(-1000, 1000)}.{rng.randrange(0, 10**rng.randrange(1, 20))}"


def rand_string_text(rng, longest=8, lone_surrogates=True):
    """A JSON string literal: raw UTF-8 or escaped, sometimes with a lone surrogate escape."""
    s = "".join(rng.choice(ALPHABET) for _ in range(rng.randrange(0, longest)))
    text = json.dumps(s, ensure_ascii=rng.random() < 0.5)
    if lone_surrogates and rng.random() < 0.05:
        text = text[:-1] + rng.choice(LONE_SURROGATES) + '"'
    return text


def rand_key_text(rng):
    if rng.random() < 0.6:
        return json.dumps(rng.choice(CREDENTIAL_KEYS + PLAIN_KEYS), ensure_ascii=rng.random() < 0.5)
    return rand_string_text(rng, 5)


def rand_value(rng, depth):
    kind = rng.randrange(9 if depth < 6 else 5)
    if kind == 0:
        return rng.choice(["null", "true", "false"])
    if kind in (1, 2):
        return rand_number(rng)
    if kind in (3, 4):
        return rand_string_text(rng)
    if kind in (5, 6):
        return rand_object(rng, depth + 1)
    if kind == 7:
        return "[" + ", ".join(rand_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))) + "]"
    return rand_entry(rng, depth + 1)


def rand_object(rng, depth, keys=None):
    keys = keys if keys is not None else [rand_key_text(rng) for _ in range(rng.randrange(0, 5))]
    if keys and rng.random() < 0.15:
        keys.append(rng.choice(keys))  # a duplicate key: the last value wins
    sep = rng.choice([", ", ",", " , "])
    return "{" + sep.join(f"{k}: {rand_value(rng, depth)}" for k in keys) + "}"


def rand_entry(rng, depth):
    """An `agent.mcps` / `agent.tools` entry: credential keys at the entry, in `connection`
    and `call`, in any letter case; sometimes not an object at all."""
    if rng.random() < 0.1:
        return rand_value(rng, 6)
    parts = ['"name": ' + rand_string_text(rng, 6)]
    for key in rng.sample(CREDENTIAL_KEYS, rng.randrange(0, 3)):
        parts.append(json.dumps(key) + ": " + rand_value(rng, depth + 1))
    for nested in ("connection", "call"):
        if rng.random() < 0.6:
            inner = ['"url": "https://mcp.example/' + str(rng.randrange(100)) + '"']
            for key in rng.sample(CREDENTIAL_KEYS, rng.randrange(0, 4)):
                inner.append(json.dumps(key) + ": " + rand_value(rng, depth + 2))
            parts.append(f'"{nested}": ' + ("{" + ", ".join(inner) + "}" if rng.random() < 0.9 else rand_value(rng, 6)))
    return "{" + ", ".join(parts) + "}"


def rand_config(rng):
    """One config text: mostly Agenta-shaped (`agent.llm`, `agent.mcps`, `agent.tools`)."""
    roll = rng.random()
    if roll < 0.03:
        return rng.choice(["null", "{}", "[]", "3", '"x"', "[{}]", "true"])
    agent = ['"llm": ' + rand_object(rng, 1, ['"model"', '"temperature"', '"seed"'])]
    for list_key in ("mcps", "tools"):
        if rng.random() < 0.7:
            entries = [rand_entry(rng, 2) for _ in range(rng.randrange(0, 4))]
            agent.append(f'"{list_key}": [' + ", ".join(entries) + "]")
        elif rng.random() < 0.2:
            agent.append(f'"{list_key}": ' + rand_value(rng, 5))
    for _ in range(rng.randrange(0, 3)):
        agent.append(rand_key_text(rng) + ": " + rand_value(rng, 2))
    body = "{" + ", ".join(agent) + "}" if rng.random() < 0.95 else rand_value(rng, 4)
    top = ['"agent": ' + body]
    for _ in range(rng.randrange(0, 3)):
        top.append(rand_key_text(rng) + ": " + rand_value(rng, 1))
    if rng.random() < 0.1:
        top.append('"agent": ' + rand_value(rng, 3))  # a second `agent`: the last wins
    return "{" + ", ".join(top) + "}"


def rand_double_config(rng):
    """A config holding one float as `repr` writes it: any finite double (random bits, long
    mantissas at every scale), so the stamp's float spelling meets every digit pattern,
    halfway ties between two shortest forms included."""
    while True:
        roll = rng.random()
        if roll < 0.5:
            value = struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0]
        elif roll < 0.8:
            value = rng.getrandbits(53) * 2.0 ** rng.randrange(-60, 10)
        else:
            value = rng.uniform(-1, 1) * 10.0 ** rng.randrange(-320, 308)
        if math.isfinite(value):
            return '{"agent": {"llm": {"temperature": %s}}}' % repr(value)


def padded_to(module, recorder, rng, cap, extra):
    """A config whose measured size (after Agenta's redaction) is exactly `cap + extra`,
    padded with a character whose `json.dumps` escape is 1, 2, 6 or 12 bytes long."""
    pad_char, width = rng.choice([("a", 1), ('"', 2), ("é", 6), ("😀", 12), ("\x7f", 6)])
    with_header = rng.random() < 0.5
    mcps = ', "mcps": [{"name": "n", "connection": {"headers": {"authorization": "Bearer x"}}}]' if with_header else ""

    def text(pad):
        return '{"agent": {"llm": {"model": "m"}' + mcps + '}, "pad": ' + json.dumps(pad) + "}"

    base = agenta_stamp(module, recorder, text(""), 10**9)["measured_bytes"]
    target = cap + extra
    fill, rest = divmod(target - base, width)
    pad = pad_char * fill + "a" * rest
    return text(pad)


def load_request_to_wire():
    from agenta.sdk.agents.dtos import (
        ClaudeAgentTemplate,
        CodexAgentTemplate,
        HarnessKind,
        Message,
        MockAgentTemplate,
        PiAgentTemplate,
    )
    from agenta.sdk.agents.utils.wire import request_to_wire

    templates = {
        HarnessKind.PI: lambda model, rng: PiAgentTemplate(model=model),
        HarnessKind.CLAUDE: lambda model, rng: ClaudeAgentTemplate(model=model),
        HarnessKind.CODEX: lambda model, rng: CodexAgentTemplate(model=model),
        HarnessKind.MOCK: lambda model, rng: MockAgentTemplate(
            model=model, behavior=rng.choice(["echo", "gate"]), behavior_kwargs=rand_kwargs(rng),
        ),
    }
    return request_to_wire, templates, Message


def rand_kwargs(rng):
    """The mock harness's free-form `behavior_kwargs`: standard JSON only (see
    `standard_json`)."""
    text = rand_object(rng, 3)
    return json.loads(text) if standard_json(text) else {}


def standard_json(text):
    """True when what `json.loads` reads from `text` is JSON Gatehouse's typed reader takes:
    no NaN or infinity, no lone surrogate. Bodies holding those are left to issue 24, item 2
    (the tolerant reader); the stamp's comparison above covers them."""
    try:
        json.dumps(json.loads(text), allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, UnicodeEncodeError):
        return False
    return True


def rand_turn(rng, templates, message_type):
    """The arguments of one `request_to_wire` call and the config it stamps (text or None)."""
    harness = rng.choice(list(templates))
    model = rng.choice(["anthropic/claude-sonnet-4-5", "openai/gpt-5", "m", "é/模型"])
    config = templates[harness](model, rng)
    messages = [
        # No lone surrogate in a message: a body holding one is left to issue 24, item 2.
        message_type(role=rng.choice(["user", "assistant"]), content=json.loads(rand_string_text(rng, 12, False)))
        for _ in range(rng.randrange(1, 4))
    ]
    session_id = rng.choice([None, "", "s-" + str(rng.randrange(1000)), "sess-é"])
    config_text = None
    if rng.random() < 0.85:
        candidate = rand_config(rng)
        if standard_json(candidate):
            config_text = candidate
    arguments = {
        "harness": harness,
        "sandbox": rng.choice(["local", "daytona"]),
        "config": config,
        "messages": messages,
        "session_id": session_id,
        "effective_parameters": json.loads(config_text) if config_text is not None else None,
    }
    return arguments, config_text


def compare_request_to_wire(binary, module, count, rng):
    """`request_to_wire` bodies against Gatehouse's schema and stamp; returns (checked,
    stamped, differences)."""
    request_to_wire, templates, message_type = load_request_to_wire()
    module.MAX_STAMPED_BYTES = CAPS[1]
    bodies, configs = [], []
    for _ in range(count):
        arguments, config_text = rand_turn(rng, templates, message_type)
        body = request_to_wire(**arguments)
        bodies.append(json.dumps(body))
        configs.append(config_text)
    checks = subprocess.run(
        [binary, "wire", "validate", "--type", "RunRequest", "--batch", "-"],
        input="".join(b + "\n" for b in bodies), capture_output=True, text=True, check=False,
    )
    if checks.returncode != 0:
        raise SystemExit(f"agenta oracle: gatehouse wire validate --batch failed: {checks.stderr.strip()}")
    verdicts = json_lines(checks.stdout)
    stamp_inputs = [c if c is not None else "null" for c in configs]
    stamps = run_gatehouse(binary, CAPS[1], stamp_inputs)
    differences = []
    stamped = 0
    for index, (body_text, verdict, config_text, stamp) in enumerate(zip(bodies, verdicts, configs, stamps)):
        body = json.loads(body_text)
        if verdict != {"valid": True}:
            differences.append((index, body_text[:300], "schema", verdict))
        session_run = bool(body.get("sessionId"))
        expected = stamp.get("stamped") if session_run and config_text is not None else None
        got = json.dumps(body["effectiveParameters"]) if "effectiveParameters" in body else None
        if got != expected:
            differences.append((index, body_text[:300], "effectiveParameters", {"agenta": got, "gatehouse": expected}))
        stamped += got is not None
    if len(verdicts) != len(bodies):
        differences.append((-1, "", "count", {"bodies": len(bodies), "results": len(verdicts)}))
    return len(bodies), stamped, differences


def json_lines(text):
    """The JSON values of a JSON Lines text. Split on `\\n` only: `str.splitlines` would also
    split on U+2028 and the other separators serde_json writes raw inside a string."""
    return [json.loads(line) for line in text.split("\n") if line]


def compare_rows(binary, count, rng):
    """Rows rendered by FastAPI 0.139 + pydantic (the SDK's own pins, as Agenta's API pins
    them) and by `gatehouse wire row --batch`; returns (checked, respelled, differences)."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "python"))
    import make_agenta_api_row_vectors as rows  # the row model and generator of tests/data

    given = [json.dumps(json.loads(rows.rand_row(rng, index))) for index in range(count)]
    done = subprocess.run(
        [binary, "wire", "row", "--batch", "-"],
        input="".join(g + "\n" for g in given), capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"agenta oracle: gatehouse wire row --batch failed: {done.stderr.strip()}")
    ours = json_lines(done.stdout)
    differences = []
    respelled = 0
    for index, (text, result) in enumerate(zip(given, ours)):
        fastapi = rows.fastapi_body(json.loads(text))
        if result != {"rendered": fastapi}:
            differences.append((index, text[:300], fastapi[:300], result))
        respelled += fastapi != json.dumps(json.loads(text), separators=(",", ":"), ensure_ascii=False)
    if len(ours) != len(given):
        differences.append((-1, "", f"{len(given)} rows", f"{len(ours)} results"))
    return len(given), respelled, differences


def run_gatehouse(binary, cap, texts):
    lines = "".join(json.dumps(t) + "\n" for t in texts)
    done = subprocess.run(
        [binary, "wire", "stamp", "--batch", "--agenta-compatible", "--max-bytes", str(cap)],
        input=lines, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"agenta oracle: gatehouse wire stamp --batch failed: {done.stderr.strip()}")
    results = json_lines(done.stdout)
    if len(results) != len(texts):
        raise SystemExit(f"agenta oracle: {len(texts)} inputs, {len(results)} results")
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--bin", required=True, help="the gatehouse binary")
    parser.add_argument("--count", type=int, default=4000, help="random configs (default 4000)")
    parser.add_argument("--doubles", type=int, default=20000, help="one-float configs (default 20000)")
    parser.add_argument("--requests", type=int, default=2000, help="request_to_wire calls (default 2000)")
    parser.add_argument("--rows", type=int, default=2000, help="interaction rows (default 2000)")
    parser.add_argument("--seed", type=int, default=24, help="the generator's seed (default 24)")
    args = parser.parse_args()
    module, recorder = load_oracle()
    rng = random.Random(args.seed)
    texts = [rand_config(rng) for _ in range(args.count)]
    boundaries = [padded_to(module, recorder, rng, cap, extra) for cap in CAPS for extra in (0, 1) for _ in range(8)]
    doubles = [rand_double_config(rng) for _ in range(args.doubles)]
    texts += boundaries + doubles
    differences = []
    outcomes = {}
    for cap in CAPS:
        ours = run_gatehouse(args.bin, cap, texts)
        for index, (text, gatehouse) in enumerate(zip(texts, ours)):
            agenta = agenta_stamp(module, recorder, text, cap)
            kind = "stamped" if "stamped" in agenta else agenta["not_stamped"]
            if agenta.get("stripped"):
                kind = "stamped with credentials stripped"
            outcomes[kind] = outcomes.get(kind, 0) + 1
            if gatehouse != agenta:
                differences.append((cap, index, text[:300], agenta, gatehouse))
    summary = ", ".join(f"{n} {kind}" for kind, n in sorted(outcomes.items()))
    requests, stamped, request_differences = compare_request_to_wire(args.bin, module, args.requests, rng)
    for index, text, what, detail in request_differences[:10]:
        print(f"request {index} ({what}): {text}\n  {detail}", file=sys.stderr)
    if request_differences:
        print(
            f"agenta oracle: request_to_wire: {len(request_differences)} difference(s) in {requests} bodies",
            file=sys.stderr,
        )
    if differences:
        for cap, index, text, agenta, gatehouse in differences[:10]:
            print(f"cap {cap} input {index}: {text}\n  agenta:    {agenta}\n  gatehouse: {gatehouse}", file=sys.stderr)
        print(
            f"agenta oracle: stamp_effective_parameters: {len(differences)} of {2 * len(texts)} DIFFER",
            file=sys.stderr,
        )
        sys.exit(1)
    print(
        f"agenta oracle: stamp_effective_parameters (agenta 0.125.1) vs gatehouse wire stamp: "
        f"{len(texts)} inputs (seed {args.seed}; {len(boundaries)} at a cap's edge, {len(doubles)} "
        f"holding one random double) x caps "
        f"{CAPS[0]} and {CAPS[1]}: all {2 * len(texts)} equal ({summary})"
    )
    rows, respelled, row_differences = compare_rows(args.bin, args.rows, rng)
    for index, text, fastapi, ours in row_differences[:10]:
        print(f"row {index}: {text}\n  fastapi:   {fastapi}\n  gatehouse: {ours}", file=sys.stderr)
    if row_differences:
        print(f"agenta oracle: rows: {len(row_differences)} of {rows} DIFFER", file=sys.stderr)
    if request_differences or row_differences:
        sys.exit(1)
    print(
        f"agenta oracle: interaction rows, FastAPI 0.139 + pydantic (the SDK's pins) vs gatehouse "
        f"wire row: {rows} rows generated (seed {args.seed}): all equal byte for byte "
        f"({respelled} with numbers pydantic spells otherwise than json.dumps)"
    )
    print(
        f"agenta oracle: request_to_wire (agenta 0.125.1) vs gatehouse: {requests} /run bodies "
        f"generated (seed {args.seed}): all valid RunRequests, effectiveParameters equal to "
        f"Gatehouse's stamp on all ({stamped} stamped, {requests - stamped} without one)"
    )


if __name__ == "__main__":
    main()
