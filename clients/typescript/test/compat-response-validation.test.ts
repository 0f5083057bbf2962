/** "Tool Execution Error Handling - Architecture" (seed 000), its response validation
 * middleware under its own names: a request's messages and tool definitions, a response's
 * content, tool calls and results, call count == result count and the calls' ids matched
 * (errors naming the field), the auto-correction (missing results added as error
 * placeholders, extra ones dropped, the order fixed), sanitizing incomplete data, an error
 * response; and `reconcile`, errord's ReconcileResults, against errord as a process. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { ErrordClient } from "../src/index.js";
import {
  ResponseValidationMiddleware,
  responseValidationMiddleware,
} from "../src/compat/responseValidationMiddleware.js";
import type { ToolCall, ToolExecutionResult } from "../src/compat/toolExecutionService.js";
import { scratch, startErrord } from "./helpers.js";

const calls: ToolCall[] = [
  { id: "call-15", name: "tool_a", parameters: {} },
  { id: "call-16", name: "tool_b", parameters: {} },
];
const resultA: ToolExecutionResult = { toolName: "tool_a", callId: "call-15", status: "success", output: { a: 1 }, executionTime: 100 };
const resultB: ToolExecutionResult = { toolName: "tool_b", callId: "call-16", status: "success", output: { b: 2 }, executionTime: 50 };

test("validateRequest: messages present with a role and content, tools with a name; each error names its field", () => {
  const valid = responseValidationMiddleware.validateRequest({
    messages: [{ role: "user", content: "Weather in Oslo?" }],
    tools: [{ name: "get_weather", description: "Get current weather for a city", parameters: { city: { type: "string", required: true } } }],
  });
  assert.deepEqual(valid, { valid: true, errors: [] });
  assert.deepEqual(responseValidationMiddleware.validateRequest({ messages: [] }).errors, ["messages must be a non-empty array"]);
  const wrong = responseValidationMiddleware.validateRequest({
    messages: [{ role: "robot", content: 3 }],
    tools: [{ description: "no name" }],
  });
  assert.deepEqual(wrong.errors, [
    "messages[0].role must be one of: user, assistant, system, tool",
    "messages[0].content must be a string",
    "tools[0].name must be a non-empty string",
  ]);
});

test("validateResponse: content, tool calls and results whole, as many results as calls", () => {
  assert.deepEqual(responseValidationMiddleware.validateResponse({ content: "hi" }), { valid: true, errors: [] });
  assert.equal(responseValidationMiddleware.validateResponse({ content: "", toolCalls: calls, toolResults: [resultA, resultB] }).valid, true);
  const missing = responseValidationMiddleware.validateResponse({ toolCalls: calls, toolResults: [resultA] });
  assert.deepEqual(missing.errors, ["Result count (1) does not match call count (2)", "No result for tool call call-16 (tool_b)"]);
  const broken = responseValidationMiddleware.validateResponse({
    toolCalls: [{ id: "", name: "x" } as unknown as ToolCall],
    toolResults: [{ callId: "c", status: "done" } as unknown as ToolExecutionResult],
  });
  assert.deepEqual(broken.errors, [
    "toolCalls[0].id must be a non-empty string",
    "toolCalls[0].parameters must be an object",
    "toolResults[0].toolName must be a string",
    "toolResults[0].status must be one of: success, error, timeout",
    "toolResults[0].executionTime must be a number",
  ]);
});

test("validateToolCallResultMatch: a missing result gets an error placeholder, an extra one is dropped, the order follows the calls", () => {
  assert.deepEqual(responseValidationMiddleware.validateToolCallResultMatch(calls, [resultA, resultB]), { valid: true, errors: [] });
  const missing = responseValidationMiddleware.validateToolCallResultMatch(calls, [resultA]);
  assert.equal(missing.valid, false);
  assert.deepEqual(missing.correctedResults?.map((r) => [r.callId, r.status, r.error?.code]), [
    ["call-15", "success", undefined],
    ["call-16", "error", "MISSING_RESULT"],
  ]);
  const extra = { ...resultA, callId: "call-99" };
  const reordered = responseValidationMiddleware.validateToolCallResultMatch(calls, [resultB, extra, resultA]);
  assert.deepEqual(reordered.errors, ["Result count (3) does not match call count (2)", "Result for unknown tool call call-99"]);
  assert.deepEqual(reordered.correctedResults, [resultA, resultB]);
  const swapped = responseValidationMiddleware.validateToolCallResultMatch(calls, [resultB, resultA]);
  assert.match(swapped.errors.join(), /order mismatch/);
  assert.deepEqual(swapped.correctedResults, [resultA, resultB]);
});

test("sanitizeResponse keeps what is whole; createErrorResponse categorizes the error, technical message kept", () => {
  const sanitized = responseValidationMiddleware.sanitizeResponse({
    role: "assistant",
    content: undefined,
    toolCalls: [{ id: "c1", name: "search" } as unknown as ToolCall, { name: "no_id" } as unknown as ToolCall],
    toolResults: [resultA, { callId: "c2" } as unknown as ToolExecutionResult],
  });
  assert.deepEqual(sanitized, {
    role: "assistant",
    content: "",
    toolCalls: [{ id: "c1", name: "search", parameters: {} }],
    toolResults: [resultA],
  });
  assert.deepEqual(responseValidationMiddleware.sanitizeResponse(null as never), { content: "", toolCalls: [], toolResults: [] });
  const limited = responseValidationMiddleware.createErrorResponse(Object.assign(new Error("Too many requests"), { status: 429 }));
  assert.deepEqual([limited.error.code, limited.error.retryable, limited.error.message], ["RATE_LIMIT_ERROR", true, "Too many requests"]);
  assert.equal(limited.content, limited.error.userMessage);
  assert.deepEqual([limited.toolCalls, limited.toolResults], [[], []]);
  const auth = responseValidationMiddleware.createErrorResponse(Object.assign(new Error("Invalid API key"), { status: 401 }));
  assert.deepEqual([auth.error.code, auth.error.retryable], ["AUTHENTICATION_ERROR", false]);
});

test("reconcile: errord keeps the first result of each call, drops the unknown one and writes the missing one", async () => {
  const daemon = await startErrord(scratch(), "tools: []\n");
  const middleware = new ResponseValidationMiddleware({ client: new ErrordClient({ target: daemon.address }) });
  try {
    const extra = { ...resultA, callId: "call-99" };
    const reconciled = await middleware.reconcile("turn-reconcile", calls, [extra, resultA, { ...resultA, output: "second" }]);
    assert.equal(reconciled.length, 2);
    assert.equal(reconciled[0], resultA);
    const written = reconciled[1];
    assert.deepEqual([written?.callId, written?.toolName, written?.status, written?.error?.code], ["call-16", "tool_b", "error", "MISSING_RESULT"]);
    assert.match(written?.error?.message ?? "", /\S/);
  } finally {
    await daemon.stop();
  }
});
