/**
 * errord for LangChain.js tools (`@langchain/core`): each tool's calls run under the
 * executor.
 *
 *     import { errordTools } from "@errord/client/langchain";
 *
 *     const tools = errordTools(executor, [weather, bookRoom]);     // tool(...) or StructuredTools
 *     const model = chat.bindTools(tools);
 *     await executor.turn({ userId }).within(async () => {          // one errord turn
 *       for (let ai = await model.invoke(messages); ai.tool_calls?.length; ai = await model.invoke(messages)) {
 *         messages.push(ai, ...(await Promise.all(ai.tool_calls.map((call) => byName[call.name].invoke(call)))));
 *       }
 *     });
 *
 * A wrapped tool has its tool's name, description and schema (what `bindTools` shows the
 * model) and takes what the tool takes: invoked with a model's tool call it returns a
 * `ToolMessage`, the tool's own (its artifact, its status) when the call succeeded, one
 * of status "error" with the text errord wrote for the model when it did not recover. So
 * an agent loop, LangGraph's ToolNode or `createAgent` hand the model errord's words
 * without an error handler of their own. Invoked with plain arguments it returns the
 * tool's output, or throws an `ErrordToolError` carrying that text.
 *
 * The tool checks its input against its schema before it runs; a wrapped tool runs that
 * check inside the attempt, so a rejected input is an INVALID_INPUT failure errord
 * decides on, and the model gets errord's correction naming the parameter rather than
 * "Received tool input did not match expected schema". A valid call runs the tool as it
 * would run alone, its config (callbacks, the run's signal) passed on, the attempt's
 * signal added.
 */
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { ToolMessage } from "@langchain/core/messages";
import { StructuredTool, ToolInputParsingException, type StructuredToolInterface } from "@langchain/core/tools";
import { toJsonSchema } from "@langchain/core/utils/json_schema";
import type { Executor } from "../executor/executor.js";
import { isOk, jsonText, resultContent, type ToolResult } from "../executor/result.js";
import { InvalidArguments, type Tool, type ToolContext } from "../tools/registry.js";
import { invalidArguments } from "./validation.js";

/** Options of `errordTools`. */
export interface ErrordToolsOptions {
  /** The scope of every tool's breaker, statistics and memory (`Tool.scope`). */
  readonly scope?: string;
}

/** A call that did not recover, invoked without a tool call: its message is what errord
 * wrote for the model. */
export class ErrordToolError extends Error {
  override readonly name = "ErrordToolError";

  constructor(readonly result: ToolResult) {
    super(resultContent(result));
  }
}

/** A model's tool call, as LangChain hands it to a tool. */
interface LangChainToolCall {
  readonly id?: string;
  readonly name: string;
  readonly args: Record<string, unknown>;
  readonly type?: "tool_call";
}

/** A LangChain config, as far as a wrapped tool reads it. */
interface Config {
  readonly signal?: AbortSignal;
  readonly toolCall?: LangChainToolCall;
  readonly [key: string]: unknown;
}

/** `tools` each wrapped to run under `executor` (see the module's comment), registered
 * with it by name. */
export function errordTools(executor: Executor, tools: readonly StructuredToolInterface[], options: ErrordToolsOptions = {}): ErrordTool[] {
  return tools.map((tool) => new ErrordTool(executor, tool, options));
}

/** A LangChain tool whose calls run under errord's executor. */
export class ErrordTool extends StructuredTool {
  override name: string;
  override description: string;
  override schema: StructuredToolInterface["schema"];
  /** The configs of the calls running, by call id, for the attempts to run with. */
  private readonly running = new Map<string, Config>();

  constructor(
    private readonly executor: Executor,
    readonly tool: StructuredToolInterface,
    options: ErrordToolsOptions = {},
  ) {
    super({ responseFormat: "content" });
    this.name = tool.name;
    this.description = tool.description;
    this.schema = tool.schema;
    const registered: Tool = {
      name: tool.name,
      description: tool.description,
      parameters: toJsonSchema(tool.schema as Parameters<typeof toJsonSchema>[0]) as JsonObject,
      scope: options.scope,
      run: (args, context) => this.attempt(args, context),
    };
    executor.registry.register(registered);
  }

  /** The call, through the executor: the tool's ToolMessage (or output), or errord's text. */
  override async call(arg: unknown, configArg?: unknown): Promise<any> {
    const config = (typeof configArg === "object" && configArg !== null ? configArg : {}) as Config;
    const toolCall = config.toolCall;
    const callId = toolCall?.id || `call-${randomUUID()}`;
    this.running.set(callId, config);
    let result: ToolResult;
    try {
      result = await this.executor.runOne({ id: callId, name: this.name, arguments: arg as JsonObject });
    } finally {
      this.running.delete(callId);
    }
    if (toolCall === undefined) {
      if (!isOk(result)) throw new ErrordToolError(result);
      return result.output;
    }
    if (!isOk(result)) return new ToolMessage({ content: resultContent(result), tool_call_id: callId, name: this.name, status: "error" });
    if (isToolOutput(result.output)) return result.output;
    // errord's default, or an alternative's plain output: as the tool's own would be.
    const content = typeof result.output === "string" ? result.output : jsonText(result.output);
    return new ToolMessage({ content, tool_call_id: callId, name: this.name, status: "success" });
  }

  /** Unused: `call` runs the wrapped tool. */
  protected override async _call(): Promise<never> {
    throw new Error(`${this.name}: an ErrordTool runs its tool through call()`);
  }

  /** One attempt: the wrapped tool invoked as the model's call (its own schema check
   * first), with the attempt's signal beside the run's. */
  private async attempt(args: JsonObject, context: ToolContext): Promise<unknown> {
    const { toolCall, signal, ...config } = this.running.get(context.callId) ?? {};
    const aborts = signal ? AbortSignal.any([signal, context.signal]) : context.signal;
    const input = toolCall ? { ...toolCall, id: context.callId, args } : args;
    try {
      return await this.tool.invoke(input as never, { ...config, signal: aborts });
    } catch (error) {
      if (error instanceof ToolInputParsingException) throw await this.rejected(args, error);
      throw error;
    }
  }

  /** The schema's own account of why `args` were rejected, naming each parameter. */
  private async rejected(args: JsonObject, error: ToolInputParsingException): Promise<InvalidArguments> {
    const schema = this.tool.schema as { safeParseAsync?: (value: unknown) => Promise<{ success: boolean; error?: unknown }> };
    const parsed = await schema.safeParseAsync?.(args);
    return parsed && !parsed.success ? invalidArguments(this.name, parsed.error) : new InvalidArguments(`${this.name}: ${error.message}`);
  }
}

/** True for what a LangChain tool returns for a tool call: a ToolMessage, or a LangGraph
 * Command (any object a tool returns "directly"). */
function isToolOutput(output: unknown): boolean {
  if (output instanceof ToolMessage) return true;
  return typeof output === "object" && output !== null && "lg_name" in output;
}
