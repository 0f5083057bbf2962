/**
 * The response validation middleware of "Tool Execution Error Handling - Architecture",
 * under its own names and shapes: `@errord/client/compat/response-validation-middleware`.
 *
 *     const check = responseValidationMiddleware.validateToolCallResultMatch(toolCalls, results);
 *     if (!check.valid) results = check.correctedResults; // one per call, in call order
 *
 * The checks are the document's, on the shapes of the tool execution service
 * (./toolExecutionService.ts): a request's messages and tool definitions, a response's
 * content, tool calls and tool results, and one result per call with the calls' ids in
 * their order. They run here, synchronously, as the document's do; each error names the
 * field. `reconcile` asks errord instead (ReconcileResults): it keeps the first result of
 * each call, drops the others, writes the missing ones from the turn's trace, and counts
 * what it had to synthesize or drop for its response-validation alert.
 */
import { ErrordClient } from "../client.js";
import { failureFromError } from "../executor/failures.js";
import { localCode } from "../executor/localPolicy.js";
import { jsonText } from "../executor/result.js";
import { validateResponseMatch } from "../reconcile.js";
import type { ToolCall, ToolErrorInfo, ToolExecutionResult } from "./toolExecutionService.js";

/** Whether something passed a check; `errors` says what did not, one line each. */
export interface ValidationResult {
  readonly valid: boolean;
  readonly errors: string[];
}

/** The call/result match, and when it failed, the results corrected: one per call, in
 * call order (the first result of each call kept, a placeholder error for a call without). */
export interface ToolCallResultValidation extends ValidationResult {
  readonly correctedResults?: ToolExecutionResult[];
}

/** A request to the model: its messages and the tools it may call. */
export interface ModelRequest {
  readonly messages: readonly unknown[];
  readonly tools?: readonly unknown[];
}

/** The model's response, and the results of the tool calls it made. */
export interface ModelResponse {
  readonly content?: string;
  readonly toolCalls?: readonly ToolCall[];
  readonly toolResults?: readonly ToolExecutionResult[];
}

/** What to return when the model could not answer: no tool calls, the error's words. */
export interface ErrorResponse {
  readonly content: string;
  readonly toolCalls: ToolCall[];
  readonly toolResults: ToolExecutionResult[];
  readonly error: ToolErrorInfo;
}

const ROLES = new Set(["user", "assistant", "system", "tool"]);
const STATUSES = new Set(["success", "error", "timeout"]);

/** The document's categories, by the code the executor gives an error on its own. */
const CODES: Record<string, string> = {
  CONNECTION: "NETWORK_ERROR",
  UNAVAILABLE: "NETWORK_ERROR",
  TIMEOUT: "TIMEOUT",
  RATE_LIMITED: "RATE_LIMIT_ERROR",
  AUTH: "AUTHENTICATION_ERROR",
  INVALID_INPUT: "VALIDATION_ERROR",
};
const RETRYABLE = new Set(["NETWORK_ERROR", "TIMEOUT", "RATE_LIMIT_ERROR", "TOOL_EXECUTION_ERROR"]);

/** The middleware's checks and corrections. */
export class ResponseValidationMiddleware {
  private readonly client: ErrordClient | undefined;

  /** `client`: the errord `reconcile` asks (an executor's `client`, or the service's). */
  constructor(options: { client?: ErrordClient } = {}) {
    this.client = options.client;
  }

  /** Messages present, each with a role and content; each tool with a name. */
  validateRequest(request: ModelRequest): ValidationResult {
    const errors: string[] = [];
    if (!isRecord(request)) return invalid("request must be an object");
    if (!Array.isArray(request.messages) || request.messages.length === 0) {
      errors.push("messages must be a non-empty array");
    } else {
      request.messages.forEach((message, i) => {
        if (!isRecord(message)) return void errors.push(`messages[${i}] must be an object`);
        if (!ROLES.has(message["role"] as string)) errors.push(`messages[${i}].role must be one of: ${[...ROLES].join(", ")}`);
        const hasTools = message["toolCalls"] !== undefined || message["toolResults"] !== undefined;
        if (typeof message["content"] !== "string" && !hasTools) errors.push(`messages[${i}].content must be a string`);
      });
    }
    if (request.tools !== undefined) {
      if (!Array.isArray(request.tools)) errors.push("tools must be an array");
      else {
        request.tools.forEach((tool, i) => {
          if (!isRecord(tool)) return void errors.push(`tools[${i}] must be an object`);
          if (typeof tool["name"] !== "string" || !tool["name"]) errors.push(`tools[${i}].name must be a non-empty string`);
          if (tool["description"] !== undefined && typeof tool["description"] !== "string") {
            errors.push(`tools[${i}].description must be a string`);
          }
          if (tool["parameters"] !== undefined && !isRecord(tool["parameters"])) errors.push(`tools[${i}].parameters must be an object`);
        });
      }
    }
    return { valid: errors.length === 0, errors };
  }

