/** The "tool-execution Specification" (seed 001) under its own names, against errord as a
 * process: its scenarios one by one, each with the specification's result shape
 * ({success: true, result, tool_name, execution_time_ms} or {success: false, error:
 * "<string>", tool_name, execution_time_ms}) and its words: tool not found, a missing
 * parameter, a wrong type, an enum listing its valid options, extra parameters ignored, a
 * tool that throws, a mock tool (its static response, under 10 ms), builtin math_eval
 * (evaluated safely: no eval()) and echo, builtin and internal handlers not found, and an
 * internal tool's handler. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { OperatorClient } from "../src/index.js";
import {
  ToolExecutor,
  ToolHandlers,
  ToolRegistry,
  type ToolDefinition,
  type ToolExecutionResult,
} from "../src/compat/toolExecution.js";
import { InvalidExpression, mathEval } from "../src/compat/mathEval.js";
import { scratch, startErrord, waitFor, type Daemon } from "./helpers.js";

/* The specification's result structures ("Error Result Format"), as types: a result is
 * one or the other, and each is the module's. */
type SpecificationSuccess = { success: true; result: unknown; tool_name: string; execution_time_ms: number };
type SpecificationFailure = { success: false; error: string; tool_name: string; execution_time_ms: number };
type Interchangeable<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const SHAPE: Interchangeable<ToolExecutionResult, SpecificationSuccess | SpecificationFailure> = true;

const WEATHER: ToolDefinition = {
  name: "get_weather",
  description: "The weather of a city",
  parameters: {
    type: "object",
    properties: {
      city: { type: "string" },
      days: { type: "integer" },
      unit: { type: "string", enum: ["celsius", "fahrenheit"] },
    },
    required: ["city"],
  },
  implementation: { type: "mock", mock_response: { temperature: 21, conditions: "sunny" } },
};
const CALCULATOR: ToolDefinition = {
  name: "calculator",
  parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] },
  implementation: { type: "builtin", handler: "math_eval" },
};
const ECHO: ToolDefinition = { name: "echo", implementation: { type: "builtin", handler: "echo" } };
const SEARCH_DOCS: ToolDefinition = {
  name: "search_docs",
  parameters: { type: "object", properties: { query: { type: "string" } }, required: ["query"] },
  implementation: { type: "internal", handler: "rag_search" },
};
const MISSING_BUILTIN: ToolDefinition = { name: "translate", implementation: { type: "builtin", handler: "translate_text" } };
const MISSING_INTERNAL: ToolDefinition = { name: "list_collections", implementation: { type: "internal", handler: "collections" } };

async function withExecutor(body: (executor: ToolExecutor, searches: Record<string, unknown>[], daemon: Daemon) => Promise<void>): Promise<void> {
  const daemon = await startErrord(scratch(), "tools: []\n");
  const handlers = new ToolHandlers();
  const searches: Record<string, unknown>[] = [];
  handlers.registerInternal("rag_search", (params) => {
    searches.push(params);
    return { documents: [`about ${String(params["query"])}`] };
  });
  const registry = new ToolRegistry([WEATHER, CALCULATOR, ECHO, SEARCH_DOCS, MISSING_BUILTIN, MISSING_INTERNAL]);
  const executor = new ToolExecutor(registry, { handlers, target: daemon.address, decisionTimeout: 10 });
  try {
    await body(executor, searches, daemon);
  } finally {
    await executor.close();
    await daemon.stop();
  }
}

/** `result` without its time, after checking the time is a number of ms. */
function untimed(result: ToolExecutionResult): Omit<ToolExecutionResult, "execution_time_ms"> {
  assert.equal(typeof result.execution_time_ms, "number");
  assert.ok(result.execution_time_ms >= 0);
  const { execution_time_ms: _time, ...rest } = result;
  return rest;
}

test("a valid call: {success: true, result, tool_name, execution_time_ms}", async () => {
  assert.equal(SHAPE, true, "the results' type is the specification's (compiled)");
  await withExecutor(async (executor) => {
    const result = await executor.execute("get_weather", { city: "Oslo" });
    assert.deepEqual(Object.keys(result).sort(), ["execution_time_ms", "result", "success", "tool_name"]);
    assert.deepEqual(untimed(result), { success: true, result: { temperature: 21, conditions: "sunny" }, tool_name: "get_weather" });
  });
});

test("tool not found: {success: false, error: \"Tool '<name>' not found\"}, no exception", async () => {
  await withExecutor(async (executor) => {
    const result = await executor.execute("get_stock_price", { symbol: "ACME" });
    assert.deepEqual(Object.keys(result).sort(), ["error", "execution_time_ms", "success", "tool_name"]);
    assert.deepEqual(untimed(result), { success: false, error: "Tool 'get_stock_price' not found", tool_name: "get_stock_price" });
  });
});

test("a missing required parameter: \"Invalid parameters: missing '<param>'\", the tool not executed", async () => {
  await withExecutor(async (executor, searches) => {
    const result = await executor.execute("search_docs", {});
    assert.deepEqual(untimed(result), { success: false, error: "Invalid parameters: missing 'query'", tool_name: "search_docs" });
    assert.equal(searches.length, 0);
  });
});

test("types: an integer must be Number.isInteger, a string typeof 'string'", async () => {
  await withExecutor(async (executor) => {
    const fraction = await executor.execute("get_weather", { city: "Oslo", days: 2.5 });
    assert.deepEqual(untimed(fraction), { success: false, error: "Invalid parameters: 'days' must be integer, got number", tool_name: "get_weather" });
    const number = await executor.execute("get_weather", { city: 42 });
    assert.deepEqual(untimed(number), { success: false, error: "Invalid parameters: 'city' must be string, got number", tool_name: "get_weather" });
    const whole = await executor.execute("get_weather", { city: "Oslo", days: 3 });
    assert.equal(whole.success, true);
  });
});

