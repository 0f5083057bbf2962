/**
 * The tool execution service of "Tool Execution Error Handling - Architecture", under its
 * own names and shapes, run by errord's executor: `@errord/client/compat/tool-execution-service`.
 *
 *     const service = new ToolExecutionService({ target: "127.0.0.1:50051" });
 *     const result = await service.executeTool({ id: "call-1", name: "get_weather", parameters: { city: "Oslo" } },
 *       async (call) => fetchWeather(call.parameters.city));
 *     result.status; // "success" | "error" | "timeout", never null
 *     service.getToolMetrics("get_weather"); // { totalExecutions, successCount, ... }
 *     await service.getCircuitBreakerState("get_weather"); // { failures, lastFailure, state }
 *
 * Each call is one executor turn: the attempt runs under its timeout (the call's `timeout`,
 * else the service's `defaultTimeout`, in ms), errord decides what follows a failure (the
 * retry and its delay, the manifest's alternative, giving up), errord's breakers refuse
 * calls while open, and the result takes the document's shape: `error.code` in the
 * document's categories, errord's words as `userMessage`, the technical message kept.
 *
 * Metrics count executions, as the document does: a call that succeeded on its fourth
 * attempt is one execution and one success. errord keeps the per-attempt figures
 * (GetToolStats, `errord stats`). Where the service deliberately differs from the document
 * (errord's retry policy and breakers rule; `retry`, `maxRetries`, `exponentialBackoff`
 * and `enableCircuitBreaker` are read and left to errord), clients/typescript/docs/coming-from.md
 * says why.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { Code } from "@connectrpc/connect";
import { OperatorClient } from "../client.js";
import { ErrordError } from "../errors.js";
import { BreakerPhase, type Breaker } from "../gen/errord/v1/errord_pb.js";
import type { Plain } from "../plain.js";
import { Executor } from "../executor/executor.js";
import type { Logger } from "../executor/link.js";
import type { ResultError, ToolResult } from "../executor/result.js";
import { ToolNotFound, ToolRegistry, type Tool, type ToolContext } from "../tools/registry.js";
import type { ConnectionOptions } from "../transport.js";

/** One tool call, as the model asked for it. */
export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly parameters: Record<string, unknown>;
}

/** What runs a call: its result, or a throw (a ToolExecutionError says its category).
 * `context.signal` aborts when the attempt's timeout passes. */
export type ToolImplementation = (call: ToolCall, context: ToolContext) => unknown;

/** How one call is run. */
export interface ToolExecutionOptions {
  /** Milliseconds an attempt may run (the service's `defaultTimeout`). */
  readonly timeout?: number;
  /** Read, and left to errord: it decides whether a failure is retried (see the module). */
  readonly retry?: boolean;
  readonly maxRetries?: number;
  readonly exponentialBackoff?: boolean;
  /** The output a call that did not succeed returns instead, `fallbackUsed` set. */
  readonly fallback?: unknown;
}

/** Why a call has no output of its own. */
export interface ToolErrorInfo {
  /** NETWORK_ERROR, TIMEOUT, RATE_LIMIT_ERROR, AUTHENTICATION_ERROR, VALIDATION_ERROR,
   * CIRCUIT_OPEN, TOOL_NOT_FOUND, or TOOL_EXECUTION_ERROR. */
  readonly code: string;
  /** The technical message, for debugging. */
  readonly message: string;
  /** errord's words for the user. */
  readonly userMessage: string;
  readonly retryable: boolean;
}

/** The structured result every call returns: never null or undefined. */
export interface ToolExecutionResult {
  readonly toolName: string;
  readonly callId: string;
  readonly status: "success" | "error" | "timeout";
  readonly output?: unknown;
  readonly error?: ToolErrorInfo;
  /** Milliseconds, every attempt and wait between them included. */
  readonly executionTime: number;
  /** True when the output is a fallback: the call's `fallback`, errord's default, or
   * the output of the manifest's alternative tool. */
  readonly fallbackUsed?: boolean;
}

