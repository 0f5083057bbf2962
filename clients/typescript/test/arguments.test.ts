/** What the executor takes of a call and tells errord of its tool, against errord as a
 * process: `2.0` for an integer and an argument the schema does not take run the tool (the
 * result names the one ignored); each failure report declares the tool's schema and the
 * timeout its attempt ran under, and a success reports no failure. */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { JsonObject } from "@bufbuild/protobuf";
import { acceptArguments, tool, Executor, InvalidArguments, type PlainInit, type pb } from "../src/index.js";
import { scratch, startErrord } from "./helpers.js";

/** Seconds each executor gives errord to answer before its local policy would decide. */
const DECISIONS = 10;

const RESERVE: JsonObject = {
  type: "object",
  properties: { city: { type: "string" }, nights: { type: "integer" } },
  required: ["city", "nights"],
  additionalProperties: false,
};

test("acceptArguments: a whole number is an integer, an argument the schema does not take is left out and named", () => {
  const reserve = tool("reserve", () => "ok", { parameters: RESERVE });
  const given = JSON.parse('{"breakfast": true, "city": "Oslo", "nights": 2.0}') as JsonObject;
  assert.deepEqual(acceptArguments(reserve, given), { args: { city: "Oslo", nights: 2 }, ignored: ["breakfast"] });
  const open = tool("open", () => "ok", { parameters: { type: "object", properties: { q: { type: "string" } } } });
  assert.deepEqual(acceptArguments(open, { q: "x", page: 2 }), { args: { q: "x", page: 2 }, ignored: [] });
  assert.throws(() => acceptArguments(reserve, { city: "Oslo", nights: 2.5 }), InvalidArguments);
  assert.throws(() => acceptArguments(reserve, { nights: 1, town: "Oslo" }), /missing required parameter 'city'/);
});

test("2.0 for an integer and an unknown extra argument both run the tool; ignoredArguments names the extra", async () => {
  const daemon = await startErrord(scratch(), "tools: []\n");
  const received: JsonObject[] = [];
  const reserve = tool("reserve", (args) => {
    received.push(args);
    return `${String(args["nights"])} nights in ${String(args["city"])}`;
  }, { parameters: RESERVE });
  const executor = new Executor({ tools: [reserve], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const call = { id: "r1", name: "reserve", arguments: '{"city": "Oslo", "nights": 2.0, "breakfast": true}' };
    const result = await executor.runOne(call);
    assert.deepEqual([result.status, result.output, result.attempts], ["succeeded", "2 nights in Oslo", 1]);
    assert.deepEqual(received, [{ city: "Oslo", nights: 2 }]);
    assert.deepEqual(result.ignoredArguments, ["breakfast"]);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("each failure report declares the tool's schema and timeout; a tool without a schema declares its timeout alone; a success reports none", async () => {
  const daemon = await startErrord(scratch(), "tools: []\n");
  const reset = Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
  let failNext = false;
  const book = tool("book", () => {
    if (failNext) {
      failNext = false;
      throw reset;
    }
    return "booked";
  }, { parameters: RESERVE });
  const ping = tool("ping", () => {
    throw reset;
  });
  const executor = new Executor({ tools: [book, ping], target: daemon.address, decisionTimeout: DECISIONS });
  const sent: PlainInit<pb.ReportFailureRequest>[] = [];
  const decide = executor.link.decide.bind(executor.link);
  executor.link.decide = (request) => {
    sent.push(request);
    return decide(request);
  };
  try {
    const fine = await executor.runOne({ id: "b0", name: "book", arguments: { city: "Oslo", nights: 1 } });
    assert.deepEqual([fine.status, sent.length], ["succeeded", 0]);
    failNext = true;
    const [recovered, failed] = await executor.run([
      { id: "b1", name: "book", arguments: { city: "Oslo", nights: 1 } },
      { id: "p1", name: "ping", arguments: {} },
    ]);
    assert.equal(recovered?.status, "succeeded");
    assert.notEqual(failed?.status, "succeeded");
    const first = Object.fromEntries(sent.filter((r) => r.attempt === 1).map((r) => [r.callId, r]));
    assert.deepEqual(Object.keys(first).sort(), ["b1", "p1"]);
    assert.deepEqual(first["b1"]?.toolDeclaration, { parameters: RESERVE, timeout: 30 });
    assert.deepEqual(first["p1"]?.toolDeclaration, { timeout: 30 });
  } finally {
    await executor.close();
    await daemon.stop();
  }
});
