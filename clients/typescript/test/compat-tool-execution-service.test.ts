/** "Tool Execution Error Handling - Architecture" (seed 000), its tool execution service
 * under its own names, against errord as a process: the structured result always returned
 * (null and a call without an id included), the error categories and whether each is
 * retryable, the timeout, the fallback, the batch (always as many results as calls), the
 * per-tool metrics counted per execution (a call that succeeded on its fourth attempt: 1
 * execution, 1 success, failure rate 0, while errord's per-attempt figures say 3
 * failures), and the circuit breaker: 5 consecutive failures open it, an open one fails
 * fast (CIRCUIT_OPEN, not retryable, the tool not run), getCircuitBreakerState says so,
 * resetCircuitBreaker closes it. The
 * document's numbers (100/200/400 ms, 4 attempts, 5 failures, 60 s) are errord's manifest. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { OperatorClient } from "../src/index.js";
import {
  ToolExecutionError,
  ToolExecutionService,
  type CircuitBreakerState,
  type ToolCall,
  type ToolExecutionResult,
  type ToolImplementation,
  type ToolMetrics,
} from "../src/compat/toolExecutionService.js";
import { scratch, startErrord, waitFor, type Daemon } from "./helpers.js";

/* The document's shapes, transcribed from its blocks (its "Structured Result", "Circuit
 * Breaker States per Tool" and "Metrics per Tool"), each named to be compared. */
type DocumentStructuredResult = {
    toolName: string,
    callId: string,
    status: 'success' | 'error' | 'timeout',
    output?: any,
    error?: {
      code: string,
      message: string,        // Technical
      userMessage: string,    // User-friendly
      retryable: boolean
    },
    executionTime: number,
    fallbackUsed?: boolean
  };

type DocumentCircuitBreakerState = {
  failures: number         // Count of consecutive failures
  lastFailure: number      // Timestamp of last failure
  state: 'closed' | 'open' | 'half-open'
};

type DocumentToolMetrics = {
  totalExecutions: number
  successCount: number
  errorCount: number
  timeoutCount: number
  avgExecutionTime: number
  failureRate: number
};

/** true when each of A and B can stand for the other. */
type Interchangeable<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
const SHAPES: [
  Interchangeable<ToolExecutionResult, DocumentStructuredResult>,
  Interchangeable<CircuitBreakerState, DocumentCircuitBreakerState>,
  Interchangeable<ToolMetrics, DocumentToolMetrics>,
  Interchangeable<ReturnType<ToolExecutionService["getToolMetrics"]>, Map<string, DocumentToolMetrics>>,
] = [true, true, true, true];

/** The document's retry and breaker numbers, as errord's manifest says them. */
function documentManifest(...names: string[]): string {
  return `tools:\n${names
    .map(
      (name) =>
        `  - name: ${name}\n` +
        "    retry_policy: {initial_delay_ms: 100, multiplier: 2.0, max_delay_ms: 400, jitter_percent: 0, max_attempts: 4}\n" +
        "    circuit_breaker: {failure_threshold: 5, first_timeout_ms: 60000, timeout_ms: 60000}\n",
    )
    .join("")}`;
}

async function withService(
  yaml: string,
  body: (service: ToolExecutionService, daemon: Daemon) => Promise<void>,
): Promise<void> {
  const daemon = await startErrord(scratch(), yaml);
  const service = new ToolExecutionService({ target: daemon.address, operatorToken: daemon.token, decisionTimeout: 10 });
  try {
    await body(service, daemon);
  } finally {
    await service.close();
    await daemon.stop();
  }
}

const fail = (error: Error) => () => {
  throw error;
};

/** An implementation that answers after 10 s, or stops when its signal aborts, noting why. */
function slow(stopped: string[] = []): ToolImplementation {
  return (_call, { signal }) =>
    new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, 10_000);
      signal.addEventListener("abort", () => {
        clearTimeout(timer);
        stopped.push(String((signal.reason as Error).message));
        reject(signal.reason);
      });
    });
}