  /** Content a string; each tool call and result whole; as many results as calls, with
   * the calls' ids in their order. */
  validateResponse(response: ModelResponse): ValidationResult {
    if (!isRecord(response)) return invalid("response must be an object");
    const errors: string[] = [];
    if (response.content !== undefined && typeof response.content !== "string") errors.push("content must be a string");
    const calls = response.toolCalls;
    if (calls !== undefined) {
      if (!Array.isArray(calls)) errors.push("toolCalls must be an array");
      else calls.forEach((call, i) => errors.push(...callErrors(call, `toolCalls[${i}]`)));
    }
    const results = response.toolResults;
    if (results !== undefined) {
      if (!Array.isArray(results)) errors.push("toolResults must be an array");
      else results.forEach((result, i) => errors.push(...resultErrors(result, `toolResults[${i}]`)));
    }
    if (errors.length === 0 && Array.isArray(calls) && Array.isArray(results)) {
      errors.push(...this.validateToolCallResultMatch(calls, results).errors);
    }
    return { valid: errors.length === 0, errors };
  }

  /** As many results as calls, the calls' ids in their order; when not, the results
   * corrected (see ToolCallResultValidation). */
  validateToolCallResultMatch(toolCalls: readonly ToolCall[], toolResults: readonly ToolExecutionResult[]): ToolCallResultValidation {
    const calls = Array.isArray(toolCalls) ? toolCalls.filter((call): boolean => isRecord(call)) : [];
    const results = Array.isArray(toolResults) ? toolResults.filter((result): boolean => isRecord(result)) : [];
    const errors: string[] = [];
    if (results.length !== calls.length) {
      errors.push(`Result count (${results.length}) does not match call count (${calls.length})`);
    }
    const callIds = new Set(calls.map((call) => call.id));
    const firsts = new Map<string, ToolExecutionResult>();
    for (const result of results) if (!firsts.has(result.callId)) firsts.set(result.callId, result);
    for (const call of calls) if (!firsts.has(call.id)) errors.push(`No result for tool call ${call.id} (${call.name})`);
    for (const result of results) if (!callIds.has(result.callId)) errors.push(`Result for unknown tool call ${result.callId}`);
    const seen = new Set<string>();
    for (const result of results) {
      if (seen.has(result.callId) && callIds.has(result.callId)) errors.push(`More than one result for tool call ${result.callId}`);
      seen.add(result.callId);
    }
    if (errors.length === 0 && calls.some((call, i) => results[i]?.callId !== call.id)) {
      errors.push(`Result order mismatch: calls ${calls.map((c) => c.id).join(", ")}, results ${results.map((r) => r.callId).join(", ")}`);
    }
    if (errors.length === 0) return { valid: true, errors };
    return { valid: false, errors, correctedResults: calls.map((call) => firsts.get(call.id) ?? placeholder(call)) };
  }

  /** `response` with what cannot be used left out: content a string (else ""), the tool
   * calls and results that are whole, a call's missing parameters `{}`. */
  sanitizeResponse<R extends ModelResponse>(response: R): R & Required<ModelResponse> {
    const given = (isRecord(response) ? response : {}) as R;
    const calls = Array.isArray(given.toolCalls) ? given.toolCalls : [];
    const results = Array.isArray(given.toolResults) ? given.toolResults : [];
    return {
      ...given,
      content: typeof given.content === "string" ? given.content : "",
      toolCalls: calls
        .map((call) => (isRecord(call) && call.parameters === undefined ? { ...call, parameters: {} } : call))
        .filter((call) => callErrors(call, "").length === 0),
      toolResults: results.filter((result) => resultErrors(result, "").length === 0),
    };
  }

