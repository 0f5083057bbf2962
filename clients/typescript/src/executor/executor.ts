/**
 * The executor: runs a model's tool calls and follows errord's decisions on their failures.
 *
 *     const executor = new Executor({ tools: [flightSearch, hotelSearch] });
 *     const results = await executor.run(toolCalls); // one result per call, in order
 *     const messages = results.map(toOpenAI);
 *
 * For each call: admission (the breaker, as errord last said, in memory; AdmitCall only
 * when it is not closed), the attempt under its timeout (its `signal` aborts and the
 * attempt is abandoned when it passes), and on a failure errord's decision, followed
 * (wait and retry, the alternative, the partial result, the default, skip, back to the
 * model, escalate, fail) until the call has its result. A decision's consequences apply
 * to the calls of the batch that wait on the failed one. Successes are reported in the
 * background. When errord does not answer in time the local policy decides, and the
 * result says so (`decidedBy` is "local").
 */
import { randomUUID } from "node:crypto";
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";
import { ErrordClient } from "../client.js";
import { Outcome } from "../gen/errord/v1/errord_pb.js";
import type { ConnectionOptions } from "../transport.js";
import { acceptArguments, InvalidArguments, ToolNotFound, ToolRegistry, type Tool, type ToolFunction } from "../tools/registry.js";
import { boardKey, sleep, ToolBoard } from "./board.js";
import { toolCall, type RawToolCall, type ToolCall } from "./calls.js";
import { declarationOf } from "./declarations.js";
import { failure, failureFromError, toToolError, type ToolFailure } from "./failures.js";
import { ErrordLink, type Logger } from "./link.js";
import { LocalPolicy } from "./localPolicy.js";
import { planOf, type Plan } from "./plan.js";
import type { DecidedBy, ResultError, ResultStatus, ToolResult } from "./result.js";
import { fromDecision, type Action, type Consequence, type Verdict } from "./verdict.js";

/** The result of a call whose last verdict is not to try again. */
const ENDINGS: Partial<Record<Action, ResultStatus>> = {
  CONTINUE_PARTIAL: "partial",
  USE_DEFAULT: "defaulted",
  SKIP: "skipped",
  RETURN_TO_MODEL: "returned_to_model",
  ESCALATE: "escalated",
  FAIL: "failed",
};

/** How an executor runs its tools and reaches errord. */
export interface ExecutorOptions extends ConnectionOptions {
  /** The tools: Tools, functions (registered by name), or a ToolRegistry. */
  readonly tools?: ToolRegistry | Iterable<Tool | ToolFunction>;
  /** Seconds errord has to answer a failure before the local policy decides (0.25). */
  readonly decisionTimeout?: number;
  /** What decides while errord does not answer. */
  readonly localPolicy?: LocalPolicy;
  /** Seconds an attempt may run when errord has not said (30). */
  readonly defaultTimeout?: number;
  /** Keep errord's breakers and timeouts in memory (WatchTools); true by default. */
  readonly watchTools?: boolean;
  /** Where the executor says that errord stopped, or started again, answering (console). */
  readonly logger?: Logger;
}

/** Options of one batch. */
export interface RunOptions {
  /** errord's turn for the batch; a new one by default. */
  readonly turnId?: string;
}

/** Runs tool calls under errord. */
export class Executor {
  readonly registry: ToolRegistry;
  readonly localPolicy: LocalPolicy;
  readonly board: ToolBoard;
  readonly client: ErrordClient;
  /** @internal */
  readonly link: ErrordLink;
  private readonly watching = new AbortController();
  private watch: Promise<void> | undefined;
  private ready: Promise<void> | undefined;
  private readonly watchTools: boolean;

  constructor(options: ExecutorOptions = {}) {
    const tools = options.tools ?? [];
    this.registry = tools instanceof ToolRegistry ? tools : new ToolRegistry(tools);
    this.localPolicy = options.localPolicy ?? new LocalPolicy();
    this.board = new ToolBoard(options.defaultTimeout ?? 30);
    this.client = new ErrordClient(options);
    this.link = new ErrordLink(this.client, options.logger ?? console, options.decisionTimeout ?? 0.25);
    this.watchTools = options.watchTools ?? true;
  }

