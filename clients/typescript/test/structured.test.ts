/** Every call gets a structured result, against errord as a process: a call that cannot be
 * read (null, no id, no name) fails with INVALID_INPUT saying why instead of rejecting the
 * batch; an argument outside its schema's `enum` goes back to the model naming the values
 * allowed, the tool not run; a call an open breaker refused is not retryable. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { acceptArguments, Executor, InvalidArguments, OperatorClient, tool, type RawToolCall } from "../src/index.js";
import { boardKey } from "../src/executor/board.js";
import { scratch, startErrord, waitFor } from "./helpers.js";

/** Seconds each executor gives errord to answer before its local policy would decide. */
const DECISIONS = 10;

test("null, a call without an id and one without a name each get a failed INVALID_INPUT result; the others run", async () => {
  const daemon = await startErrord(scratch(), "tools: []\n");
  let runs = 0;
  const ping = tool("ping", () => {
    runs += 1;
    return "pong";
  });
  const executor = new Executor({ tools: [ping], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const calls = [null, { name: "ping", arguments: {} }, { id: "c3", arguments: {} }, { id: "c4", name: "ping" }];
    const results = await executor.run(calls as unknown as RawToolCall[]);
    assert.equal(results.length, 4);
    const [nothing, noId, noName, fine] = results;
    assert.deepEqual([fine?.callId, fine?.status, fine?.output], ["c4", "succeeded", "pong"]);
    assert.equal(runs, 1);
    for (const result of [nothing, noId, noName]) {
      assert.deepEqual([result?.status, result?.error?.code, result?.error?.fault, result?.attempts], ["failed", "INVALID_INPUT", "ARGUMENTS", 0]);
    }
    assert.match(nothing?.error?.message ?? "", /should be an object, got null/);
    assert.deepEqual([noId?.callId, noId?.tool, noName?.callId, noName?.tool], ["", "ping", "c3", ""]);
    assert.match(noId?.error?.message ?? "", /has no "id"/);
    assert.match(noName?.error?.message ?? "", /has no "name"/);
    const single = await executor.runOne(null as unknown as RawToolCall);
    assert.equal(single.status, "failed");
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

const UNITS = { type: "object", properties: { unit: { type: "string", enum: ["celsius", "fahrenheit"] } }, required: ["unit"] };

test("acceptArguments: a value outside the enum is InvalidArguments naming the parameter and the values allowed", () => {
  const weather = tool("weather", () => "ok", { parameters: UNITS });
  assert.deepEqual(acceptArguments(weather, { unit: "celsius" }).args, { unit: "celsius" });
  assert.throws(
    () => acceptArguments(weather, { unit: "kelvin" }),
    (error: unknown) =>
      error instanceof InvalidArguments &&
      error.parameter === "unit" &&
      error.problem === "enum" &&
      error.message === `weather: parameter 'unit' should be one of "celsius", "fahrenheit", got "kelvin"`,
  );
});

test("an argument outside its enum goes back to the model, the tool not run, errord's text naming the values allowed", async () => {
  const daemon = await startErrord(scratch(), "tools: []\n");
  let runs = 0;
  const weather = tool("weather", () => {
    runs += 1;
    return "sunny";
  }, { parameters: UNITS });
  const executor = new Executor({ tools: [weather], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const result = await executor.runOne({ id: "w1", name: "weather", arguments: { unit: "kelvin" } });
    assert.deepEqual([result.status, result.error?.code, result.decidedBy, runs], ["returned_to_model", "INVALID_INPUT", "errord", 0]);
    assert.match(result.error?.message ?? "", /one of "celsius", "fahrenheit"/);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("a call an open breaker refused says CIRCUIT_OPEN and is not retryable", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: quotes\n    retry_policy: {max_total_time_ms: 500}\n");
  const operator = new OperatorClient({ target: daemon.address, token: daemon.token });
  const executor = new Executor({ tools: [tool("quotes", () => "q")], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    await operator.forceOpenBreaker({ tool: "quotes", by: "test" }, { timeout: 10 });
    await executor.start(10);
    await waitFor(() => !executor.board.closed(boardKey("quotes")), "the executor to see the breaker open");
    const result = await executor.runOne({ id: "q1", name: "quotes", arguments: {} });
    assert.deepEqual([result.status, result.attempts, result.error?.code, result.error?.retryable], ["failed", 0, "CIRCUIT_OPEN", false]);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});
