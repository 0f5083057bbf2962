/**
 * The executor's line to errord: decisions within a deadline, outcomes in the background.
 *
 * - Decisions. Failures reported in the same turn of the event loop go to errord as one
 *   ReportFailures (a model's parallel calls often fail together), each answered with its
 *   verdict, or with undefined when errord did not answer within `decisionTimeout`: the
 *   caller then asks the local policy. The transport retries UNAVAILABLE within it.
 * - Admission. AdmitCall, asked only when a tool's breaker is not closed.
 * - Outcomes. Queued and sent in the background, never on a call's path; retried while
 *   errord is away, for `outcomePatience` seconds at most.
 * - Turns. BeginTurn (a batch with a plan), EndTurn once the turn's outcomes are sent.
 * - Trace context. When `@opentelemetry/api` is installed, the context active where a
 *   failure, an admission or an outcome is reported goes with its call (`traceparent` in
 *   the headers, by the global propagator: `tracing.ts`), so errord's span of the decision
 *   joins the agent's trace; a batch of failures goes with its first one's.
 *
 * One warning is logged when errord stops answering, and one when it answers again.
 * Closing waits for what is queued only while errord answers; what it could not send is
 * `undelivered`, which the executor logs with its count.
 */
import { setMaxListeners } from "node:events";
import { Code } from "@connectrpc/connect";
import type {
  AdmitCallRequest,
  AdmitCallResponse,
  BeginTurnRequest,
  ReportFailureRequest,
  ReportOutcomeRequest,
} from "../gen/errord/v1/errord_pb.js";
import type { ErrordClient } from "../client.js";
import { ErrordError } from "../errors.js";
import type { Plain, PlainInit } from "../plain.js";
import { sleep } from "./board.js";
import { loadInjector, traceHeaders, type TraceHeaders } from "./tracing.js";
import { fromDecision, type Verdict } from "./verdict.js";

/** Where the executor says that errord stopped, or started again, answering. */
export interface Logger {
  warn(message: string): void;
}

interface Pending {
  readonly request: PlainInit<ReportFailureRequest>;
  readonly answer: (verdict: Verdict | undefined) => void;
  readonly headers: Promise<TraceHeaders | undefined>;
}

interface Outcome {
  readonly request: PlainInit<ReportOutcomeRequest>;
  readonly firstTried: number;
  readonly headers: Promise<TraceHeaders | undefined>;
}

/** Calls errord for the executor; never throws for errord being away. */
export class ErrordLink {
  /** False from the first unanswered call until errord answers again. */
  answering = true;
  private failures: Pending[] = [];
  private outcomes: Outcome[] = [];
  private sending: Promise<void> | undefined;
  private readonly tasks = new Set<Promise<unknown>>();
  private readonly closing = new AbortController();
  /** Outcomes taken off the queue and not sent yet. */
  private inFlight = 0;
  /** Turns whose EndTurn is not sent yet. */
  private endings = 0;
  /** Woken when errord is found away (for `drain`). */
  private awayWaiters: (() => void)[] = [];

  constructor(
    private readonly client: ErrordClient,
    private readonly log: Logger,
    readonly decisionTimeout = 0.25,
    readonly outcomePatience = 30,
  ) {
    void loadInjector(); // ready before the first failure's deadline starts
    // Every call in flight listens to it: a batch of many calls is no leak.
    setMaxListeners(0, this.closing.signal);
  }

  /** errord's verdict on one failure, or undefined if it does not answer in time. */
  decide(request: PlainInit<ReportFailureRequest>): Promise<Verdict | undefined> {
    return new Promise((answer) => {
      if (this.failures.length === 0) setImmediate(() => this.sendFailures());
      this.failures.push({ request, answer, headers: traceHeaders() });
    });
  }

  private sendFailures(): void {
    const batch = this.failures;
    this.failures = [];
    this.spawn(this.report(batch));
  }

  private async report(batch: Pending[]): Promise<void> {
    let answers: (Verdict | undefined)[] = [];
    const [only] = batch;
    const headers = await only?.headers;
    const options = { timeout: this.decisionTimeout, signal: this.closing.signal, headers };
    try {
      if (batch.length === 1 && only !== undefined) {
        const response = await this.client.reportFailure(only.request, options);
        answers = [response.decision && fromDecision(response.decision)];
      } else {
        const many = await this.client.reportFailures({ failures: batch.map((p) => p.request) }, options);
        answers = many.results.map((result) => {
          if (result.result.case === "answer" && result.result.value.decision) {
            return fromDecision(result.result.value.decision);
          }
          if (result.result.case === "refused") this.log.warn(`errord refused a report: ${result.result.value.message}`);
          return undefined;
        });
      }
      this.answered();
    } catch (error) {
      this.unanswered(error);
    }
    batch.forEach((pending, index) => pending.answer(answers[index]));
  }

  /** errord's admission of an attempt, or undefined if it does not answer in time. */
  async admit(request: PlainInit<AdmitCallRequest>): Promise<Plain<AdmitCallResponse> | undefined> {
    try {
      const headers = await traceHeaders();
      const response = await this.client.admitCall(request, { timeout: this.decisionTimeout, signal: this.closing.signal, headers });
      this.answered();
      return response;
    } catch (error) {
      this.unanswered(error);
      return undefined;
    }
  }

