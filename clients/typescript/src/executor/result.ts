/**
 * The one result of one tool call, and the shapes model APIs take it back in.
 *
 * The executor returns a `ToolResult` for every call, never throws for one: what became
 * of it (`status`), who decided (`decidedBy`), the tool's output or the error (a
 * technical `message` for logs, a `userMessage` for people), how long it took
 * (`executionTimeMs`) and how many attempts ran. Its fields are the Python client's
 * ToolResult's, in camelCase.
 *
 * `resultContent` is what the model reads; `toOpenAI`, `toOpenAIResponses` and
 * `toAnthropic` put it in the message each API takes.
 */
import type { JsonValue } from "@bufbuild/protobuf";

/** What became of a call. */
export type ResultStatus =
  /** A tool (the one called, or an alternative) returned its output. */
  | "succeeded"
  /** The call failed and nothing stands in for its output. */
  | "failed"
  /** The last attempt did not finish in time. */
  | "timed_out"
  /** The call was not run, or given up, and the turn goes on without it. */
  | "skipped"
  /** The tool failed; its default result stands in for its output. */
  | "defaulted"
  /** The tool failed after producing part of its output, which the turn goes on with. */
  | "partial"
  /** The model is to correct its call: the result says what to fix. */
  | "returned_to_model"
  /** The user is to be asked before the turn goes on. */
  | "escalated";

/** Who decided how the call ended: nobody (it succeeded at once), errord, or the local policy. */
export type DecidedBy = "nobody" | "errord" | "local";

/** Why a call has no output of its own. */
export interface ResultError {
  /** An ErrorCode name without its prefix ("TIMEOUT", "RATE_LIMITED"), or "" if unknown. */
  readonly code: string;
  /** "transient", "permanent", or "" when nobody classified it. */
  readonly errorClass: string;
  /** The technical message, for logs. */
  readonly message: string;
  /** What to tell the user, in plain words. */
  readonly userMessage: string;
  /** Whether calling again may succeed: false for a permanent failure, and for an attempt
   * an open circuit breaker refused (CIRCUIT_OPEN: no attempt runs until it closes). */
  readonly retryable: boolean;
  /** Who can act on the failure: "ARGUMENTS" (the model), "TOOL" (its own code), "BACKEND"
   * (time), "PERSON" (someone must), or "" when nobody said. */
  readonly fault: string;
  /** The call's parameter the failure is about, when known. */
  readonly parameter: string;
  /** The class of the exception the last attempt failed with, as the executor reported
   * it: the tool's ("TypeError"), or the executor's own check's; "" when there was none. */
  readonly exceptionType: string;
  /** errord's correction of a call handed back to the model: what to fix and how. */
  readonly correction: Correction | null;
}

/** errord's correction of a call whose arguments (or tool name) the model got wrong. */
export interface Correction {
  /** missing_parameter, invalid_type, invalid_value, ..., unknown_tool (errord's list). */
  readonly type: string;
  /** What is wrong, in a sentence the model can act on. */
  readonly message: string;
  /** The parameter to correct first, if known. */
  readonly parameter: string;
  /** The parameters the tool's JSON Schema requires. */
  readonly requiredParameters: readonly string[];
  /** Arguments that satisfy the tool's schema, built from it; null when errord has none. */
  readonly example: Readonly<Record<string, unknown>> | null;
  /** How to call again. */
  readonly retryHint: string;
  /** For an unknown tool: the known tools closest to the name. */
  readonly availableTools: readonly string[];
}

/** The one result of one tool call. */
export interface ToolResult {
  /** The model's id for the call. */
  readonly callId: string;
  /** The tool the model called. */
  readonly tool: string;
  readonly status: ResultStatus;
  /** The output the model gets: the tool's, a partial one, or the default. */
  readonly output: unknown;
  readonly error: ResultError | null;
  /** Wall time of the call in ms, every attempt and wait between them included. */
  readonly executionTimeMs: number;
  /** Attempts run, of the tool called and of its alternatives. */
  readonly attempts: number;
  /** True when an alternative tool ran in place of the one called. */
  readonly fallbackUsed: boolean;
  /** The tool whose result this is: `tool`, or the alternative's name when one ran. */
  readonly toolUsed: string;
  readonly decidedBy: DecidedBy;
  /** errord's decisions on the call, in order. */
  readonly decisionIds: readonly string[];
  /** What to tell the model of an error (errord's llm_message), when there is one. */
  readonly modelText: string;
  /** The call's arguments its tool's schema does not take, which the tool ran without (as
   * frameworks ignore them); the model is not told. */
  readonly ignoredArguments: readonly string[];
}

const OK: ReadonlySet<ResultStatus> = new Set(["succeeded", "defaulted", "partial"]);

/** True when the model gets an output: succeeded, defaulted or partial. */
export function isOk(result: ToolResult): boolean {
  return OK.has(result.status);
}

const ERROR_WORDS: Record<ResultStatus, string> = {
  succeeded: "",
  defaulted: "",
  partial: "",
  failed: "Error: {tool} failed",
  timed_out: "Error: {tool} timed out",
  skipped: "Not run: the {tool} call was skipped",
  returned_to_model: "Error: the {tool} call needs correcting",
  escalated: "Error: {tool} failed; the user is being asked how to go on",
};

/** What the model reads: for an error `modelText`, else a sentence of the status and the
 * error's message; else the output, a string as it is, anything else as compact JSON. */
export function resultContent(result: ToolResult): string {
  if (!isOk(result)) {
    if (result.modelText) return result.modelText;
    const text = ERROR_WORDS[result.status].replace("{tool}", result.tool);
    const detail = result.error?.message || result.error?.userMessage || "";
    return detail ? `${text}: ${detail}` : `${text}.`;
  }
  if (typeof result.output === "string") return result.output;
  return jsonText(result.output);
}

/** An OpenAI Chat Completions `tool` message (the API has no error flag). */
export function toOpenAI(result: ToolResult): { role: "tool"; tool_call_id: string; content: string } {
  return { role: "tool", tool_call_id: result.callId, content: resultContent(result) };
}

/** An OpenAI Responses `function_call_output` input item. */
export function toOpenAIResponses(result: ToolResult): { type: "function_call_output"; call_id: string; output: string } {
  return { type: "function_call_output", call_id: result.callId, output: resultContent(result) };
}

/** An Anthropic `tool_result` content block, `is_error: true` for an error. */
export function toAnthropic(result: ToolResult): {
  type: "tool_result";
  tool_use_id: string;
  content: string;
  is_error?: true;
} {
  const block = { type: "tool_result" as const, tool_use_id: result.callId, content: resultContent(result) };
  return isOk(result) ? block : { ...block, is_error: true };
}

/** `value` as compact JSON; what JSON cannot hold (a cycle, a bigint) as its text. */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value, (_key, item: unknown) => (typeof item === "bigint" ? item.toString() : item)) ?? "null";
  } catch {
    return String(value);
  }
}

/** `value` as plain JSON values (what `jsonText` writes, read back). */
export function jsonValue(value: unknown): JsonValue {
  return JSON.parse(jsonText(value)) as JsonValue;
}