  /** Connect and wait, `syncTimeout` seconds at most, for errord's tool policies (their
   * timeouts and breakers). The first batch starts the executor by itself, and waits so
   * too; calling this ahead spares the first calls the wait. */
  start(syncTimeout = 1): Promise<void> {
    this.ready ??= this.sync(syncTimeout);
    return this.ready;
  }

  private async sync(syncTimeout: number): Promise<void> {
    if (this.watchTools) {
      this.watch = this.board.follow(this.client, this.watching.signal);
      await Promise.race([this.board.whenSynced(), sleep(syncTimeout, this.watching.signal)]);
    }
  }

  /** Send what is still queued (`patience` seconds at most), then stop. */
  async close(patience = 5): Promise<void> {
    await this.link.drain(patience);
    this.link.close();
    this.watching.abort();
    await this.watch;
  }

  /** Run one call as a turn of its own. */
  async runOne(call: RawToolCall, options: RunOptions = {}): Promise<ToolResult> {
    const [result] = await this.run([call], options);
    return result as ToolResult;
  }

  /** Run `calls` as one turn: independent calls at once, a call after those it
   * `dependsOn`. One result per call, in order; never rejects for a tool's failure or
   * errord's, nor for a call that cannot be read (null, or without an id or a name): its
   * result is failed, INVALID_INPUT, and says why. */
  async run(calls: readonly RawToolCall[], options: RunOptions = {}): Promise<ToolResult[]> {
    await this.start();
    const turnId = options.turnId ?? `turn-${randomUUID()}`;
    const read = [...calls].map(readCall);
    const readable = read.filter((call): call is ToolCall => "name" in call);
    const batch = new Batch(turnId, planOf(readable));
    if (batch.plan.dependencies) await this.link.beginTurn(batch.plan.begin(turnId));
    const ran = await Promise.all(
      batch.plan.calls.map((call, position) =>
        batch.plan.repeated.has(position)
          ? ended(call, "failed", `an earlier call of the batch has the id ${call.callId}`)
          : this.runCall(call, batch),
      ),
    );
    if (ran.length > 0) this.link.endTurn(turnId);
    let next = 0;
    return read.map((call) => ("name" in call ? (ran[next++] as ToolResult) : unreadable(call)));
  }

  private async runCall(call: ToolCall, batch: Batch): Promise<ToolResult> {
    const started = performance.now();
    let result: ToolResult;
    try {
      result = (await batch.blocked(call)) ?? (await new CallRun(this, call, batch).run());
    } catch (error) {
      // A bug here must not cost the other calls their results.
      result = {
        ...ended(call, "failed", `the call could not be run: ${String(error)}`),
        error: { ...NO_ERROR, code: "UNKNOWN", message: String(error), userMessage: "Something went wrong." },
      };
    }
    result = { ...result, executionTimeMs: performance.now() - started };
    batch.finish(call.callId, result);
    return result;
  }
}

/** The calls of one batch: their results as they come, and what cascades to them. */
class Batch {
  readonly results = new Map<string, ToolResult>();
  private readonly done = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  private readonly forced = new Map<string, Consequence>();

  constructor(
    readonly turnId: string,
    readonly plan: Plan,
  ) {
    for (const call of plan.calls) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((wake) => (resolve = wake));
      this.done.set(call.callId, { promise, resolve });
    }
  }

  finish(callId: string, result: ToolResult): void {
    if (!this.results.has(callId)) this.results.set(callId, result);
    this.done.get(callId)?.resolve();
  }

  /** Take in what `verdict` says of the calls that wait on its call. */
  cascade(verdict: Verdict): void {
    for (const consequence of verdict.consequences) {
      if (this.done.has(consequence.callId) && !this.results.has(consequence.callId) && !this.forced.has(consequence.callId)) {
        this.forced.set(consequence.callId, consequence);
      }
    }
  }

  /** Once the calls `call` depends on are done: its result if one of them has none
   * (errord's consequence, else skipped, or its default), undefined when it may run. */
  async blocked(call: ToolCall): Promise<ToolResult | undefined> {
    const broken = this.plan.broken.get(call.callId);
    if (broken !== undefined) return ended(call, "failed", broken);
    const needs = this.plan.needs(call);
    await Promise.all(needs.map((needed) => this.done.get(needed)?.promise));
    const blocker = needs.find((needed) => !OK.has(this.results.get(needed)?.status ?? "failed"));
    if (blocker === undefined) return undefined;
    const forced = this.forced.get(call.callId);
    if (forced !== undefined) return fromConsequence(call, forced, blocker);
    const reason = `${call.name} needs the result of ${blocker}, which has none`;
    if (call.default !== undefined) return { ...ended(call, "defaulted", reason), output: call.default };
    return ended(call, "skipped", reason);
  }
}

