// Where the upstream conformance suites find Agenta's and AgentPlat's fixtures, and the one
// rule for when they are missing: TypeScript's side of the `gatehouse-fixtures` crate.
//
// - GATEHOUSE_FIXTURES names the folder holding agenta/ and agentplat/; otherwise
//   shared/fixtures beside the checkout.
// - Missing under CI=true: the test fails (CI must run every conformance suite).
//   Missing elsewhere: the test is skipped with one line saying which suite and how to run
//   it, and the suite is appended to the file named by GATEHOUSE_SKIPPED_SUITES (set by
//   `cargo xtask test`, which lists every skipped suite at its end).

import { appendFileSync, existsSync, readFileSync, statSync } from "node:fs";
import { join, resolve } from "node:path";

export type Upstream = "agenta" | "agentplat";

/** The repository root (this file runs from tests/typescript/dist). */
export const ROOT = resolve(import.meta.dirname, "..", "..", "..");

export function fixturesRoot(): string {
  const value = process.env.GATEHOUSE_FIXTURES ?? "";
  return value !== "" ? value : join(ROOT, "..", "shared", "fixtures");
}

export function required(): boolean {
  return ["true", "1", "yes"].includes((process.env.CI ?? "").toLowerCase());
}

/** What a test does when a suite cannot run: `skip(message)` from node:test. */
export interface Skipper {
  skip(message?: string): void;
}

function isDir(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory();
}

function missing(t: Skipper, upstream: Upstream, suite: string, looked: string, what: string): undefined {
  const message = `upstream conformance suite ${JSON.stringify(suite)} needs ${upstream} fixtures: ${what} at ${looked}`;
  if (required()) {
    throw new Error(`${message} (CI=true makes it required; set GATEHOUSE_FIXTURES)`);
  }
  const log = process.env.GATEHOUSE_SKIPPED_SUITES ?? "";
  if (log !== "") {
    try {
      appendFileSync(log, `${suite}\t${upstream}\t${looked}\n`);
    } catch {
      // the summary line is lost, never the test
    }
  }
  t.skip(`skipped: ${message}; set GATEHOUSE_FIXTURES=<folder holding ${upstream}/> to run it`);
  return undefined;
}

/** One fixture file parsed as JSON, or `undefined` after skipping the test (fails under CI). */
export function readFixture(t: Skipper, upstream: Upstream, suite: string, name: string): unknown {
  const folder = join(fixturesRoot(), upstream);
  if (!isDir(folder)) {
    return missing(t, upstream, suite, folder, "fixtures not found");
  }
  const path = join(folder, name);
  if (!existsSync(path)) {
    return missing(t, upstream, suite, path, "fixture file not found");
  }
  return JSON.parse(readFileSync(path, "utf8")) as unknown;
}
