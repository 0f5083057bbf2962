/**
 * errord for the Vercel AI SDK (`ai`): a ToolSet's calls run under the executor.
 *
 *     import { generateText, stepCountIs } from "ai";
 *     import { errordTools } from "@errord/client/ai";
 *
 *     const tools = errordTools(executor, { weather, bookRoom });        // tool() definitions
 *     const answer = await executor.turn({ userId }).within(() =>
 *       generateText({ model, tools, prompt, stopWhen: stepCountIs(5) }), // one errord turn
 *     );
 *
 * Each wrapped tool's `execute` runs its call through the executor: attempts under their
 * timeouts, errord's decisions followed (wait and retry, the alternative among the same
 * tools, the default...), and a call that does not recover throws the text errord wrote
 * for the model, which the SDK hands the model as the tool's error.
 *
 * The SDK checks a call's input against the tool's schema before `execute`, and hands its
 * own validation message to the model when it fails. A wrapped tool's schema tells the
 * model the same JSON Schema but lets every input through; the adapter then validates it
 * with the tool's own schema (zod's, or any the SDK takes) inside the attempt, so that a
 * rejected input is an INVALID_INPUT failure errord decides on: the model gets errord's
 * correction, which names the parameter and counts the corrections left in the turn. A
 * valid input reaches `execute` as the schema parsed it (defaults, transforms).
 *
 * `generateText` inside a turn's `within` is one errord turn: every step's calls count
 * against one budget and end in one summary. Without it each call is a turn of its own.
 */
import { asSchema, jsonSchema, type Tool as SdkTool, type ToolExecutionOptions, type ToolSet } from "ai";
import type { JsonObject } from "@bufbuild/protobuf";
import type { Executor } from "../executor/executor.js";
import { isOk, resultContent, type ToolResult } from "../executor/result.js";
import type { Tool, ToolContext } from "../tools/registry.js";
import { invalidArguments } from "./validation.js";

/** Options of `errordTools`. */
export interface ErrordToolsOptions {
  /** The scope of every tool's breaker, statistics and memory (`Tool.scope`). */
  readonly scope?: string;
}

/** A tool call that did not recover: its message is what errord wrote for the model. */
export class ErrordToolError extends Error {
  override readonly name = "ErrordToolError";

  constructor(readonly result: ToolResult) {
    super(resultContent(result));
  }
}

/** `tools` with each tool that has an `execute` run under `executor` (see the module's
 * comment), registered with it by its key in the set; tools without one (the client
 * runs them) are left as they are. */
export function errordTools<TOOLS extends ToolSet>(executor: Executor, tools: TOOLS, options: ErrordToolsOptions = {}): TOOLS {
  const guarded: Record<string, SdkTool> = {};
  const running = new Map<string, ToolExecutionOptions>();
  for (const [name, sdkTool] of Object.entries(tools) as [string, SdkTool][]) {
    if (sdkTool.execute === undefined) {
      guarded[name] = sdkTool;
      continue;
    }
    const schema = asSchema(sdkTool.inputSchema);
    const execute = sdkTool.execute.bind(sdkTool);
    const registered: Tool & { parameters?: JsonObject } = {
      name,
      description: sdkTool.description,
      scope: options.scope,
      async run(args: JsonObject, context: ToolContext) {
        const checked = schema.validate === undefined ? { success: true as const, value: args } : await schema.validate(args);
        if (!checked.success) throw invalidArguments(name, checked.error);
        const sdk = running.get(context.callId);
        const abortSignal = sdk?.abortSignal ? AbortSignal.any([sdk.abortSignal, context.signal]) : context.signal;
        return settled(await execute(checked.value, { toolCallId: context.callId, messages: [], ...sdk, abortSignal }));
      },
    };
    executor.registry.register(registered);
    // The executor checks required parameters and JSON types itself, and tells errord the
    // schema with each failure; both read `parameters`, known once the schema resolves.
    const parameters = Promise.resolve(schema.jsonSchema).then((resolved) => {
      registered.parameters = resolved as JsonObject;
      return resolved;
    });
    guarded[name] = {
      ...sdkTool,
      inputSchema: jsonSchema(() => parameters, { validate: (value) => ({ success: true, value }) }),
      async execute(input: unknown, sdk: ToolExecutionOptions) {
        await parameters;
        running.set(sdk.toolCallId, sdk);
        try {
          const result = await executor.runOne({ id: sdk.toolCallId, name, arguments: input as JsonObject });
          if (!isOk(result)) throw new ErrordToolError(result);
          return result.output;
        } finally {
          running.delete(sdk.toolCallId);
        }
      },
    } as SdkTool;
  }
  return guarded as TOOLS;
}

/** The last value of an `execute` that streams its outputs, else its output. */
async function settled(output: unknown): Promise<unknown> {
  if (output === null || typeof output !== "object" || !(Symbol.asyncIterator in output)) return output;
  let last: unknown;
  for await (const value of output as AsyncIterable<unknown>) last = value;
  return last;
}