const OK = new Set<ResultStatus>(["succeeded", "defaulted", "partial"]);

/** One call, attempt after attempt, until it has its result. */
class CallRun {
  private tool: string;
  private attempt = 1;
  private attempts = 0;
  private timeout: number | undefined;
  private admitted = false;
  private fallbackUsed = false;
  private readonly decisionIds: string[] = [];
  private readonly delays = new Map<string, number>();
  private lastDecision = "";
  /** Who decided the last verdict followed; "nobody" while none was needed. */
  private decidedBy: DecidedBy = "nobody";
  /** The registered tool of the current attempt, if there is one. */
  private running: Tool | undefined;
  /** The call's arguments the current attempt's tool ran without. */
  private ignored: readonly string[] = [];

  constructor(
    private readonly executor: Executor,
    private readonly call: ToolCall,
    private readonly batch: Batch,
  ) {
    this.tool = call.name;
  }

  async run(): Promise<ToolResult> {
    for (;;) {
      const attempt = await this.runAttempt();
      if (attempt.kind === "succeeded") return this.succeeded(attempt.output);
      const verdict = attempt.kind === "refused" ? attempt.verdict : await this.decide(attempt.failure, attempt.elapsed);
      const failed = attempt.kind === "failed" ? attempt.failure : undefined;
      this.decidedBy = verdict.decidedBy;
      if (verdict.decisionId) {
        this.decisionIds.push(verdict.decisionId);
        this.lastDecision = verdict.decisionId;
      }
      this.batch.cascade(verdict);
      if (verdict.action === "RETRY") {
        this.delays.set(this.tool, (this.delays.get(this.tool) ?? 0) + verdict.delay);
        await sleep(verdict.delay);
        this.attempt += 1;
        this.timeout = verdict.nextTimeout;
        this.admitted = verdict.decidedBy === "errord";
      } else if (verdict.action === "USE_ALTERNATIVE" && verdict.alternative) {
        this.tool = verdict.alternative;
        this.attempt = 1;
        this.timeout = verdict.nextTimeout;
        this.admitted = false;
        this.fallbackUsed = true;
      } else {
        return this.ended(verdict, failed);
      }
    }
  }

  /** Run the current attempt: its output, its failure and how long it ran, or the
   * verdict that refused it before it ran. */
  private async runAttempt(): Promise<
    | { kind: "succeeded"; output: unknown }
    | { kind: "failed"; failure: ToolFailure; elapsed: number }
    | { kind: "refused"; verdict: Verdict }
  > {
    const found = this.toolToRun();
    if (!("tool" in found)) return { kind: "failed", failure: found, elapsed: 0 };
    const key = boardKey(this.tool, found.tool.scope);
    if (!this.admitted && !this.executor.board.closed(key)) {
      const refusal = await this.admit(found.tool.scope);
      if (refusal !== undefined) return { kind: "refused", verdict: refusal };
    }
    const timeout = this.timeout ?? this.executor.board.timeout(key);
    this.attempts += 1;
    const started = performance.now();
    const elapsed = (): number => (performance.now() - started) / 1000;
    try {
      const output = await runWithin(found.tool, found.args, this.call, this.attempt, timeout);
      return { kind: "succeeded", output };
    } catch (error) {
      if (error instanceof AttemptTimedOut) {
        const message = `${this.tool} did not answer within ${timeout} s`;
        return { kind: "failed", failure: failure(message, "TimeoutError", "TIMEOUT"), elapsed: elapsed() };
      }
      return { kind: "failed", failure: failureFromError(error), elapsed: elapsed() };
    }
  }

