/**
 * `ErrordClient`: every ErrorHandlerService RPC, plain objects in and out.
 *
 *     const errord = new ErrordClient({ target: "127.0.0.1:50051" });
 *     const { decision } = await errord.reportFailure({
 *       turnId: "turn-1", callId: "c1", tool: "search", attempt: 1,
 *       error: { code: ErrorCode.TIMEOUT, message: "no answer in 5 s" },
 *       arguments: { q: "flights" }, elapsed: 5,
 *     });
 *     decision?.action === RecoveryAction.RETRY; decision?.delay; // seconds
 *
 * Requests and responses are the generated messages as plain objects (`plain.ts`):
 * durations in seconds, timestamps as Dates, arguments and values as JSON. A failed RPC
 * rejects with an `ErrordError` (its gRPC code, and the field violations of an invalid
 * request). `OperatorClient` does the same for OperatorService, whose RPCs need the
 * operator token when errord has one.
 */
import { createClient, type CallOptions as ConnectCallOptions, type Client, type Transport } from "@connectrpc/connect";
import type { DescMessage, MessageShape } from "@bufbuild/protobuf";
import * as pb from "./gen/errord/v1/errord_pb.js";
import { ErrordError } from "./errors.js";
import { fromMessage, toMessage, type Plain, type PlainInit } from "./plain.js";
import { openTransport, type ConnectionOptions } from "./transport.js";

/** Options of one call. */
export interface CallOptions {
  /** Seconds errord has to answer; none by default. */
  readonly timeout?: number;
  /** Cancels the call. */
  readonly signal?: AbortSignal;
  /** Request headers (gRPC metadata) sent with the call, as trace context. */
  readonly headers?: ConnectCallOptions["headers"];
}

type Request<Desc extends DescMessage> = PlainInit<MessageShape<Desc>>;
type Response<Desc extends DescMessage> = Promise<Plain<MessageShape<Desc>>>;
type Unary<I extends DescMessage, O extends DescMessage> = (
  request: MessageShape<I>,
  options: { timeoutMs?: number; signal?: AbortSignal; headers?: ConnectCallOptions["headers"] },
) => Promise<MessageShape<O>>;

/** The connection a client shares with others, or makes for itself. */
function transportOf(options: ConnectionOptions & { transport?: Transport }): Transport {
  return options.transport ?? openTransport(options);
}

/** Calls a unary RPC with a plain request, and gives the response plain. */
export async function callUnary<I extends DescMessage, O extends DescMessage>(
  input: I,
  output: O,
  method: Unary<I, O>,
  request: Request<I> | undefined,
  options: CallOptions = {},
): Response<O> {
  const message = toMessage(input, request);
  const timeoutMs = options.timeout === undefined ? undefined : Math.max(1, Math.round(options.timeout * 1000));
  try {
    return fromMessage(output, await method(message, { timeoutMs, signal: options.signal, headers: options.headers }));
  } catch (error) {
    throw ErrordError.from(error);
  }
}

async function* plainStream<O extends DescMessage>(
  output: O,
  stream: AsyncIterable<MessageShape<O>>,
): AsyncGenerator<Plain<MessageShape<O>>> {
  try {
    for await (const message of stream) yield fromMessage(output, message);
  } catch (error) {
    throw ErrordError.from(error);
  }
}

/** ErrorHandlerService: report failures and outcomes, turns, admission, traces. */
export class ErrordClient {
  /** The generated client, for generated messages in and out. */
  readonly stub: Client<typeof pb.ErrorHandlerService>;

  /** `options`: where errord is, its token, TLS; or `transport`, one to share. */
  constructor(options: ConnectionOptions & { transport?: Transport } = {}) {
    this.stub = createClient(pb.ErrorHandlerService, transportOf(options));
  }

