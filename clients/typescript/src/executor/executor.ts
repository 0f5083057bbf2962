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
 *
 * An agent's run is one turn when it runs inside `executor.turn().within(...)` (turn.ts):
 * its batches, and the calls its framework runs one by one, are counted and summed up
 * together. `userId` and `sessionId` go with every report; a `deadline` cuts a turn short;
 * `onProgress` hears of each attempt, retry, alternative and result.
 */
import { ErrordClient } from "../client.js";
import type { ConnectionOptions } from "../transport.js";
import { ToolRegistry, type Tool, type ToolFunction } from "../tools/registry.js";
import { NO_ERROR, notRun, type Batch } from "./batch.js";
import { sleep, ToolBoard } from "./board.js";
import { CallRun } from "./callRun.js";
import type { RawToolCall, ToolCall } from "./calls.js";
import { ErrordLink, type Logger } from "./link.js";
import { LocalPolicy } from "./localPolicy.js";
import type { OnProgress } from "./progress.js";
import type { ToolResult } from "./result.js";
import { currentTurn, Turn, type TurnHost, type TurnOptions } from "./turn.js";

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
  /** Where the executor says that errord stopped, or started again, answering, and what
   * it could not deliver (console). */
  readonly logger?: Logger;
  /** Who the agent acts for, by default: sent with every report (turn.ts). */
  readonly userId?: string;
  /** The agent's session, by default, as `userId`. */
  readonly sessionId?: string;
  /** Seconds a turn may take, by default; none: no deadline of the executor's. */
  readonly deadline?: number;
  /** Called with each step of each call (progress.ts). */
  readonly onProgress?: OnProgress;
}

/** Options of one batch run as a turn of its own: `TurnOptions`, the executor's where
 * one is not given. */
export type RunOptions = TurnOptions;

/** Runs tool calls under errord. */
export class Executor {
  readonly registry: ToolRegistry;
  readonly localPolicy: LocalPolicy;
  readonly board: ToolBoard;
  readonly client: ErrordClient;
  /** @internal */
  readonly link: ErrordLink;
  /** @internal */
  readonly logger: Logger;
  readonly userId: string;
  readonly sessionId: string;
  readonly deadline: number | undefined;
  readonly onProgress: OnProgress | undefined;
  private readonly watching = new AbortController();
  private watch: Promise<void> | undefined;
  private ready: Promise<void> | undefined;
  private readonly watchTools: boolean;
  /** What the executor's turns run their calls with. */
  private readonly host: TurnHost;

  constructor(options: ExecutorOptions = {}) {
    const tools = options.tools ?? [];
    this.registry = tools instanceof ToolRegistry ? tools : new ToolRegistry(tools);
    this.localPolicy = options.localPolicy ?? new LocalPolicy();
    this.board = new ToolBoard(options.defaultTimeout ?? 30);
    this.client = new ErrordClient(options);
    this.logger = options.logger ?? console;
    this.link = new ErrordLink(this.client, this.logger, options.decisionTimeout ?? 0.25);
    this.watchTools = options.watchTools ?? true;
    this.userId = options.userId ?? "";
    this.sessionId = options.sessionId ?? "";
    this.deadline = options.deadline;
    this.onProgress = options.onProgress;
    this.host = {
      link: this.link,
      logger: this.logger,
      onProgress: this.onProgress,
      start: () => this.start(),
      runCall: (call, batch) => this.runCall(call, batch),
    };
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

  /** Send what is still queued (`patience` seconds at most, not at all while errord is
   * unreachable), then stop. What could not be sent is logged with its count. */
  async close(patience = 5): Promise<void> {
    if (!this.board.lost) await this.link.drain(patience);
    const { outcomes, endings } = this.link.undelivered;
    if (outcomes + endings > 0) {
      this.logger.warn(
        `errord did not answer: ${outcomes + endings} queued reports were not delivered ` +
          `(outcomes of ${outcomes} attempts, ${endings} turn endings)`,
      );
    }
    this.link.close();
    this.watching.abort();
    await this.watch;
  }

  /** A turn of its own (turn.ts): `within` it an agent's run is one errord turn, ended
   * with it. `userId`, `sessionId` and `deadline` (seconds from now) default to the
   * executor's. */
  turn(options: TurnOptions = {}): Turn {
    return new Turn(this.host, {
      turnId: options.turnId,
      userId: options.userId ?? this.userId,
      sessionId: options.sessionId ?? this.sessionId,
      deadline: options.deadline ?? this.deadline,
    });
  }

  /** Run one call (in the current turn, or as a turn of its own); `options` as `run`
   * takes them. */
  async runOne(call: RawToolCall, options: RunOptions = {}): Promise<ToolResult> {
    const [result] = await this.run([call], options);
    return result as ToolResult;
  }

  /** Run `calls` (in any shape calls.ts reads): independent calls at once, a call after
   * those it `dependsOn`. One result per call, in order; never rejects for a tool's
   * failure or errord's.
   *
   * Inside a turn's `within` (and no `turnId` given) the calls join that turn; else they
   * are a turn of their own (`options` as `turn` takes them), ended once they have their
   * results. */
  async run(calls: readonly RawToolCall[], options: RunOptions = {}): Promise<ToolResult[]> {
    const joined = currentTurn();
    if (joined !== undefined && options.turnId === undefined && joined.runsFor(this.host)) return joined.run(calls);
    const turn = this.turn(options);
    try {
      return await turn.run(calls);
    } finally {
      turn.end();
    }
  }

  /** One call of `batch` run to its result (for the turn). */
  private async runCall(call: ToolCall, batch: Batch): Promise<ToolResult> {
    const started = performance.now();
    let result: ToolResult;
    try {
      result = (await batch.blocked(call)) ?? (await new CallRun(this, call, batch).run());
    } catch (error) {
      // A bug here must not cost the other calls their results.
      result = {
        ...notRun(call, "failed", `the call could not be run: ${String(error)}`),
        error: { ...NO_ERROR, code: "UNKNOWN", message: String(error), userMessage: "Something went wrong." },
      };
    }
    result = { ...result, executionTimeMs: performance.now() - started };
    batch.finish(call.callId, result);
    return result;
  }
}