test("the service's types are the document's: its structured result, breaker state and metrics (compiled), and what getToolMetrics gives", () => {
  assert.deepEqual(SHAPES, [true, true, true, true]);
  const service = new ToolExecutionService({ target: "127.0.0.1:1" });
  const all: Map<string, DocumentToolMetrics> = service.getToolMetrics();
  const one: DocumentToolMetrics = service.getToolMetrics("get_weather");
  assert.deepEqual([all.size, one.totalExecutions], [0, 0]);
});

test("a success is the document's structured result: toolName, callId, status, output, executionTime", async () => {
  await withService(documentManifest("get_weather"), async (service) => {
    const toolCall: ToolCall = { id: "call-1", name: "get_weather", parameters: { city: "San Francisco" } };
    const result: DocumentStructuredResult = await service.executeTool(toolCall, async (call) => ({
      city: call.parameters["city"],
      temperature: 72,
    }));
    assert.deepEqual(Object.keys(result).sort(), ["callId", "executionTime", "output", "status", "toolName"]);
    assert.deepEqual([result.toolName, result.callId, result.status], ["get_weather", "call-1", "success"]);
    assert.deepEqual(result.output, { city: "San Francisco", temperature: 72 });
    assert.equal(typeof result.executionTime, "number");
    assert.equal(result.error, undefined);
  });
});

test("executeTool(null) and a call without an id return a structured error result, never throw", async () => {
  await withService("tools: []\n", async (service) => {
    let runs = 0;
    const run = () => (runs += 1);
    const nothing = await service.executeTool(null as unknown as ToolCall, run);
    const noId = await service.executeTool({ name: "search", parameters: {} } as unknown as ToolCall, run);
    for (const result of [nothing, noId]) {
      assert.equal(result.status, "error");
      assert.equal(result.error?.code, "VALIDATION_ERROR");
      assert.equal(result.error?.retryable, false);
      assert.ok(result.error?.userMessage);
      assert.equal(typeof result.executionTime, "number");
    }
    assert.match(nothing.error?.message ?? "", /got null/);
    assert.deepEqual([noId.toolName, noId.callId], ["search", ""]);
    assert.match(noId.error?.message ?? "", /has no "id"/);
    assert.equal(runs, 0);
  });
});

test("errors are categorized as the document's table says: network, timeout and rate limit retryable; authentication, validation not", async () => {
  const yaml = documentManifest("net", "slow", "limited", "auth", "validate");
  await withService(yaml, async (service) => {
    const cases: [string, ToolImplementation, string, boolean, ToolExecutionResult["status"]][] = [
      ["net", fail(Object.assign(new Error("connect ECONNREFUSED 10.0.0.1:443"), { code: "ECONNREFUSED" })), "NETWORK_ERROR", true, "error"],
      ["slow", slow(), "TIMEOUT", true, "timeout"],
      ["limited", fail(Object.assign(new Error("Rate limit exceeded"), { status: 429 })), "RATE_LIMIT_ERROR", true, "error"],
      ["auth", fail(new ToolExecutionError("Unauthorized", "AUTHENTICATION_ERROR", false)), "AUTHENTICATION_ERROR", false, "error"],
      ["validate", fail(new ToolExecutionError("Invalid input", "VALIDATION_ERROR", false)), "VALIDATION_ERROR", false, "error"],
    ];
    for (const [name, run, code, retryable, status] of cases) {
      const result = await service.executeTool({ id: `c-${name}`, name, parameters: {} }, run, { timeout: 100 });
      assert.deepEqual(
        [result.status, result.error?.code, result.error?.retryable],
        [status, code, retryable],
        `${name}: ${JSON.stringify(result.error)}`,
      );
      assert.ok(result.error?.userMessage, `${name} has no user message`);
    }
  });
});

test("a timeout: each attempt's signal aborts after the call's timeout, status timeout, the technical message kept", async () => {
  await withService(documentManifest("long_operation"), async (service) => {
    const toolCall: ToolCall = { id: "call-6", name: "long_operation", parameters: {} };
    const stopped: string[] = [];
    const result = await service.executeTool(toolCall, slow(stopped), { timeout: 100 });
    assert.deepEqual([result.status, result.error?.code], ["timeout", "TIMEOUT"]);
    assert.match(result.error?.message ?? "", /exceeded timeout of 100ms/);
    assert.deepEqual(stopped, Array(4).fill("long_operation exceeded timeout of 100ms"), "the document's 4 attempts, each stopped");
  });
});

