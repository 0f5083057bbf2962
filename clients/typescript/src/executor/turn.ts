/**
 * A turn: the calls of one agent run, under errord as one, however many batches they come
 * in.
 *
 * errord counts a turn's retries, corrections and repeated mistakes, applies its plan's
 * cascades, and sums it up when it ends. An agent's run asks for tools over several model
 * answers (and an agent framework runs each call on its own): they are one turn when run
 * inside `turn.within()`:
 *
 *     const turn = executor.turn({ userId: "ada", deadline: 30 });
 *     const answer = await turn.within(() => generateText({ model, tools, prompt })); // its tools' calls join it
 *     const more = await turn.run(otherCalls);                                       // or run calls directly
 *     turn.end();
 *
 * `Executor.run` outside a turn runs its calls as a turn of their own, ended with them.
 * Inside `within` (its async context, which the promises and callbacks started there
 * inherit) it joins the turn, which ends when `within`'s function settles: EndTurn is sent
 * in the background, once the turn's outcomes are.
 *
 * A turn may have a deadline, seconds from its start: errord grants no retry that would
 * cross it, and a batch still running at the deadline returns then with what finished;
 * each call still running ends timed_out (its default, when the call has one), each one
 * still waiting on the calls it depends on skipped (or its default). The first batch of a
 * turn with a deadline tells errord its calls (BeginTurn with the deadline and the batch as
 * its plan), so that errord's summary names the calls the deadline ended TIMED_OUT.
 *
 * The names are the Python client's (errord_client.executor.turn), in camelCase.
 */
import { AsyncLocalStorage } from "node:async_hooks";
import { randomUUID } from "node:crypto";
import { Batch, cutOff, notRun, unreadable } from "./batch.js";
import { readCall, type RawToolCall, type ToolCall } from "./calls.js";
import type { ErrordLink, Logger } from "./link.js";
import { planOf } from "./plan.js";
import { progress, tell, type OnProgress } from "./progress.js";
import type { ToolResult } from "./result.js";

/** Who a turn acts for and how long it may take. */
export interface TurnOptions {
  /** errord's id of the turn; `turn-<random uuid>` by default. */
  readonly turnId?: string;
  /** Who the agent acts for: sent with every report, recorded (hashed when errord hashes
   * ids) and exported on errord's spans, never logged. */
  readonly userId?: string;
  /** The agent's session, as `userId`. */
  readonly sessionId?: string;
  /** Seconds the turn may take from its start; none: errord's default (300 s) bounds its
   * retries, and nothing cuts its batches short. */
  readonly deadline?: number;
}

/** What a turn runs its calls with (the executor). */
export interface TurnHost {
  readonly link: ErrordLink;
  readonly logger: Logger;
  readonly onProgress: OnProgress | undefined;
  /** Connected, and errord's tool policies in (or given up waiting for). */
  start(): Promise<void>;
  /** One call of `batch` run to its result. */
  runCall(call: ToolCall, batch: Batch): Promise<ToolResult>;
}

/** The turn whose `within` the code runs in, if any. */
const current = new AsyncLocalStorage<Turn>();

/** The turn `within` whose function the caller runs, if any. */
export function currentTurn(): Turn | undefined {
  return current.getStore();
}

/** One errord turn: `run` its batches (or `within` an agent's run), then `end` it. */
export class Turn {
  readonly turnId: string;
  readonly userId: string;
  readonly sessionId: string;
  readonly deadline: number | undefined;
  private readonly endsAt: number | undefined;
  private readonly endsOn: Date | undefined;
  private begun: Promise<void> | undefined;
  private ran = false;
  private ended = false;

  constructor(
    private readonly host: TurnHost,
    options: TurnOptions = {},
  ) {
    const { deadline } = options;
    if (deadline !== undefined && !(deadline > 0 && Number.isFinite(deadline))) {
      throw new RangeError(`a turn's deadline should be a positive number of seconds, got ${deadline}`);
    }
    this.turnId = options.turnId || `turn-${randomUUID()}`;
    this.userId = options.userId ?? "";
    this.sessionId = options.sessionId ?? "";
    this.deadline = deadline;
    this.endsAt = deadline === undefined ? undefined : performance.now() + deadline * 1000;
    this.endsOn = deadline === undefined ? undefined : new Date(Date.now() + deadline * 1000);
  }