  /** BeginTurn: a turn with its deadline, retry budget and plan. */
  beginTurn(request: Request<typeof pb.BeginTurnRequestSchema>, options?: CallOptions): Response<typeof pb.BeginTurnResponseSchema> {
    return callUnary(pb.BeginTurnRequestSchema, pb.BeginTurnResponseSchema, this.stub.beginTurn, request, options);
  }

  /** EndTurn: close a turn; its summary. */
  endTurn(request: Request<typeof pb.EndTurnRequestSchema>, options?: CallOptions): Response<typeof pb.EndTurnResponseSchema> {
    return callUnary(pb.EndTurnRequestSchema, pb.EndTurnResponseSchema, this.stub.endTurn, request, options);
  }

  /** ReportFailure: one failed attempt, and errord's decision on it. */
  reportFailure(request: Request<typeof pb.ReportFailureRequestSchema>, options?: CallOptions): Response<typeof pb.ReportFailureResponseSchema> {
    return callUnary(pb.ReportFailureRequestSchema, pb.ReportFailureResponseSchema, this.stub.reportFailure, request, options);
  }

  /** ReportFailures: several failures at once, one result each, in order. */
  reportFailures(request: Request<typeof pb.ReportFailuresRequestSchema>, options?: CallOptions): Response<typeof pb.ReportFailuresResponseSchema> {
    return callUnary(pb.ReportFailuresRequestSchema, pb.ReportFailuresResponseSchema, this.stub.reportFailures, request, options);
  }

  /** ReportOutcome: how an attempt ended (a success closes breakers, feeds statistics). */
  reportOutcome(request: Request<typeof pb.ReportOutcomeRequestSchema>, options?: CallOptions): Response<typeof pb.ReportOutcomeResponseSchema> {
    return callUnary(pb.ReportOutcomeRequestSchema, pb.ReportOutcomeResponseSchema, this.stub.reportOutcome, request, options);
  }

  /** ReconcileResults: exactly one result per tool call of a model turn, in call order. */
  reconcileResults(request: Request<typeof pb.ReconcileResultsRequestSchema>, options?: CallOptions): Response<typeof pb.ReconcileResultsResponseSchema> {
    return callUnary(pb.ReconcileResultsRequestSchema, pb.ReconcileResultsResponseSchema, this.stub.reconcileResults, request, options);
  }

  /** ValidateCall: a call's arguments checked against its tool's JSON Schema. */
  validateCall(request: Request<typeof pb.ValidateCallRequestSchema>, options?: CallOptions): Response<typeof pb.ValidateCallResponseSchema> {
    return callUnary(pb.ValidateCallRequestSchema, pb.ValidateCallResponseSchema, this.stub.validateCall, request, options);
  }

  /** GetTurnTrace: one page of a turn's events, oldest first. */
  getTurnTrace(request: Request<typeof pb.GetTurnTraceRequestSchema>, options?: CallOptions): Response<typeof pb.GetTurnTraceResponseSchema> {
    return callUnary(pb.GetTurnTraceRequestSchema, pb.GetTurnTraceResponseSchema, this.stub.getTurnTrace, request, options);
  }

  /** Every event of a turn, oldest first (GetTurnTrace, all its pages). */
  async turnTrace(turnId: string, options?: CallOptions): Promise<Plain<pb.TraceEvent>[]> {
    const events: Plain<pb.TraceEvent>[] = [];
    let pageToken = "";
    do {
      const page = await this.getTurnTrace({ turnId, pageToken }, options);
      events.push(...page.events);
      pageToken = page.nextPageToken;
    } while (pageToken);
    return events;
  }

  /** WatchTrace: trace events as they are committed, for as long as the stream is read. */
  watchTrace(request: Request<typeof pb.WatchTraceRequestSchema> = {}, options: CallOptions = {}): AsyncGenerator<Plain<pb.WatchTraceResponse>> {
    return plainStream(pb.WatchTraceResponseSchema, this.stub.watchTrace(toMessage(pb.WatchTraceRequestSchema, request), { signal: options.signal }));
  }