test("a fallback: the call that failed returns it, status error, fallbackUsed", async () => {
  await withService(documentManifest("weather_tool"), async (service) => {
    const fallback = { temperature: null, conditions: "unavailable" };
    const toolCall: ToolCall = { id: "call-26", name: "weather_tool", parameters: { city: "Unknown" } };
    const result = await service.executeTool(toolCall, fail(new ToolExecutionError("City not found", "VALIDATION_ERROR", false)), { fallback });
    assert.deepEqual([result.status, result.fallbackUsed, result.output], ["error", true, fallback]);
  });
});

test("a batch: as many results as calls, in order; one failing leaves the others their success", async () => {
  await withService(documentManifest("tool_a", "tool_b", "tool_c"), async (service) => {
    const toolCalls: ToolCall[] = [
      { id: "call-27", name: "tool_a", parameters: {} },
      { id: "call-28", name: "tool_b", parameters: {} },
      { id: "call-29", name: "tool_c", parameters: {} },
    ];
    const results = await service.executeToolBatch(toolCalls, (call) => {
      if (call.id === "call-28") throw new ToolExecutionError("Tool B failed", "VALIDATION_ERROR", false);
      return { ok: true };
    });
    assert.deepEqual(results.map((r) => [r.callId, r.status]), [["call-27", "success"], ["call-28", "error"], ["call-29", "success"]]);
    assert.deepEqual(service.validateResponseMatch(toolCalls, results), { valid: true });
    assert.deepEqual(service.validateResponseMatch(toolCalls, results.slice(0, 1)), {
      valid: false,
      error: "Response count (1) does not match call count (3)",
    });
    const swapped = [results[1], results[0], results[2]] as ToolExecutionResult[];
    assert.match(service.validateResponseMatch(toolCalls, swapped).error ?? "", /order mismatch/);
  });
});

test("metrics count executions: a call that succeeded on its fourth attempt is 1 execution, 1 success, failure rate 0; errord counts 3 failed attempts", async () => {
  await withService(documentManifest("flaky_tool", "failure_tracking_tool"), async (service, daemon) => {
    let attempts = 0;
    const flaky = () => {
      attempts += 1;
      if (attempts < 4) throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      return { success: true };
    };
    const result = await service.executeTool({ id: "call-8", name: "flaky_tool", parameters: {} }, flaky);
    assert.deepEqual([result.status, attempts], ["success", 4]);
    const metrics: ToolMetrics = service.getToolMetrics("flaky_tool");
    assert.deepEqual(
      [metrics.totalExecutions, metrics.successCount, metrics.errorCount, metrics.timeoutCount, metrics.failureRate],
      [1, 1, 0, 0, 0],
    );
    assert.equal(metrics.avgExecutionTime, result.executionTime);

    const operator = new OperatorClient({ target: daemon.address, token: daemon.token });
    const perAttempt = await waitFor(async () => {
      const { tools } = await operator.getToolStats({ tool: "flaky_tool" }, { timeout: 10 });
      const stats = tools[0];
      return stats !== undefined && stats.successes === 1n ? stats : undefined;
    }, "errord to record the success (outcomes go in the background)");
    assert.deepEqual([perAttempt.executions, perAttempt.errors], [4n, 3n]);

    let calls = 0;
    const twoFailuresThenSuccess = () => {
      calls += 1;
      if (calls <= 2) throw new ToolExecutionError("Fail", "VALIDATION_ERROR", false);
      return { ok: true };
    };
    for (const id of ["call-25a", "call-25b", "call-25c"]) {
      await service.executeTool({ id, name: "failure_tracking_tool", parameters: {} }, twoFailuresThenSuccess);
    }
    const tracked = service.getToolMetrics("failure_tracking_tool");
    assert.deepEqual([tracked.totalExecutions, tracked.successCount, tracked.errorCount], [3, 1, 2]);
    assert.ok(Math.abs(tracked.failureRate - 2 / 3) < 1e-9);
    assert.deepEqual([...service.getToolMetrics().keys()].sort(), ["failure_tracking_tool", "flaky_tool"]);
    assert.deepEqual(service.getToolMetrics("never_run"), {
      totalExecutions: 0,
      successCount: 0,
      errorCount: 0,
      timeoutCount: 0,
      avgExecutionTime: 0,
      failureRate: 0,
    });
  });
});