/** A tool's executions since the service started (or its metrics were reset). */
export interface ToolMetrics {
  readonly totalExecutions: number;
  readonly successCount: number;
  readonly errorCount: number;
  readonly timeoutCount: number;
  /** Mean `executionTime` of its executions, in ms. */
  readonly avgExecutionTime: number;
  /** (errorCount + timeoutCount) / totalExecutions; 0 before any execution. */
  readonly failureRate: number;
}

/** A tool's circuit breaker, as errord keeps it. */
export interface CircuitBreakerState {
  /** Consecutive transient failures counted. */
  readonly failures: number;
  /** When this service last saw the tool fail (ms since the epoch), or when errord last
   * opened its breaker, whichever is later; 0 for neither. */
  readonly lastFailure: number;
  /** As of now: an open breaker past its break reads half-open. */
  readonly state: "closed" | "open" | "half-open";
}

/** A failure a tool throws in the document's categories: `code` is one of ToolErrorInfo's. */
export class ToolExecutionError extends Error {
  override readonly name = "ToolExecutionError";

  constructor(
    message: string,
    readonly code = "TOOL_EXECUTION_ERROR",
    readonly retryable = true,
  ) {
    super(message);
  }
}

/** How the service runs its calls and reaches errord. */
export interface ToolExecutionServiceOptions extends ConnectionOptions {
  /** Milliseconds an attempt may run when the call does not say (30000). */
  readonly defaultTimeout?: number;
  /** Read, and left to errord (see the module). */
  readonly maxRetries?: number;
  readonly enableCircuitBreaker?: boolean;
  /** Tools run by name when `executeTool` is given no implementation. */
  readonly tools?: Iterable<Tool>;
  /** errord's operator token (`operator.token` beside its database), for `resetCircuitBreaker`. */
  readonly operatorToken?: string;
  /** Seconds errord has to answer a failure before the executor's local policy decides (0.25). */
  readonly decisionTimeout?: number;
  readonly logger?: Logger;
}

/** Runs tool calls under errord and keeps per-execution metrics of each tool. */
export class ToolExecutionService {
  /** The executor that runs the calls. */
  readonly executor: Executor;
  private readonly registry: CallRegistry;
  private readonly defaultTimeout: number;
  private readonly operator: OperatorClient | undefined;
  private readonly logger: Logger;
  private readonly metrics = new Map<string, Counts>();
  /** When each tool last failed here (ms since the epoch). */
  private readonly lastFailures = new Map<string, number>();
  /** Breaker resets under way: the next calls wait for them. */
  private readonly resets = new Set<Promise<boolean>>();

  constructor(options: ToolExecutionServiceOptions = {}) {
    this.defaultTimeout = options.defaultTimeout ?? 30_000;
    this.registry = new CallRegistry(options.tools ?? []);
    this.logger = options.logger ?? console;
    this.executor = new Executor({ ...options, tools: this.registry, logger: this.logger });
    this.operator = options.operatorToken ? new OperatorClient({ ...options, token: options.operatorToken }) : undefined;
  }

  /** Run `toolCall` with `implementation` (else the tool registered under its name): its
   * structured result, whatever happens; a call that cannot be read (null, no id, no
   * name) gets an error result saying why. */
  async executeTool(toolCall: ToolCall, implementation?: ToolImplementation, options: ToolExecutionOptions = {}): Promise<ToolExecutionResult> {
    const [result] = await this.executeToolBatch([toolCall], implementation, options);
    return result as ToolExecutionResult;
  }

