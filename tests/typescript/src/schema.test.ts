// The committed JSON Schema (schema/) consumed from TypeScript, as Agenta's web app would:
// ajv's draft 2020-12 validator compiles every schema file, accepts every own sample
// (tests/data/samples), rejects every own invalid document (tests/data/invalid), and, when
// Agenta's fixtures are present, accepts Agenta's /run goldens (an upstream conformance
// suite: skipped with one line when absent, required under CI=true).

import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";

import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";

import { readFixture, ROOT } from "./upstream.js";

const SCHEMA_DIR = join(ROOT, "schema");
const DATA = join(ROOT, "tests", "data");

interface IndexEntry {
  file: string;
  description: string;
}

function readJson(path: string): unknown {
  return JSON.parse(readFileSync(path, "utf8")) as unknown;
}

const index = readJson(join(SCHEMA_DIR, "index.json")) as Record<string, IndexEntry>;

// schemars' numeric formats, checked for what they say (strict ajv refuses unknown formats).
const isInteger = (x: number) => Number.isInteger(x);
// Strict, except `strictRequired`: the XOR of a tool's `call` and `callRef` is written
// `not: {required: [call, callRef]}`, valid JSON Schema that strict mode flags.
const ajv = new Ajv2020({ allErrors: true, strict: true, strictRequired: false });
// The standard string formats (uuid, date-time), checked as ajv-formats defines them.
// (The package is CommonJS: its default export is the plugin, under `.default` in ESM.)
type AddFormats = (ajv: Ajv2020, formats: string[]) => unknown;
const formatsPlugin = addFormatsModule as unknown as AddFormats & { default?: AddFormats };
(formatsPlugin.default ?? formatsPlugin)(ajv, ["uuid", "date-time"]);
ajv.addFormat("uint64", { type: "number", validate: (x: number) => isInteger(x) && x >= 0 });
ajv.addFormat("uint32", { type: "number", validate: (x: number) => isInteger(x) && x >= 0 && x <= 0xffffffff });
ajv.addFormat("int64", { type: "number", validate: isInteger });
ajv.addFormat("double", { type: "number", validate: (x: number) => Number.isFinite(x) });

const validators = new Map<string, ValidateFunction>();
function validator(name: string): ValidateFunction {
  let found = validators.get(name);
  if (found === undefined) {
    const entry = index[name];
    assert.ok(entry !== undefined, `${name} is not registered in schema/index.json`);
    found = ajv.compile(readJson(join(SCHEMA_DIR, entry.file)) as object);
    validators.set(name, found);
  }
  return found;
}

function errors(name: string, document: unknown): string[] {
  const validate = validator(name);
  return validate(document)
    ? []
    : (validate.errors ?? []).map((e) => `${e.instancePath || "/"} ${e.message ?? "invalid"}`);
}

/** [type name, file name] of tests/data/<folder>: `<Type>.<label>.json`. */
function documents(folder: string): Array<[string, string]> {
  return readdirSync(join(DATA, folder))
    .filter((file) => file.endsWith(".json"))
    .sort()
    .map((file) => [file.split(".")[0] ?? file, file]);
}

test("every schema file compiles as draft 2020-12 and is indexed", () => {
  const files = readdirSync(SCHEMA_DIR).filter((f) => f.endsWith(".schema.json"));
  assert.deepEqual(new Set(files), new Set(Object.values(index).map((e) => e.file)));
  for (const [name, entry] of Object.entries(index)) {
    const schema = readJson(join(SCHEMA_DIR, entry.file)) as Record<string, unknown>;
    assert.equal(schema["$schema"], "https://json-schema.org/draft/2020-12/schema", name);
    assert.equal(schema["title"], name);
    validator(name);
  }
});

test("every registered type has an own sample", () => {
  const sampled = new Set(documents("samples").map(([name]) => name));
  assert.deepEqual(sampled, new Set(Object.keys(index)));
});

for (const [name, file] of documents("samples")) {
  test(`own sample ${file} is a valid ${name}`, () => {
    assert.deepEqual(errors(name, readJson(join(DATA, "samples", file))), []);
  });
}

for (const [name, file] of documents("invalid")) {
  test(`own invalid document ${file} is rejected as ${name}`, () => {
    assert.notDeepEqual(errors(name, readJson(join(DATA, "invalid", file))), []);
  });
}

