/**
 * The tool calls a model asks for, read from whichever API's shape they come in.
 *
 * `toolCall` takes one call as the API returned it:
 * - OpenAI Chat Completions: `{ id, type: "function", function: { name, arguments: "<JSON>" } }`;
 * - OpenAI Responses: `{ type: "function_call", call_id, name, arguments: "<JSON>" }`;
 * - Anthropic Messages: `{ type: "tool_use", id, name, input: {...} }`;
 * - a plain `{ id | callId | call_id, name, arguments | input }`, with the plan's
 *   `dependsOn`, `optional` and `default`.
 *
 * Arguments that are not JSON, or not a JSON object, do not throw: the call comes back
 * with arguments `{}` and `malformed` saying what was wrong, and the executor hands it
 * back to the model as an INVALID_INPUT failure. Only a call without an id or a name
 * throws a TypeError here; the executor turns it into a failed result that says so.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** One tool call of the model's message, and what the turn's plan says of it. */
export interface ToolCall {
  /** The model's id for the call, which its result carries. */
  readonly callId: string;
  /** The tool the model called. */
  readonly name: string;
  /** The tool's input; `{}` when `malformed`. */
  readonly arguments: JsonObject;
  /** Ids of the calls of the batch whose results this call needs. */
  readonly dependsOn: readonly string[];
  /** Whether the turn can go on without this call; undefined: as its manifest says. */
  readonly optional?: boolean;
  /** The call's default result; undefined: its manifest's. */
  readonly default?: JsonValue;
  /** Why the model's arguments could not be read, when they could not. */
  readonly malformed: string;
}

/** A tool call in any of the shapes the module's comment lists. */
export type RawToolCall = Partial<ToolCall> | Record<string, unknown>;

/** `raw` as a ToolCall (see the module's comment). */
export function toolCall(raw: RawToolCall): ToolCall {
  const record = raw as Record<string, unknown>;
  const fn = record["function"] as Record<string, unknown> | undefined;
  const holder = fn ?? record;
  const callId = text(record, "callId") || text(record, "call_id") || text(record, "id");
  if (!callId) throw new TypeError(`tool call has no "id" (nor "call_id"): ${preview(raw)}`);
  const name = text(holder, "name");
  if (!name) throw new TypeError(`tool call ${callId} has no ${fn ? '"function.name"' : '"name"'}: ${preview(raw)}`);
  const [args, malformed] = argumentsOf(holder["arguments"] ?? holder["input"]);
  const dependsOn = (record["dependsOn"] ?? record["depends_on"] ?? []) as string[];
  return {
    callId,
    name,
    arguments: args,
    dependsOn: [...dependsOn],
    optional: record["optional"] as boolean | undefined,
    default: record["default"] as JsonValue | undefined,
    malformed: (record["malformed"] as string | undefined) || malformed,
  };
}

function argumentsOf(given: unknown): [JsonObject, string] {
  if (given === undefined || given === null) return [{}, ""];
  let value = given;
  if (typeof given === "string") {
    if (!given.trim()) return [{}, ""];
    try {
      value = JSON.parse(given);
    } catch (error) {
      return [{}, `the arguments are not valid JSON: ${(error as Error).message}`];
    }
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return [{}, `the arguments should be a JSON object, got ${kind(value)}: ${preview(given)}`];
  }
  return [value as JsonObject, ""];
}

function kind(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  return typeof value === "number" ? "a number" : typeof value === "boolean" ? "a boolean" : `a ${typeof value}`;
}

function text(holder: Record<string, unknown>, key: string): string {
  const value = holder[key];
  if (value === undefined || value === null) return "";
  if (typeof value !== "string") throw new TypeError(`tool call's "${key}" should be a string, got ${typeof value}`);
  return value;
}

function preview(value: unknown): string {
  let shown: string;
  try {
    shown = typeof value === "string" ? value : JSON.stringify(value);
  } catch {
    shown = String(value);
  }
  return shown.length <= 200 ? shown : `${shown.slice(0, 200)}...`;
}

/** A call no tool can be run for (not an object, or without an id or a name): what could
 * be read of it and why it cannot run. */
export interface UnreadableCall {
  readonly callId: string;
  /** The tool it names, if it names one. */
  readonly tool: string;
  readonly problem: string;
}

/** `raw` as a ToolCall, or as an unreadable call: never throws. */
export function readCall(raw: RawToolCall | null | undefined): ToolCall | UnreadableCall {
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