  /** Run `toolCalls` at once, as one turn: one result per call, in their order. */
  async executeToolBatch(
    toolCalls: readonly ToolCall[],
    implementation?: ToolImplementation,
    options: ToolExecutionOptions = {},
  ): Promise<ToolExecutionResult[]> {
    await Promise.all(this.resets);
    const calls = [...(toolCalls ?? [])];
    const timeout = options.timeout ?? this.defaultTimeout;
    const held: Held[] = [];
    const raws = calls.map((call) => {
      if (typeof call !== "object" || call === null) return call;
      if (typeof call.id === "string") held.push(this.registry.hold(call.id, { implementation, timeout }));
      return { id: call.id, name: call.name, arguments: call.parameters ?? {} };
    });
    let ran: ToolResult[];
    try {
      ran = await this.executor.run(raws as Parameters<Executor["run"]>[0]);
    } finally {
      for (const entry of held) this.registry.release(entry);
    }
    return ran.map((result) => this.record(shapeOf(result, options)));
  }

  /** Whether `results` answer `toolCalls` one to one, in order: `error` says how not. */
  validateResponseMatch(toolCalls: readonly ToolCall[], results: readonly ToolExecutionResult[]): { valid: boolean; error?: string } {
    if (results.length !== toolCalls.length) {
      return { valid: false, error: `Response count (${results.length}) does not match call count (${toolCalls.length})` };
    }
    const wrong = toolCalls.findIndex((call, position) => results[position]?.callId !== call.id);
    if (wrong >= 0) {
      const ids = new Set(results.map((result) => result.callId));
      const what = toolCalls.every((call) => ids.has(call.id)) ? "Response order mismatch" : "Response id mismatch";
      return { valid: false, error: `${what} at position ${wrong}: call ${toolCalls[wrong]?.id} got result ${results[wrong]?.callId}` };
    }
    return { valid: true };
  }

  /** The metrics of `toolName` (zeros for a tool not run yet), or of every tool run. */
  getToolMetrics(toolName: string): ToolMetrics;
  getToolMetrics(): Map<string, ToolMetrics>;
  getToolMetrics(toolName?: string): ToolMetrics | Map<string, ToolMetrics> {
    if (toolName !== undefined) return metricsOf(this.metrics.get(toolName));
    return new Map([...this.metrics].map(([name, counts]) => [name, metricsOf(counts)]));
  }

  /** `toolName`'s circuit breaker (GetBreaker, with the operator token): closed for a
   * tool errord does not know yet. Rejects when errord cannot say (no operator token,
   * errord away). */
  async getCircuitBreakerState(toolName: string): Promise<CircuitBreakerState> {
    if (this.operator === undefined) throw new Error("getCircuitBreakerState needs the service's operatorToken (operator.token beside errord's database)");
    const seen = this.lastFailures.get(toolName) ?? 0;
    let breaker: Plain<Breaker> | undefined;
    try {
      breaker = (await this.operator.getBreaker({ tool: toolName }, { timeout: 10 })).breaker;
    } catch (error) {
      if (error instanceof ErrordError && error.code === Code.NotFound) return { failures: 0, lastFailure: seen, state: "closed" };
      throw error;
    }
    const opened = breaker?.state?.openedAt?.getTime() ?? 0;
    return {
      failures: breaker?.state?.consecutiveFailures ?? 0,
      lastFailure: Math.max(seen, opened),
      state: PHASES[breaker?.effectivePhase ?? BreakerPhase.CLOSED] ?? "closed",
    };
  }

  /** Close `toolName`'s circuit breaker in errord (ResetBreaker, with the operator token),
   * for every executor, since errord keeps it; the calls made meanwhile wait for it. True
   * once errord closed it; false, with a warning, when it could not (no operator token,
   * errord away): it never rejects. */
  resetCircuitBreaker(toolName: string): Promise<boolean> {
    const reset = this.resetInErrord(toolName);
    this.resets.add(reset);
    void reset.then(() => this.resets.delete(reset));
    return reset;
  }

  private async resetInErrord(toolName: string): Promise<boolean> {
    if (this.operator === undefined) {
      this.logger.warn(`resetCircuitBreaker(${JSON.stringify(toolName)}): the service has no operatorToken, so errord's breaker stays as it is`);
      return false;
    }
    try {
      await this.operator.resetBreaker({ tool: toolName, by: "ToolExecutionService.resetCircuitBreaker" }, { timeout: 10 });
      return true;
    } catch (error) {
      this.logger.warn(`resetCircuitBreaker(${JSON.stringify(toolName)}): errord did not reset the breaker: ${String(error)}`);
      return false;
    }
  }