  /** The tool to run and the arguments it takes, or the failure that stands for it: a
   * tool not registered, or arguments it cannot take. */
  private toolToRun(): { tool: Tool; args: JsonObject } | ToolFailure {
    this.running = undefined;
    this.ignored = [];
    let tool: Tool;
    try {
      tool = this.executor.registry.get(this.tool);
    } catch (error) {
      if (this.fallbackUsed) {
        // errord named it: not the model's mistake.
        return failure(`the alternative ${this.tool} is not registered with the executor`, "ToolNotFound", "UNSUPPORTED");
      }
      return failure((error as ToolNotFound).message, "ToolNotFound", "TOOL_NOT_FOUND");
    }
    this.running = tool;
    if (this.call.malformed && !this.fallbackUsed) {
      return failure(`the arguments are not a JSON object: ${this.call.malformed}`, "InvalidArguments", "INVALID_INPUT");
    }
    try {
      const accepted = acceptArguments(tool, this.call.arguments);
      this.ignored = accepted.ignored;
      return { tool, args: accepted.args };
    } catch (error) {
      if (error instanceof InvalidArguments) return failure(error.message, "InvalidArguments", "INVALID_INPUT");
      throw error;
    }
  }

  /** AdmitCall: undefined when the attempt may run (or errord did not answer: it runs
   * then), else the verdict that refused it. */
  private async admit(scope = ""): Promise<Verdict | undefined> {
    const response = await this.executor.link.admit({
      turnId: this.batch.turnId,
      callId: this.call.callId,
      tool: this.tool,
      attempt: this.attempt,
      arguments: this.call.arguments,
      scope,
    });
    if (response === undefined || response.admitted || response.decision === undefined) return undefined;
    return fromDecision(response.decision);
  }

  private async decide(found: ToolFailure, elapsed: number): Promise<Verdict> {
    const verdict = await this.executor.link.decide({
      turnId: this.batch.turnId,
      callId: this.call.callId,
      tool: this.tool,
      attempt: this.attempt,
      error: toToolError(found),
      arguments: this.call.arguments,
      elapsed,
      toolDeclaration:
        this.running &&
        declarationOf(this.running, this.timeout ?? this.executor.board.timeout(boardKey(this.tool, this.running.scope))),
      scope: this.running?.scope ?? "",
    });
    return verdict ?? this.executor.localPolicy.decide(this.tool, found, this.attempt, this.delays.get(this.tool) ?? 0);
  }

  private succeeded(output: unknown): ToolResult {
    this.executor.link.reportOutcome({
      turnId: this.batch.turnId,
      callId: this.call.callId,
      tool: this.tool,
      attempt: this.attempt,
      outcome: Outcome.SUCCESS,
      decisionId: this.lastDecision,
      scope: this.running?.scope ?? "",
    });
    return {
      ...this.base("succeeded"),
      output,
      decidedBy: this.decidedBy,
    };
  }

  private ended(verdict: Verdict, failed: ToolFailure | undefined): ToolResult {
    let status = ENDINGS[verdict.action] ?? "failed";
    const code = verdict.code || failed?.code || "";
    if (status === "failed" && code === "TIMEOUT") status = "timed_out";
    let output: unknown = null;
    if (verdict.action === "USE_DEFAULT" && verdict.defaultValue !== undefined) output = verdict.defaultValue;
    else if (verdict.action === "CONTINUE_PARTIAL" && failed?.partialResult !== undefined) output = failed.partialResult;
    return {
      ...this.base(status),
      output,
      error: {
        code,
        errorClass: verdict.errorClass,
        message: failed?.message ?? verdict.reason,
        userMessage: verdict.userMessage,
        // An open breaker refuses every attempt until it closes: not for a caller to retry.
        retryable: verdict.errorClass === "transient" && code !== "CIRCUIT_OPEN",
        fault: verdict.fault,
        parameter: verdict.parameter,
        exceptionType: failed?.exceptionType ?? "",
        correction: verdict.correction ?? null,
      },
      decidedBy: verdict.decidedBy,
      modelText: verdict.llmMessage,
    };
  }

  private base(status: ResultStatus): ToolResult {
    return {
      callId: this.call.callId,
      tool: this.call.name,
      status,
      output: null,
      error: null,
      executionTimeMs: 0,
      attempts: this.attempts,
      fallbackUsed: this.fallbackUsed,
      toolUsed: this.tool,
      decidedBy: "nobody",
      decisionIds: [...this.decisionIds],
      modelText: "",
      ignoredArguments: this.ignored,
    };
  }
}

