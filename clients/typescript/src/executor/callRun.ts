/**
 * One call, attempt after attempt, until it has its result: admission, the attempt under
 * its timeout, errord's decision on its failure (or the local policy's), followed.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import { Outcome } from "../gen/errord/v1/errord_pb.js";
import { acceptArguments, InvalidArguments, ToolNotFound, type Tool, type ToolRegistry } from "../tools/registry.js";
import { ENDINGS, type Batch, type Running } from "./batch.js";
import { boardKey, sleep, type ToolBoard } from "./board.js";
import type { ToolCall } from "./calls.js";
import { declarationOf } from "./declarations.js";
import { failure, failureFromError, toToolError, type ToolFailure } from "./failures.js";
import type { ErrordLink, Logger } from "./link.js";
import type { LocalPolicy } from "./localPolicy.js";
import { progress, tell, type OnProgress, type ProgressKind } from "./progress.js";
import type { DecidedBy, ResultStatus, ToolResult } from "./result.js";
import { fromDecision, type Verdict } from "./verdict.js";

/** What a call runs with: the executor's parts. */
export interface Runner {
  readonly registry: ToolRegistry;
  readonly board: ToolBoard;
  readonly link: ErrordLink;
  readonly localPolicy: LocalPolicy;
  readonly onProgress: OnProgress | undefined;
  readonly logger: Logger;
}

/** Endings that are timed_out when the call's last attempt timed out. */
const GIVEN_UP = new Set<ResultStatus>(["failed", "escalated"]);

/** One call, attempt after attempt, until it has its result. */
export class CallRun {
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
  /** Where the call stands, as the batch sees it (for the turn's deadline). */
  private readonly standing: Running;

  constructor(
    private readonly runner: Runner,
    private readonly call: ToolCall,
    private readonly batch: Batch,
  ) {
    this.tool = call.name;
    this.standing = { tool: call.name, attempts: 0 };
  }

  /** The call's result; once the batch is cut short, a result nobody reads (the turn's
   * deadline gave the call its own). */
  async run(): Promise<ToolResult> {
    this.batch.running.set(this.call.callId, this.standing);
    for (;;) {
      if (this.batch.signal.aborted) return this.base("timed_out"); // nothing more runs
      const attempt = await this.runAttempt();
      if (this.batch.signal.aborted) return this.base("timed_out");
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
        this.tell("retry", { delay: verdict.delay, message: verdict.userMessage });
        this.delays.set(this.tool, (this.delays.get(this.tool) ?? 0) + verdict.delay);
        await sleep(verdict.delay, this.batch.signal);
        this.attempt += 1;
        this.timeout = verdict.nextTimeout;
        this.admitted = verdict.decidedBy === "errord";
      } else if (verdict.action === "USE_ALTERNATIVE" && verdict.alternative) {
        this.tell("alternative", { alternative: verdict.alternative, message: verdict.userMessage });
        this.tool = verdict.alternative;
        this.standing.tool = this.tool;
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
    if (!this.admitted && !this.runner.board.closed(key)) {
      const refusal = await this.admit(found.tool.scope);
      if (refusal !== undefined) return { kind: "refused", verdict: refusal };
    }
    const timeout = this.timeout ?? this.runner.board.timeout(key, found.tool.timeout);
    this.attempts += 1;
    this.standing.attempts = this.attempts;
    this.tell("attempt", {});
    const started = performance.now();
    const elapsed = (): number => (performance.now() - started) / 1000;
    try {
      const output = await runWithin(found.tool, found.args, this.call, this.attempt, timeout, this.batch.signal);
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
      tool = this.runner.registry.get(this.tool);
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
    const response = await this.runner.link.admit({
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
    const timeout = this.timeout ?? this.runner.board.timeout(boardKey(this.tool, this.running?.scope), this.running?.timeout);
    const verdict = await this.runner.link.decide({
      turnId: this.batch.turnId,
      callId: this.call.callId,
      tool: this.tool,
      attempt: this.attempt,
      error: toToolError(found),
      arguments: this.call.arguments,
      elapsed,
      toolDeclaration: this.running && declarationOf(this.running, timeout),
      scope: this.running?.scope ?? "",
      userId: this.batch.acting.userId,
      sessionId: this.batch.acting.sessionId,
    });
    return verdict ?? this.runner.localPolicy.decide(this.tool, found, this.attempt, this.delays.get(this.tool) ?? 0);
  }

  private tell(kind: ProgressKind, step: { delay?: number; alternative?: string; message?: string }): void {
    const { turnId } = this.batch;
    tell(this.runner.onProgress, progress(kind, { turnId, callId: this.call.callId, tool: this.tool, attempt: this.attempt, ...step }), this.runner.logger);
  }

  private succeeded(output: unknown): ToolResult {
    this.runner.link.reportOutcome({
      turnId: this.batch.turnId,
      callId: this.call.callId,
      tool: this.tool,
      attempt: this.attempt,
      outcome: Outcome.SUCCESS,
      decisionId: this.lastDecision,
      scope: this.running?.scope ?? "",
      userId: this.batch.acting.userId,
      sessionId: this.batch.acting.sessionId,
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
    if (GIVEN_UP.has(status) && code === "TIMEOUT") status = "timed_out"; // its last attempt timed out
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

/** The attempt ran past its timeout: it was abandoned. */
class AttemptTimedOut extends Error {
  override readonly name = "TimeoutError";
}

/** `tool` on the call's arguments, abandoned (its signal aborted) after `timeout` seconds,
 * or when `cut` aborts. */
async function runWithin(tool: Tool, args: JsonObject, call: ToolCall, attempt: number, timeout: number, cut: AbortSignal): Promise<unknown> {
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let stop = (): void => undefined;
  const expired = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new AttemptTimedOut(`the attempt did not finish within ${timeout} s`);
      controller.abort(error);
      reject(error);
    }, timeout * 1000);
    stop = () => {
      const error = new AttemptTimedOut("the turn's deadline passed");
      controller.abort(error);
      reject(error);
    };
    if (cut.aborted) stop();
    else cut.addEventListener("abort", stop, { once: true });
  });
  try {
    const running = Promise.resolve().then(() => tool.run(args, { signal: controller.signal, callId: call.callId, attempt }));
    running.catch(() => undefined); // an abandoned attempt's late failure is nobody's
    return await Promise.race([running, expired]);
  } finally {
    clearTimeout(timer);
    cut.removeEventListener("abort", stop);
  }
}