test("an enum: a value outside it fails listing the valid options", async () => {
  await withExecutor(async (executor) => {
    const result = await executor.execute("get_weather", { city: "Oslo", unit: "kelvin" });
    assert.deepEqual(untimed(result), {
      success: false,
      error: "Invalid parameters: 'unit' must be one of: celsius, fahrenheit",
      tool_name: "get_weather",
    });
    assert.equal((await executor.execute("get_weather", { city: "Oslo", unit: "celsius" })).success, true);
  });
});

test("extra parameters are ignored: validation looks only at the defined ones", async () => {
  await withExecutor(async (executor, searches) => {
    const result = await executor.execute("search_docs", { query: "errord", page: 2, verbose: true });
    assert.deepEqual(untimed(result), { success: true, result: { documents: ["about errord"] }, tool_name: "search_docs" });
    assert.equal(searches.length, 1);
  });
});

test("a mock tool returns its mock_response directly, in under 10 ms, without waiting on errord", async () => {
  await withExecutor(async (executor) => {
    await executor.execute("get_weather", { city: "warm-up" }); // the first call starts the executor
    let asked = 0;
    const admit = executor.executor.link.admit.bind(executor.executor.link);
    const decide = executor.executor.link.decide.bind(executor.executor.link);
    executor.executor.link.admit = (request) => ((asked += 1), admit(request));
    executor.executor.link.decide = (request) => ((asked += 1), decide(request));
    const times: number[] = [];
    for (let n = 0; n < 20; n += 1) {
      const result = await executor.execute("get_weather", { city: "Oslo", ignored: n });
      assert.deepEqual(result.success && result.result, { temperature: 21, conditions: "sunny" });
      times.push(result.execution_time_ms);
    }
    assert.equal(asked, 0, "a mock's success asks errord nothing on its way (its outcome goes in the background)");
    // The fastest of 20 runs: a machine's load can stretch one run, not every one.
    assert.ok(Math.min(...times) < 10, `the fastest mock call took ${Math.min(...times)} ms`);
  });
});

test("builtin math_eval: {expression: \"2+2\"} gives {result: 4}; an invalid expression fails with a descriptive message; nothing is eval()'d", async () => {
  await withExecutor(async (executor) => {
    const four = await executor.execute("calculator", { expression: "2+2" });
    assert.deepEqual(untimed(four), { success: true, result: { result: 4 }, tool_name: "calculator" });
    const invalid = await executor.execute("calculator", { expression: "2 +* 3" });
    assert.deepEqual(untimed(invalid), {
      success: false,
      error: 'Invalid expression "2 +* 3": expected a number, got "*" at position 4',
      tool_name: "calculator",
    });
    const code = await executor.execute("calculator", { expression: "process.exit(1)" });
    assert.equal(code.success, false);
    assert.match(code.success ? "" : code.error, /unexpected "\." at position 8/);
  });
  assert.deepEqual(
    ["2 * (3 + 4) - 10 / 4", "-2^2", "2^3^2", "sqrt(16) + max(1, 5)", "1/0"].map(mathEval),
    [11.5, -4, 512, 9, Infinity],
  );
  assert.throws(() => mathEval("constructor"), InvalidExpression);
});

test("builtin echo mirrors its parameters: {echo: <parameters>}", async () => {
  await withExecutor(async (executor) => {
    const result = await executor.execute("echo", { text: "hello", n: 2 });
    assert.deepEqual(untimed(result), { success: true, result: { echo: { text: "hello", n: 2 } }, tool_name: "echo" });
  });
});

test("builtin and internal handlers not found: \"Builtin handler '<name>' not found\", \"Internal handler '<name>' not found\", tried once", async () => {
  await withExecutor(async (executor, _searches, daemon) => {
    const builtin = await executor.execute("translate", { text: "hei" });
    assert.deepEqual(untimed(builtin), { success: false, error: "Builtin handler 'translate_text' not found", tool_name: "translate" });
    const internal = await executor.execute("list_collections", {});
    assert.deepEqual(untimed(internal), { success: false, error: "Internal handler 'collections' not found", tool_name: "list_collections" });
    const operator = new OperatorClient({ target: daemon.address, token: daemon.token });
    for (const tool of ["translate", "list_collections"]) {
      const stats = await waitFor(async () => (await operator.getToolStats({ tool }, { timeout: 10 })).tools[0], `errord's stats of ${tool}`);
      assert.deepEqual([stats.executions, stats.errors, stats.permanentErrors], [1n, 1n, 1n], `${tool} was tried once`);
    }
  });
});

test("an internal tool calls its service's handler with the parameters and returns its result", async () => {
  await withExecutor(async (executor, searches) => {
    const result = await executor.execute("search_docs", { query: "breakers" });
    assert.deepEqual(untimed(result), { success: true, result: { documents: ["about breakers"] }, tool_name: "search_docs" });
    assert.deepEqual(searches, [{ query: "breakers" }]);
  });
});

test("a tool that throws: the exception caught, its message the error", async () => {
  const daemon = await startErrord(scratch(), "tools: []\n");
  const handlers = new ToolHandlers();
  handlers.registerInternal("billing", () => {
    throw new Error("account 42 is closed");
  });
  const registry = new ToolRegistry([{ name: "charge", implementation: { type: "internal", handler: "billing" } }]);
  const executor = new ToolExecutor(registry, { handlers, target: daemon.address, decisionTimeout: 10 });
  try {
    const result = await executor.execute("charge", { amount: 5 });
    assert.deepEqual(untimed(result), { success: false, error: "account 42 is closed", tool_name: "charge" });
  } finally {
    await executor.close();
    await daemon.stop();
  }
});