  /** Send what the executor still holds (`patience` seconds at most), then stop. */
  close(patience = 5): Promise<void> {
    return this.executor.close(patience);
  }

  private record(result: ToolExecutionResult): ToolExecutionResult {
    if (!result.toolName) return result;
    if (result.status !== "success") this.lastFailures.set(result.toolName, Date.now());
    const counts = this.metrics.get(result.toolName) ?? { executions: 0, successes: 0, errors: 0, timeouts: 0, time: 0 };
    this.metrics.set(result.toolName, {
      executions: counts.executions + 1,
      successes: counts.successes + (result.status === "success" ? 1 : 0),
      errors: counts.errors + (result.status === "error" ? 1 : 0),
      timeouts: counts.timeouts + (result.status === "timeout" ? 1 : 0),
      time: counts.time + result.executionTime,
    });
    return result;
  }
}

interface Counts {
  readonly executions: number;
  readonly successes: number;
  readonly errors: number;
  readonly timeouts: number;
  /** Sum of the executions' times, ms. */
  readonly time: number;
}

function metricsOf(counts: Counts | undefined): ToolMetrics {
  if (counts === undefined || counts.executions === 0) {
    return { totalExecutions: 0, successCount: 0, errorCount: 0, timeoutCount: 0, avgExecutionTime: 0, failureRate: 0 };
  }
  return {
    totalExecutions: counts.executions,
    successCount: counts.successes,
    errorCount: counts.errors,
    timeoutCount: counts.timeouts,
    avgExecutionTime: counts.time / counts.executions,
    failureRate: (counts.errors + counts.timeouts) / counts.executions,
  };
}

const PHASES: Partial<Record<BreakerPhase, CircuitBreakerState["state"]>> = {
  [BreakerPhase.CLOSED]: "closed",
  [BreakerPhase.OPEN]: "open",
  [BreakerPhase.HALF_OPEN]: "half-open",
};

/** The document's categories, by errord's error code. */
const CODES: Record<string, string> = {
  CONNECTION: "NETWORK_ERROR",
  UNAVAILABLE: "NETWORK_ERROR",
  TIMEOUT: "TIMEOUT",
  RATE_LIMITED: "RATE_LIMIT_ERROR",
  AUTH: "AUTHENTICATION_ERROR",
  INVALID_INPUT: "VALIDATION_ERROR",
  CIRCUIT_OPEN: "CIRCUIT_OPEN",
  TOOL_NOT_FOUND: "TOOL_NOT_FOUND",
};

/** The executor's result in the document's shape. */
function shapeOf(result: ToolResult, options: ToolExecutionOptions): ToolExecutionResult {
  const base = { toolName: result.tool, callId: result.callId, executionTime: result.executionTimeMs };
  if (result.status === "succeeded") {
    return { ...base, status: "success", output: result.output, ...(result.fallbackUsed ? { fallbackUsed: true } : {}) };
  }
  const status = result.status === "timed_out" ? "timeout" : "error";
  const error = errorOf(result.error);
  if (options.fallback !== undefined) return { ...base, status, output: options.fallback, error, fallbackUsed: true };
  if (result.status === "defaulted") return { ...base, status, output: result.output, error, fallbackUsed: true };
  return { ...base, status, error, ...(result.status === "partial" ? { output: result.output } : {}) };
}

function errorOf(error: ResultError | null): ToolErrorInfo {
  return {
    code: CODES[error?.code ?? ""] ?? "TOOL_EXECUTION_ERROR",
    message: error?.message ?? "",
    userMessage: error?.userMessage || "The tool could not complete this request.",
    retryable: error?.retryable ?? false,
  };
}

