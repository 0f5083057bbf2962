/**
 * The calls of one run of the executor: their results as they come, what cascades to the
 * calls that wait on a call without a result (errord's consequences, else skipped or
 * defaulted), and the results of calls a turn's deadline cut short.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import type { ToolCall, UnreadableCall } from "./calls.js";
import type { Plan } from "./plan.js";
import type { ResultError, ResultStatus, ToolResult } from "./result.js";
import type { Action, Consequence, Verdict } from "./verdict.js";

/** The result of a call whose last verdict is not to try again. */
export const ENDINGS: Partial<Record<Action, ResultStatus>> = {
  CONTINUE_PARTIAL: "partial",
  USE_DEFAULT: "defaulted",
  SKIP: "skipped",
  RETURN_TO_MODEL: "returned_to_model",
  ESCALATE: "escalated",
  FAIL: "failed",
};

/** Where a started call stands: the tool of its current attempt, and its attempts. */
export interface Running {
  tool: string;
  attempts: number;
}

/** Who the agent acts for, sent with every report of a batch (telemetry; errord hashes
 * them when it is configured to). */
export interface Acting {
  readonly userId: string;
  readonly sessionId: string;
}

/** The calls of one run: their results as they come, and what cascades to them. */
export class Batch {
  readonly results = new Map<string, ToolResult>();
  /** The calls started (past their dependencies), by id. */
  readonly running = new Map<string, Running>();
  private readonly done = new Map<string, { promise: Promise<void>; resolve: () => void }>();
  private readonly forced = new Map<string, Consequence>();
  private readonly cut = new AbortController();

  constructor(
    readonly turnId: string,
    readonly plan: Plan,
    readonly acting: Acting = { userId: "", sessionId: "" },
  ) {
    for (const call of plan.calls) {
      let resolve = (): void => undefined;
      const promise = new Promise<void>((wake) => (resolve = wake));
      this.done.set(call.callId, { promise, resolve });
    }
  }

  /** Aborts when the turn's deadline cut the batch short: attempts still running are
   * abandoned, waits before a retry end, and nothing more is reported. */
  get signal(): AbortSignal {
    return this.cut.signal;
  }

  /** Cut the batch short (the turn's deadline passed). */
  cutShort(): void {
    this.cut.abort();
  }

  /** `result` is the call's, unless it has one already. */
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
    if (broken !== undefined) return notRun(call, "failed", broken);
    const needs = this.plan.needs(call);
    await Promise.all(needs.map((needed) => this.done.get(needed)?.promise));
    const blocker = needs.find((needed) => !OK.has(this.results.get(needed)?.status ?? "failed"));
    if (blocker === undefined) return undefined;
    const forced = this.forced.get(call.callId);
    if (forced !== undefined) return fromConsequence(call, forced, blocker);
    const reason = `${call.name} needs the result of ${blocker}, which has none`;
    if (call.default !== undefined) return { ...notRun(call, "defaulted", reason), output: call.default };
    return notRun(call, "skipped", reason);
  }
}

const OK = new Set<ResultStatus>(["succeeded", "defaulted", "partial"]);

/** The error of a call that did not run: nobody classified anything. */
export const NO_ERROR: ResultError = {
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

/** The result of a call that did not run (or ran no attempt), for `reason`. */
export function notRun(call: ToolCall, status: ResultStatus, reason: string): ToolResult {
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

/** The result of a call that could not be read: failed without running, the model's
 * mistake (INVALID_INPUT), decided by the executor alone (nothing was reported: errord's
 * reports need a call's id and tool). */
export function unreadable(call: UnreadableCall): ToolResult {
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

function fromConsequence(call: ToolCall, consequence: Consequence, blocker: string): ToolResult {
  const status = ENDINGS[consequence.action] ?? "skipped";
  const reason = consequence.reason || `${call.name} needs the result of ${blocker}, which has none`;
  const output: JsonValue = consequence.defaultValue ?? null;
  return {
    ...notRun(call, status, reason),
    output,
    error: status === "defaulted" ? null : { ...NO_ERROR, message: reason, userMessage: "This step could not be done." },
    decidedBy: "errord",
  };
}

/** The result of a call the turn's deadline (`deadline` seconds) ended: its default when
 * it has one; else timed_out when it had started, skipped when it was still waiting on the
 * calls it depends on. */
export function cutOff(call: ToolCall, batch: Batch, deadline: number): ToolResult {
  const running = batch.running.get(call.callId);
  const tool = running?.tool ?? call.name;
  const reason = `the turn's deadline of ${deadline} s passed before ${tool} answered`;
  if (call.default !== undefined) return { ...notRun(call, "defaulted", reason), output: call.default };
  if (running === undefined) return notRun(call, "skipped", reason);
  const named = tool.replaceAll("_", " ");
  return {
    ...notRun(call, "timed_out", reason),
    error: {
      ...NO_ERROR,
      code: "TIMEOUT",
      errorClass: "transient",
      message: reason,
      userMessage: `${named.charAt(0).toUpperCase()}${named.slice(1)} took too long; continuing without it.`,
      retryable: true,
    },
    attempts: running.attempts,
    fallbackUsed: tool !== call.name,
    toolUsed: tool,
    modelText:
      `Error: ${tool} did not answer before the turn's deadline (${deadline} s). ` +
      "Continue without its result; tell the user what is missing if it matters.",
  };
}