/** The error of a call that did not run: nobody classified anything. */
const NO_ERROR: ResultError = {
  code: "",
  errorClass: "",
  message: "",
  userMessage: "",
  retryable: false,
  fault: "",
  parameter: "",
  exceptionType: "",
  correction: null,
};

/** The attempt ran past its timeout: it was abandoned. */
class AttemptTimedOut extends Error {
  override readonly name = "TimeoutError";
}

/** `tool` on the call's arguments, abandoned (its signal aborted) after `timeout` seconds. */
async function runWithin(tool: Tool, args: JsonObject, call: ToolCall, attempt: number, timeout: number): Promise<unknown> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new AttemptTimedOut(`the attempt did not finish within ${timeout} s`);
      controller.abort(error);
      reject(error);
    }, timeout * 1000);
  });
  try {
    const running = Promise.resolve().then(() => tool.run(args, { signal: controller.signal, callId: call.callId, attempt }));
    running.catch(() => undefined); // an abandoned attempt's late failure is nobody's
    return await Promise.race([running, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** A call no tool can be run for (not an object, or without an id or a name): what could
 * be read of it and why it cannot run. */
interface UnreadableCall {
  readonly callId: string;
  /** The tool it names, if it names one. */
  readonly tool: string;
  readonly problem: string;
}

/** `raw` as a ToolCall, or as an unreadable call: never throws. */
function readCall(raw: RawToolCall | null | undefined): ToolCall | UnreadableCall {
  try {
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) {
      throw new TypeError(`a tool call should be an object, got ${raw === null ? "null" : Array.isArray(raw) ? "an array" : typeof raw}`);
    }
    return toolCall(raw);
  } catch (error) {
    const record = (typeof raw === "object" && raw !== null ? raw : {}) as Record<string, unknown>;
    const id = record["callId"] ?? record["call_id"] ?? record["id"];
    const fn = record["function"];
    const name = typeof fn === "object" && fn !== null ? (fn as Record<string, unknown>)["name"] : record["name"];
    return {
      callId: typeof id === "string" ? id : "",
      tool: typeof name === "string" ? name : "",
      problem: error instanceof Error ? error.message : String(error),
    };
  }
}

/** The result of a call that could not be read: failed without running, the model's
 * mistake (INVALID_INPUT), decided by the executor alone (nothing was reported: errord's
 * reports need a call's id and tool). */
function unreadable(call: UnreadableCall): ToolResult {
  return {
    callId: call.callId,
    tool: call.tool,
    status: "failed",
    output: null,
    error: {
      ...NO_ERROR,
      code: "INVALID_INPUT",
      errorClass: "permanent",
      message: call.problem,
      userMessage: "A tool call could not be read, so it was not run.",
      fault: "ARGUMENTS",
    },
    executionTimeMs: 0,
    attempts: 0,
    fallbackUsed: false,
    toolUsed: call.tool,
    decidedBy: "local",
    decisionIds: [],
    modelText: `Error: the tool call could not be read: ${call.problem}.`,
    ignoredArguments: [],
  };
}

function ended(call: ToolCall, status: ResultStatus, reason: string): ToolResult {
  return {
    callId: call.callId,
    tool: call.name,
    status,
    output: null,
    error: status === "defaulted" ? null : { ...NO_ERROR, message: reason, userMessage: "This step was skipped." },
    executionTimeMs: 0,
    attempts: 0,
    fallbackUsed: false,
    toolUsed: call.name,
    decidedBy: "local",
    decisionIds: [],
    modelText: `Not run: ${reason}.`,
    ignoredArguments: [],
  };
}

function fromConsequence(call: ToolCall, consequence: Consequence, blocker: string): ToolResult {
  const status = ENDINGS[consequence.action] ?? "skipped";
  const reason = consequence.reason || `${call.name} needs the result of ${blocker}, which has none`;
  const output: JsonValue = consequence.defaultValue ?? null;
  return {
    ...ended(call, status, reason),
    output,
    error: status === "defaulted" ? null : { ...NO_ERROR, message: reason, userMessage: "This step could not be done." },
    decidedBy: "errord",
  };
}