  /** A response standing for the model's answer when `error` prevented it: no tool calls,
   * the error in the document's categories (read as the executor reads a tool's error). */
  createErrorResponse(error: unknown): ErrorResponse {
    const failure = failureFromError(error);
    const code = CODES[localCode(failure)] ?? "TOOL_EXECUTION_ERROR";
    const userMessage =
      code === "RATE_LIMIT_ERROR"
        ? "The assistant is receiving too many requests right now. Please try again in a moment."
        : code === "AUTHENTICATION_ERROR"
          ? "The assistant could not sign in to a service it needs. Please contact support."
          : "The assistant could not complete this request. Please try again.";
    return {
      content: userMessage,
      toolCalls: [],
      toolResults: [],
      error: { code, message: failure.message, userMessage, retryable: RETRYABLE.has(code) },
    };
  }

  /** errord's answer to the match (ReconcileResults on the turn `turnId`): one result per
   * call, in call order; a kept one as given, one errord wrote as an error result whose
   * message is errord's text for the model. */
  async reconcile(
    turnId: string,
    toolCalls: readonly ToolCall[],
    toolResults: readonly ToolExecutionResult[],
  ): Promise<ToolExecutionResult[]> {
    const client = this.client ?? new ErrordClient();
    const calls = toolCalls.map((call) => ({ id: call.id, name: call.name, arguments: call.parameters ?? {} }));
    const held = toolResults.map((result) => ({
      callId: result.callId,
      content: result.status === "success" ? jsonText(result.output) : (result.error?.message ?? result.status),
      isError: result.status !== "success",
    }));
    const matched = await validateResponseMatch(client, turnId, calls, held, { timeout: 10 });
    const firsts = new Map<string, ToolExecutionResult>();
    for (const result of toolResults) if (!firsts.has(result.callId)) firsts.set(result.callId, result);
    return matched.map((result) => {
      const kept = result.kept ? firsts.get(result.callId) : undefined;
      if (kept !== undefined) return kept;
      return {
        toolName: result.tool,
        callId: result.callId,
        status: "error" as const,
        error: { code: "MISSING_RESULT", message: result.content, userMessage: missingWords(result.tool), retryable: false },
        executionTime: 0,
      };
    });
  }
}

/** The middleware with no errord of its own (`reconcile` asks errord at its default address). */
export const responseValidationMiddleware = new ResponseValidationMiddleware();

function placeholder(call: ToolCall): ToolExecutionResult {
  return {
    toolName: call.name,
    callId: call.id,
    status: "error",
    error: {
      code: "MISSING_RESULT",
      message: `tool call ${call.id} (${call.name}) has no result`,
      userMessage: missingWords(call.name),
      retryable: false,
    },
    executionTime: 0,
  };
}

function missingWords(tool: string): string {
  return `The ${tool} tool did not return a result.`;
}

function callErrors(call: unknown, at: string): string[] {
  if (!isRecord(call)) return [`${at} must be an object`];
  const errors: string[] = [];
  if (typeof call["id"] !== "string" || !call["id"]) errors.push(`${at}.id must be a non-empty string`);
  if (typeof call["name"] !== "string" || !call["name"]) errors.push(`${at}.name must be a non-empty string`);
  if (!isRecord(call["parameters"])) errors.push(`${at}.parameters must be an object`);
  return errors;
}

function resultErrors(result: unknown, at: string): string[] {
  if (!isRecord(result)) return [`${at} must be an object`];
  const errors: string[] = [];
  if (typeof result["callId"] !== "string" || !result["callId"]) errors.push(`${at}.callId must be a non-empty string`);
  if (typeof result["toolName"] !== "string") errors.push(`${at}.toolName must be a string`);
  if (!STATUSES.has(result["status"] as string)) errors.push(`${at}.status must be one of: success, error, timeout`);
  if (typeof result["executionTime"] !== "number") errors.push(`${at}.executionTime must be a number`);
  if ((result["status"] === "error" || result["status"] === "timeout") && !isRecord(result["error"])) {
    errors.push(`${at}.error must be an object when status is ${String(result["status"])}`);
  }
  return errors;
}

function invalid(error: string): ValidationResult {
  return { valid: false, errors: [error] };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