test("the circuit breaker: 5 consecutive failures open it, an open one fails fast with CIRCUIT_OPEN (not retryable, not run), getCircuitBreakerState says so, resetCircuitBreaker closes it", async () => {
  await withService(documentManifest("unstable_service"), async (service) => {
    let runs = 0;
    let healthy = false;
    const unstable = () => {
      runs += 1;
      if (healthy) return { recovered: true };
      throw Object.assign(new Error("Service unavailable"), { status: 503 });
    };
    const call = (id: string): ToolCall => ({ id, name: "unstable_service", parameters: {} });
    assert.deepEqual(await service.getCircuitBreakerState("unstable_service"), { failures: 0, lastFailure: 0, state: "closed" });
    const first = await service.executeTool(call("call-19a"), unstable);
    assert.equal(first.status, "error");
    assert.equal(runs, 4, "the document's 4 attempts");
    const second = await service.executeTool(call("call-19b"), unstable);
    assert.equal(second.status, "error");
    assert.equal(runs, 5, "the fifth consecutive failure opens the breaker: no retry after it");

    await waitFor(() => !service.executor.board.closed("unstable_service"), "the service's executor to see the breaker open");
    const refused = await service.executeTool(call("call-19c"), unstable);
    assert.deepEqual(
      [refused.status, refused.error?.code, refused.error?.retryable, runs],
      ["error", "CIRCUIT_OPEN", false, 5],
    );
    assert.match(refused.error?.userMessage ?? "", /\S/);
    const open: CircuitBreakerState = await service.getCircuitBreakerState("unstable_service");
    assert.equal(open.state, "open");
    assert.ok(open.lastFailure > 0);

    healthy = true;
    assert.equal(await service.resetCircuitBreaker("unstable_service"), true);
    const recovered = await service.executeTool(call("call-20"), unstable);
    assert.deepEqual([recovered.status, recovered.output], ["success", { recovered: true }]);
    assert.deepEqual((await service.getCircuitBreakerState("unstable_service")).state, "closed");
  });
});

test("resetCircuitBreaker without the operator token says so and resolves false, never rejects", async () => {
  const daemon = await startErrord(scratch(), "tools: []\n");
  const warnings: string[] = [];
  const service = new ToolExecutionService({ target: daemon.address, logger: { warn: (text: string) => warnings.push(text) } });
  try {
    assert.equal(await service.resetCircuitBreaker("search"), false);
    assert.match(warnings.join("\n"), /no operatorToken/);
  } finally {
    await service.close();
    await daemon.stop();
  }
});

test("errord away: every call still gets its structured result, decided by the executor's local policy", async () => {
  const service = new ToolExecutionService({ target: "127.0.0.1:1", decisionTimeout: 0.05, attempts: 1, logger: { warn() {} } });
  try {
    const denied = await service.executeTool(
      { id: "call-a", name: "auth_tool", parameters: {} },
      fail(new ToolExecutionError("Unauthorized", "AUTHENTICATION_ERROR", false)),
    );
    assert.deepEqual([denied.status, denied.error?.code, denied.error?.retryable], ["error", "AUTHENTICATION_ERROR", false]);
    const fine = await service.executeTool({ id: "call-b", name: "ok_tool", parameters: {} }, () => ({ ok: true }));
    assert.deepEqual([fine.status, fine.output], ["success", { ok: true }]);
    assert.deepEqual([service.getToolMetrics("auth_tool").errorCount, service.getToolMetrics("ok_tool").successCount], [1, 1]);
  } finally {
    await service.close(0.1); // the success's outcome has nowhere to go
  }
});
