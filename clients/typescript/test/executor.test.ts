/** The executor against errord as a process: a timeout retried after errord's delays,
 * the alternative of a permanent failure, and a batch whose plan cascades a failure. */
import assert from "node:assert/strict";
import { test } from "node:test";
import {
  tool,
  ErrordClient,
  Executor,
  hang,
  mockTool,
  toAnthropic,
  toOpenAI,
  type Tool,
} from "../src/index.js";
import { scratch, startErrord, waitFor } from "./helpers.js";

/** Seconds each executor gives errord to answer before its local policy would decide. */
const DECISIONS = 10;

/** `tool` with the start and end times (ms) of each invocation recorded. */
function timed(tool: Tool): Tool & { started: number[]; ended: number[] } {
  const started: number[] = [];
  const ended: number[] = [];
  return {
    ...tool,
    started,
    ended,
    async run(args, context) {
      started.push(performance.now());
      try {
        return await tool.run(args, context);
      } finally {
        ended.push(performance.now());
      }
    },
  };
}

test("a tool that times out twice then succeeds is retried after errord's delays: 3 attempts, outcome recorded", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: flaky\n    timeout_ms: 200\n");
  const flaky = timed(mockTool("flaky", { script: [hang(60), hang(60), { ok: 2 }] }));
  const executor = new Executor({ tools: [flaky], target: daemon.address, decisionTimeout: DECISIONS });
  const errord = new ErrordClient({ target: daemon.address, token: daemon.token });
  try {
    const result = await executor.runOne({ id: "c1", name: "flaky", arguments: {} }, { turnId: "turn-flaky" });
    assert.deepEqual([result.status, result.output, result.attempts], ["succeeded", { ok: 2 }, 3]);
    assert.equal(result.decidedBy, "errord");
    const events = await waitFor(async () => {
      const found = await errord.turnTrace("turn-flaky", { timeout: 10 });
      return found.some((e) => e.event.case === "outcome") ? found : undefined;
    }, "the success's outcome in the trace");
    const failures = events.flatMap((e) => (e.event.case === "failure" ? [{ attempt: e.attempt, ...e.event.value }] : []));
    assert.deepEqual(failures.map((f) => f.attempt), [1, 2]);
    assert.ok(failures.every((f) => f.error?.code === 1 /* TIMEOUT */));
    assert.deepEqual(result.decisionIds, failures.map((f) => f.decision?.decisionId));
    const outcome = events.find((e) => e.event.case === "outcome");
    assert.equal(outcome?.attempt, 3);
    failures.forEach((f, n) => {
      const waited = (flaky.started[n + 1] ?? 0) - (flaky.ended[n] ?? 0);
      assert.ok(waited >= (f.decision?.delay ?? 0) * 1000 - 1, `attempt ${n + 2} waited ${waited} ms`);
    });
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("a permanent failure runs the manifest's alternative once, fallbackUsed set", async () => {
  const yaml = "tools:\n  - name: accounts\n    alternatives: [accounts_backup]\n  - name: accounts_backup\n";
  const daemon = await startErrord(scratch(), yaml);
  const unauthorized = Object.assign(new Error("token expired"), { status: 401 });
  const accounts = mockTool("accounts", { script: [unauthorized] });
  const backup = mockTool("accounts_backup", { answer: { from: "backup" } });
  const executor = new Executor({ tools: [accounts, backup], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const result = await executor.runOne({ id: "c1", name: "accounts", arguments: {} });
    assert.deepEqual(
      [result.status, result.output, result.fallbackUsed, result.toolUsed],
      ["succeeded", { from: "backup" }, true, "accounts_backup"],
    );
    assert.deepEqual([accounts.calls, backup.calls], [1, 1]);
    assert.deepEqual(toOpenAI(result), { role: "tool", tool_call_id: "c1", content: '{"from":"backup"}' });
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("a batch with dependencies: a permanent failure's dependents get their default or are skipped, the others succeed, in order", async () => {
  const yaml = [
    "tools:",
    "  - name: accounts",
    "  - name: balance",
    "  - name: chart",
    "    default: {points: []}",
    "  - name: tips",
    "  - name: advice",
    "  - name: weather",
    "",
  ].join("\n");
  const daemon = await startErrord(scratch(), yaml);
  const accounts = mockTool("accounts", { script: [Object.assign(new Error("403 Forbidden"), { status: 403 })] });
  const balance = mockTool("balance", { answer: { balance: 12 } });
  const chart = mockTool("chart", { answer: { points: [1, 2] } });
  const tips = mockTool("tips", { answer: { tips: ["save"] } });
  const advice = mockTool("advice", { answer: { advice: "hold" } });
  const weather = tool("weather", (args) => ({ sky: "clear", city: args["city"] }));
  const calls = [
    { id: "c-balance", name: "balance", arguments: {}, dependsOn: ["c-accounts"], default: { balance: 0 } },
    { id: "c-accounts", name: "accounts", arguments: { user: "ada" } },
    { id: "c-chart", name: "chart", arguments: {}, dependsOn: ["c-accounts"] },
    { id: "c-tips", name: "tips", arguments: {}, dependsOn: ["c-accounts"], optional: true },
    { id: "c-advice", name: "advice", arguments: {}, dependsOn: ["c-balance"] },
    { id: "c-weather", name: "weather", arguments: '{"city": "Oslo"}' },
  ];
  const executor = new Executor({
    tools: [accounts, balance, chart, tips, advice, weather],
    target: daemon.address,
    decisionTimeout: DECISIONS,
  });
  const errord = new ErrordClient({ target: daemon.address, token: daemon.token });
  try {
    const results = await executor.run(calls, { turnId: "turn-plan" });
    assert.deepEqual(results.map((r) => r.callId), calls.map((c) => c.id));
    const byId = Object.fromEntries(results.map((r) => [r.callId, r]));
    const events = await errord.turnTrace("turn-plan", { timeout: 10 });
    const [failure, ...others] = events.filter((e) => e.event.case === "failure");
    assert.equal(others.length, 0);
    assert.equal(failure?.callId, "c-accounts");
    assert.equal(byId["c-accounts"]?.status === "succeeded", false);
    assert.deepEqual([byId["c-balance"]?.status, byId["c-balance"]?.output], ["defaulted", { balance: 0 }]);
    assert.deepEqual([byId["c-chart"]?.status, byId["c-chart"]?.output], ["defaulted", { points: [] }]);
    assert.equal(byId["c-tips"]?.status, "skipped");
    assert.ok(["c-balance", "c-chart", "c-tips"].every((id) => byId[id]?.decidedBy === "errord"));
    assert.deepEqual([balance.calls, chart.calls, tips.calls], [0, 0, 0]);
    assert.deepEqual([byId["c-advice"]?.status, byId["c-advice"]?.output], ["succeeded", { advice: "hold" }]);
    assert.deepEqual([byId["c-weather"]?.status, byId["c-weather"]?.output], ["succeeded", { sky: "clear", city: "Oslo" }]);
    assert.equal(advice.calls, 1);
    const block = toAnthropic(byId["c-tips"]!);
    assert.equal(block.is_error, true);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("a tool's own timeout bounds its attempts when no manifest sets one; a manifest's timeout wins over it", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: managed\n    timeout_ms: 300\n");
  const slow = (name: string, timeout: number) => {
    const script = mockTool(name, { script: [hang(60), { ok: name }] });
    return tool(name, (args, context) => script.run(args, context), { timeout });
  };
  const executor = new Executor({ tools: [slow("own", 0.2), slow("managed", 5)], target: daemon.address, decisionTimeout: DECISIONS, defaultTimeout: 60 });
  const errord = new ErrordClient({ target: daemon.address, token: daemon.token });
  try {
    const results = await executor.run(
      [
        { id: "c1", name: "own", arguments: {} },
        { id: "c2", name: "managed", arguments: {} },
      ],
      { turnId: "turn-own-timeouts" },
    );
    assert.deepEqual(results.map((r) => [r.status, r.attempts]), [
      ["succeeded", 2],
      ["succeeded", 2],
    ]);
    const events = await errord.turnTrace("turn-own-timeouts", { timeout: 10 });
    const ranUnder = Object.fromEntries(
      events.flatMap((e) => (e.event.case === "failure" ? [[e.callId, e.event.value.toolDeclaration?.timeout]] : [])),
    );
    assert.deepEqual(ranUnder, { c1: 0.2, c2: 0.3 });
  } finally {
    await executor.close();
    await daemon.stop();
  }
});