  /** AdmitCall: whether a tool's breaker lets an attempt run (and errord's decision when not). */
  admitCall(request: Request<typeof pb.AdmitCallRequestSchema>, options?: CallOptions): Response<typeof pb.AdmitCallResponseSchema> {
    return callUnary(pb.AdmitCallRequestSchema, pb.AdmitCallResponseSchema, this.stub.admitCall, request, options);
  }

  /** WatchTools: every tool's timeout and breaker, then the changes, as they happen. */
  watchTools(options: CallOptions = {}): AsyncGenerator<Plain<pb.WatchToolsResponse>> {
    return plainStream(pb.WatchToolsResponseSchema, this.stub.watchTools({}, { signal: options.signal }));
  }
}

/** OperatorService: breakers, statistics, episodic memory, manifest reloads. */
export class OperatorClient {
  /** The generated client, for generated messages in and out. */
  readonly stub: Client<typeof pb.OperatorService>;

  /** `options`: where errord is, its (operator) token, TLS; or `transport`, one to share. */
  constructor(options: ConnectionOptions & { transport?: Transport } = {}) {
    this.stub = createClient(pb.OperatorService, transportOf(options));
  }

  /** ListBreakers: every tool's breaker. */
  listBreakers(options?: CallOptions): Response<typeof pb.ListBreakersResponseSchema> {
    return callUnary(pb.ListBreakersRequestSchema, pb.ListBreakersResponseSchema, this.stub.listBreakers, {}, options);
  }

  /** GetBreaker: one tool's breaker (effectivePhase: an open one past its cooldown reads HALF_OPEN). */
  getBreaker(request: Request<typeof pb.GetBreakerRequestSchema>, options?: CallOptions): Response<typeof pb.GetBreakerResponseSchema> {
    return callUnary(pb.GetBreakerRequestSchema, pb.GetBreakerResponseSchema, this.stub.getBreaker, request, options);
  }

  /** ResetBreaker: close a tool's breaker. */
  resetBreaker(request: Request<typeof pb.ResetBreakerRequestSchema>, options?: CallOptions): Response<typeof pb.ResetBreakerResponseSchema> {
    return callUnary(pb.ResetBreakerRequestSchema, pb.ResetBreakerResponseSchema, this.stub.resetBreaker, request, options);
  }

  /** ForceOpenBreaker: open a tool's breaker, for `duration` seconds or until reset. */
  forceOpenBreaker(request: Request<typeof pb.ForceOpenBreakerRequestSchema>, options?: CallOptions): Response<typeof pb.ForceOpenBreakerResponseSchema> {
    return callUnary(pb.ForceOpenBreakerRequestSchema, pb.ForceOpenBreakerResponseSchema, this.stub.forceOpenBreaker, request, options);
  }

  /** GetToolStats: one tool's statistics and alerts, or every tool's. */
  getToolStats(request: Request<typeof pb.GetToolStatsRequestSchema> = {}, options?: CallOptions): Response<typeof pb.GetToolStatsResponseSchema> {
    return callUnary(pb.GetToolStatsRequestSchema, pb.GetToolStatsResponseSchema, this.stub.getToolStats, request, options);
  }

  /** RecallEpisodes: what episodic memory holds of a tool's errors. */
  recallEpisodes(request: Request<typeof pb.RecallEpisodesRequestSchema>, options?: CallOptions): Response<typeof pb.RecallEpisodesResponseSchema> {
    return callUnary(pb.RecallEpisodesRequestSchema, pb.RecallEpisodesResponseSchema, this.stub.recallEpisodes, request, options);
  }

  /** ReloadManifests: read the manifests directory again. */
  reloadManifests(request: Request<typeof pb.ReloadManifestsRequestSchema> = {}, options?: CallOptions): Response<typeof pb.ReloadManifestsResponseSchema> {
    return callUnary(pb.ReloadManifestsRequestSchema, pb.ReloadManifestsResponseSchema, this.stub.reloadManifests, request, options);
  }
}
