/** The typed client against errord as a process: plain objects in and out, and an
 * invalid request surfaced as an ErrordError with its code and field violations. */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Code } from "@connectrpc/connect";
import { ErrordClient, ErrordError, ErrorCode, RecoveryAction } from "../src/index.js";
import { scratch, startErrord, type Daemon } from "./helpers.js";

let daemon: Daemon;
let errord: ErrordClient;

before(async () => {
  daemon = await startErrord(scratch(), "tools:\n  - name: search\n    timeout_ms: 1500\n");
  errord = new ErrordClient({ target: daemon.address, token: daemon.token });
});
after(() => daemon.stop());

test("an invalid ReportFailure rejects with INVALID_ARGUMENT and the fields it names", async () => {
  const refused = await errord.reportFailure({ callId: "c1", tool: "search", attempt: 0 }, { timeout: 10 }).catch((e: unknown) => e);
  assert.ok(refused instanceof ErrordError);
  assert.equal(refused.code, Code.InvalidArgument);
  assert.equal(refused.codeName, "INVALID_ARGUMENT");
  const fields = refused.violations.map((v) => v.field);
  assert.ok(fields.includes("turn_id") && fields.includes("attempt"), `violations: ${JSON.stringify(refused.violations)}`);
  assert.ok(refused.violations.every((v) => v.description.length > 0));
});

test("a ReportFailure in plain values gets a decision with its delay in seconds", async () => {
  const { decision, replayed } = await errord.reportFailure(
    {
      turnId: "turn-plain",
      callId: "c1",
      tool: "search",
      attempt: 1,
      error: { code: ErrorCode.TIMEOUT, message: "no answer", retryHint: { case: "retryAfter", value: 0.05 } },
      arguments: { q: "flights" },
      elapsed: 1.5,
    },
    { timeout: 10 },
  );
  assert.equal(replayed, false);
  assert.equal(decision?.action, RecoveryAction.RETRY);
  assert.equal(typeof decision?.delay, "number");
  assert.ok((decision?.delay ?? 0) >= 0.05);
  const events = await errord.turnTrace("turn-plain", { timeout: 10 });
  const failure = events.find((event) => event.event.case === "failure");
  assert.ok(failure?.event.case === "failure");
  assert.deepEqual(failure.event.value.arguments, { q: "flights" });
  assert.equal(failure.event.value.elapsed, 1.5);
  assert.ok(failure.time instanceof Date);
});

test("a turn errord never heard of is NOT_FOUND", async () => {
  const missing = await errord.getTurnTrace({ turnId: "turn-nobody" }, { timeout: 10 }).catch((e: unknown) => e);
  assert.ok(missing instanceof ErrordError);
  assert.equal(missing.code, Code.NotFound);
});