/** What the executor reads of a ToolExecutionError in errord's terms: its category as an
 * HTTP status, an error name or a connection code (errord classifies those). */
function asErrordReads(error: unknown): unknown {
  if (!(error instanceof ToolExecutionError)) return error;
  const as = (fields: object): Error => Object.assign(new Error(error.message), fields);
  switch (error.code) {
    case "AUTHENTICATION_ERROR":
      return as({ status: 401 });
    case "RATE_LIMIT_ERROR":
      return as({ status: 429 });
    case "VALIDATION_ERROR":
      return as({ name: "InvalidArguments" });
    case "NETWORK_ERROR":
      return as({ code: "ECONNRESET" });
    case "TIMEOUT":
      return as({ name: "TimeoutError" });
    default:
      return error;
  }
}

/** How one call in flight runs. */
interface Held {
  readonly callId: string;
  readonly implementation?: ToolImplementation;
  /** Milliseconds an attempt may run. */
  readonly timeout: number;
}

/** The registry the service's executor reads: the tools given by name, and for a call
 * given its implementation, that implementation under whichever name errord runs. */
class CallRegistry extends ToolRegistry {
  /** What each call id in flight runs with: the latest call of an id, while it runs. */
  private readonly held = new Map<string, Held[]>();

  hold(callId: string, how: Omit<Held, "callId">): Held {
    const entry = { callId, ...how };
    this.held.set(callId, [...(this.held.get(callId) ?? []), entry]);
    return entry;
  }

  release(entry: Held): void {
    const left = (this.held.get(entry.callId) ?? []).filter((other) => other !== entry);
    if (left.length > 0) this.held.set(entry.callId, left);
    else this.held.delete(entry.callId);
  }

  override get(name: string): Tool {
    let registered: Tool | undefined;
    try {
      registered = super.get(name);
    } catch (error) {
      if (!(error instanceof ToolNotFound)) throw error;
    }
    return {
      name,
      parameters: registered?.parameters,
      scope: registered?.scope,
      run: (args: JsonObject, context: ToolContext) => {
        const held = this.held.get(context.callId)?.at(-1);
        const implementation = held?.implementation;
        let run: (within: ToolContext) => unknown;
        if (implementation !== undefined) run = (within) => implementation({ id: context.callId, name, parameters: args }, within);
        else if (registered !== undefined) run = (within) => (registered as Tool).run(args, within);
        else throw new ToolNotFound(`unknown tool ${JSON.stringify(name)}; the tools are: ${this.names.sort().join(", ") || "none"}`);
        return runWithin(run, held?.timeout, name, context);
      },
    };
  }
}

/** `run`'s result, or a TimeoutError once `timeout` ms pass: the attempt is abandoned, and
 * the signal `run` is given aborts then (as it does when the executor abandons it). */
async function runWithin(
  run: (context: ToolContext) => unknown,
  timeout: number | undefined,
  name: string,
  context: ToolContext,
): Promise<unknown> {
  const controller = new AbortController();
  const stop = (reason: unknown): void => controller.abort(reason);
  const onAbort = (): void => stop(context.signal.reason);
  if (context.signal.aborted) onAbort();
  context.signal.addEventListener("abort", onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  if (timeout !== undefined) {
    timer = setTimeout(() => stop(Object.assign(new Error(`${name} exceeded timeout of ${timeout}ms`), { name: "TimeoutError" })), timeout);
  }
  const abandoned = new Promise<never>((_resolve, reject) => {
    if (controller.signal.aborted) reject(controller.signal.reason);
    controller.signal.addEventListener("abort", () => reject(controller.signal.reason), { once: true });
  });
  try {
    const running = Promise.resolve().then(() => run({ ...context, signal: controller.signal }));
    running.catch(() => undefined); // an abandoned attempt's late failure is nobody's
    return await Promise.race([running, abandoned]).catch((error: unknown) => {
      throw asErrordReads(error);
    });
  } finally {
    clearTimeout(timer);
    context.signal.removeEventListener("abort", onAbort);
  }
}
