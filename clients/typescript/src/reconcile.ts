/**
 * `validateResponseMatch`: exactly one result per tool call of a model turn, in call
 * order (errord's ReconcileResults), so that the next model request is never rejected
 * for an unanswered call: the results held are kept (the first of a call that has
 * several), results for calls the model did not make are dropped, and a call without
 * one gets an error result errord makes from the turn's trace.
 */
import type { ErrordClient, CallOptions } from "./client.js";
import { ResultOrigin, type ReconcileResultsResponse } from "./gen/errord/v1/errord_pb.js";
import type { Plain } from "./plain.js";
import { toolCall, type RawToolCall } from "./executor/calls.js";
import { isOk, resultContent, type ToolResult } from "./executor/result.js";

/** One result of a reconciled turn, as the model is to get it. */
export interface MatchedResult {
  readonly callId: string;
  readonly tool: string;
  /** What to send the model. */
  readonly content: string;
  readonly isError: boolean;
  /** False when errord made it for a call without a result. */
  readonly kept: boolean;
}

/** A result held for a call: the executor's, or any `{ callId, content, isError }`. */
export type HeldResult = ToolResult | { readonly callId: string; readonly content: string; readonly isError?: boolean };

/** One result per call of `calls` (as the model made them), in their order. */
export async function validateResponseMatch(
  client: ErrordClient,
  turnId: string,
  calls: readonly RawToolCall[],
  results: readonly HeldResult[],
  options?: CallOptions,
): Promise<MatchedResult[]> {
  const response: Plain<ReconcileResultsResponse> = await client.reconcileResults(
    {
      turnId,
      calls: calls.map(toolCall).map((call) => ({ callId: call.callId, tool: call.name })),
      results: results.map(held),
    },
    options,
  );
  return response.results.map((result) => ({
    callId: result.callId,
    tool: result.tool,
    content: result.content,
    isError: result.isError,
    kept: result.origin === ResultOrigin.KEPT,
  }));
}

function held(result: HeldResult): { callId: string; content: string; isError: boolean } {
  if ("status" in result) return { callId: result.callId, content: resultContent(result), isError: !isOk(result) };
  return { callId: result.callId, content: result.content, isError: result.isError ?? false };
}