test("effectiveParameters is optional on a session run, and never empty", () => {
  const run = readJson(join(DATA, "samples", "RunRequest.session_run_all_keys.json")) as Record<string, unknown>;
  assert.deepEqual(errors("RunRequest", run), []);
  const without = { ...run };
  delete without["effectiveParameters"];
  assert.deepEqual(errors("RunRequest", without), []);
  assert.notDeepEqual(errors("RunRequest", { ...run, effectiveParameters: {} }), []);
});

test("a row's data.parameters, when present, is an object (the field a zod schema once dropped)", () => {
  const row = readJson(join(DATA, "samples", "SessionInteraction.contract.json")) as {
    data: Record<string, unknown>;
  };
  assert.deepEqual(errors("SessionInteraction", row), []);
  const legacy = { ...row, data: { ...row.data } };
  delete legacy.data["parameters"];
  assert.deepEqual(errors("SessionInteraction", legacy), []);
  assert.notDeepEqual(errors("SessionInteraction", { ...row, data: { ...row.data, parameters: [] } }), []);
});

// A respond's answer is typed and closed (what a client writes): a misspelled key is
// refused by the schema files and by the OpenAPI document's components alike, so a client
// generated from either never sends `{aproved: true}` (which the server, reading as
// Agenta's router does, would take as a denial).
const MISSPELLED = { aproved: true };
const APPROVAL = { approved: true, tool_call_id: "toolu_01", message: "go" };
const RESPOND_BODIES: Array<[string, (answer: unknown) => unknown]> = [
  ["RespondRequest", (answer) => ({ answer })],
  ["SessionInteractionRespondRequest", (answer) => ({ answer })],
  [
    "SessionInteractionRespondRequest",
    (answer) => ({ answers: [{ interaction_id: "018f3b2a-0000-7000-8000-00000000a001", answer }] }),
  ],
  ["BatchRespondRequest", (answer) => ({ answers: [{ id: "018f3b2a-0000-7000-8000-00000000a001", answer }] })],
];

test("a respond's answer is typed: {aproved: true} is refused, {approved, tool_call_id, message} taken", () => {
  for (const [name, body] of RESPOND_BODIES) {
    assert.deepEqual(errors(name, body(APPROVAL)), [], name);
    assert.notDeepEqual(errors(name, body(MISSPELLED)), [], `${name} took {aproved: true}`);
    assert.notDeepEqual(errors(name, body({ approved: "yes" })), [], `${name} took a text verdict`);
  }
  assert.deepEqual(errors("RespondRequest", {}), []);
  assert.deepEqual(errors("RespondRequest", { answer: null }), []);
});

test("the OpenAPI document's respond bodies refuse {aproved: true} too", () => {
  // Not strict: the document carries OpenAPI's own keywords beside its schemas.
  const documentAjv = new Ajv2020({ allErrors: true, strict: false });
  (formatsPlugin.default ?? formatsPlugin)(documentAjv, ["uuid", "date-time"]);
  documentAjv.addSchema(readJson(join(SCHEMA_DIR, "openapi.json")) as object, "openapi.json");
  for (const [name, body] of RESPOND_BODIES) {
    const validate = documentAjv.getSchema(`openapi.json#/components/schemas/${name}`);
    assert.ok(validate !== undefined, name);
    assert.equal(validate(body(APPROVAL)), true, name);
    assert.equal(validate(body(MISSPELLED)), false, `${name} took {aproved: true}`);
  }
});

// ---- upstream conformance: Agenta's /run goldens --------------------------------------

const GOLDENS = "Agenta /run goldens (tests/typescript)";

for (const golden of [
  "run_request.pi_core.json",
  "run_request.claude.json",
  "run_request.codex.json",
  "run_request.attachment.json",
]) {
  test(`Agenta golden ${golden} is a valid RunRequest`, (t) => {
    const document = readFixture(t, "agenta", GOLDENS, golden);
    if (document === undefined) return;
    assert.deepEqual(errors("RunRequest", document), []);
  });
}

for (const golden of ["run_result.ok.json", "run_result.error.json"]) {
  test(`Agenta golden ${golden} is a valid RunResult`, (t) => {
    const document = readFixture(t, "agenta", GOLDENS, golden);
    if (document === undefined) return;
    assert.deepEqual(errors("RunResult", document), []);
  });
}