  /** Whether the turn runs its calls with `host` (an Executor). */
  runsFor(host: TurnHost): boolean {
    return this.host === host;
  }

  /** `work` run with the turn current, so that the executor's runs inside it (an agent
   * framework's tool calls) join the turn; the turn ends when `work` settles. */
  async within<T>(work: (turn: Turn) => Promise<T> | T): Promise<T> {
    try {
      return await current.run(this, () => work(this));
    } finally {
      this.end();
    }
  }

  /** End the turn: EndTurn is sent in the background once its outcomes are. A turn in
   * which nothing ran is not sent (errord never heard of it). */
  end(): void {
    if (!this.ended && this.ran) this.host.link.endTurn(this.turnId);
    this.ended = true;
  }

  /** Run one call in the turn. */
  async runOne(call: RawToolCall): Promise<ToolResult> {
    const [result] = await this.run([call]);
    return result as ToolResult;
  }

  /** Run `calls` in the turn as `Executor.run` runs a batch: one result per call, in
   * order. Past the deadline, the calls still running end as the module's comment says. */
  async run(calls: readonly RawToolCall[]): Promise<ToolResult[]> {
    if (this.ended) throw new Error(`turn ${this.turnId} has ended: start another`);
    const read = [...calls].map(readCall);
    const readable = read.filter((call): call is ToolCall => "name" in call);
    if (readable.length === read.length) return this.runBatch(readable);
    const ran = readable.length > 0 ? await this.runBatch(readable) : [];
    let next = 0;
    return read.map((call) => ("name" in call ? (ran[next++] as ToolResult) : unreadable(call)));
  }

  private async runBatch(calls: readonly ToolCall[]): Promise<ToolResult[]> {
    const batch = new Batch(this.turnId, planOf(calls), { userId: this.userId, sessionId: this.sessionId });
    if (batch.plan.calls.length === 0) return [];
    this.ran = true;
    await this.host.start();
    await this.begin(batch);
    const finished: (ToolResult | undefined)[] = [];
    const running = batch.plan.calls.map((call, position) =>
      this.started(position, call, batch).then((result) => (finished[position] = result)),
    );
    if (this.endsAt === undefined) return Promise.all(running);
    const left = Math.max(0, this.endsAt - performance.now());
    let timer: NodeJS.Timeout | undefined;
    const passed = new Promise<void>((wake) => (timer = setTimeout(wake, left)));
    try {
      await Promise.race([Promise.all(running), passed]);
    } finally {
      clearTimeout(timer);
    }
    const results = batch.plan.calls.map((call, position) => finished[position] ?? this.cut(call, batch));
    batch.cutShort(); // only the deadline's calls are still running
    return results;
  }

  private async started(position: number, call: ToolCall, batch: Batch): Promise<ToolResult> {
    if (batch.plan.repeated.has(position)) return notRun(call, "failed", `an earlier call of the batch has the id ${call.callId}`);
    const result = await this.host.runCall(call, batch);
    if (batch.results.get(call.callId) === result) this.done(result);
    return result;
  }

  /** The result the deadline gives `call`. */
  private cut(call: ToolCall, batch: Batch): ToolResult {
    const result = cutOff(call, batch, this.deadline ?? 0);
    batch.finish(call.callId, result);
    this.done(result);
    return result;
  }

  private done(result: ToolResult): void {
    const message = result.error?.userMessage ?? "";
    const step = progress("done", { turnId: this.turnId, callId: result.callId, tool: result.toolUsed, status: result.status, message });
    tell(this.host.onProgress, step, this.host.logger);
  }

  /** BeginTurn, with the turn's first batch: when the batch has a plan errord's cascades
   * follow, or the turn a deadline. Later batches wait for it. */
  private async begin(batch: Batch): Promise<void> {
    if (this.begun !== undefined) return this.begun; // errord takes a turn's plan once, at its start
    if (!batch.plan.dependencies && this.endsOn === undefined) {
      this.begun = Promise.resolve();
      return this.begun;
    }
    this.begun = this.host.link.beginTurn({ ...batch.plan.begin(this.turnId), deadline: this.endsOn }).then(() => undefined);
    return this.begun;
  }
}