  /** Begin a turn with its plan; false when errord did not take it. */
  async beginTurn(request: PlainInit<BeginTurnRequest>): Promise<boolean> {
    try {
      await this.client.beginTurn(request, { timeout: this.decisionTimeout * 4, signal: this.closing.signal });
      this.answered();
      return true;
    } catch (error) {
      this.unanswered(error);
      return false;
    }
  }

  /** End the turn in the background, once its outcomes are sent. */
  endTurn(turnId: string): void {
    this.endings += 1;
    this.spawn(
      (async () => {
        await this.outcomesSent();
        try {
          await this.client.endTurn({ turnId }, { timeout: 5, signal: this.closing.signal });
        } catch (error) {
          if (!(error instanceof ErrordError && error.code === Code.NotFound)) {
            this.unanswered(error);
            return;
          }
          // errord never heard of the turn: nothing to end.
        }
        this.endings -= 1;
      })(),
    );
  }

  /** Queue an outcome; it is sent in the background. */
  reportOutcome(request: PlainInit<ReportOutcomeRequest>): void {
    this.outcomes.push({ request, firstTried: performance.now(), headers: traceHeaders() });
    this.sending ??= this.spawn(this.sendOutcomes()).finally(() => {
      this.sending = undefined;
    });
  }

  /** Resolves once every outcome queued so far was sent (or given up on). */
  async outcomesSent(): Promise<void> {
    while (this.sending !== undefined) await this.sending;
  }

  private async sendOutcomes(): Promise<void> {
    let wait = 0.05;
    while (this.outcomes.length > 0 && !this.closing.signal.aborted) {
      const batch = this.outcomes.splice(0);
      this.inFlight = batch.length;
      const sent = await Promise.all(batch.map((outcome) => this.sendOutcome(outcome)));
      this.inFlight = 0;
      const now = performance.now();
      const retry = batch.filter((outcome, i) => !sent[i] && now - outcome.firstTried < this.outcomePatience * 1000);
      const lost = sent.filter((ok) => !ok).length - retry.length;
      if (lost > 0) this.log.warn(`errord did not answer: outcomes of ${lost} attempts were not recorded`);
      if (retry.length > 0) {
        this.outcomes.unshift(...retry);
        await sleep(wait, this.closing.signal);
        wait = Math.min(wait * 2, 1);
      } else {
        wait = 0.05;
      }
    }
  }

  private async sendOutcome(outcome: Outcome): Promise<boolean> {
    try {
      const headers = await outcome.headers;
      await this.client.reportOutcome(outcome.request, { timeout: 2, signal: this.closing.signal, headers });
      this.answered();
      return true;
    } catch (error) {
      this.unanswered(error);
      // Only errord being away is worth another try; anything else would fail again.
      return !this.away(error);
    }
  }

  /** Wait, `patience` seconds at most, for outcomes and turn endings to be sent; not at
   * all, or no longer, once errord is away (a call went unanswered). What was not sent is
   * `undelivered`. */
  async drain(patience: number): Promise<void> {
    const waited = new AbortController();
    const away = new Promise<void>((wake) => this.awayWaiters.push(wake));
    const deadline = performance.now() + patience * 1000;
    try {
      while (this.answering && this.tasks.size > 0 && performance.now() < deadline) {
        const left = (deadline - performance.now()) / 1000;
        await Promise.race([Promise.allSettled([...this.tasks]), sleep(left, waited.signal), away]);
      }
    } finally {
      waited.abort(); // a pending timer would hold the process open for `patience`
    }
  }

  /** What is not sent yet: outcomes (queued or in flight) and turn endings. */
  get undelivered(): { readonly outcomes: number; readonly endings: number } {
    return { outcomes: this.outcomes.length + this.inFlight, endings: this.endings };
  }

  /** Cancel whatever is still out. */
  close(): void {
    this.closing.abort();
  }

  private spawn<T>(work: Promise<T>): Promise<T> {
    this.tasks.add(work);
    void work.finally(() => this.tasks.delete(work)).catch(() => undefined);
    return work;
  }

  private answered(): void {
    if (!this.answering) {
      this.answering = true;
      this.log.warn("errord answers again: its decisions apply once more");
    }
  }

  /** True when `error` says errord is away: unreachable, too slow, or its connection
   * cancelled under a call (a daemon killed mid-stream) while the executor is not closing. */
  private away(error: unknown): boolean {
    if (!(error instanceof ErrordError)) return false;
    return AWAY.has(error.code) || (error.code === Code.Canceled && !this.closing.signal.aborted);
  }

  private unanswered(error: unknown): void {
    const code = error instanceof ErrordError ? error.code : Code.Unknown;
    if (code === Code.Canceled && this.closing.signal.aborted) return; // the executor closed with the call still out
    if (!this.away(error)) {
      this.log.warn(`errord refused a call: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
    for (const wake of this.awayWaiters.splice(0)) wake();
    if (this.answering) {
      this.answering = false;
      this.log.warn(`errord did not answer (${(error as ErrordError).codeName}): the local policy decides until it does`);
    }
  }
}

const AWAY = new Set([Code.Unavailable, Code.DeadlineExceeded]);
