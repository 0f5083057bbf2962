/**
 * The "tool-execution Specification" (a registry of mock, builtin and internal tools and
 * the results it returns), under its own names and shapes, run by errord's executor:
 * `@errord/client/compat/tool-execution`.
 *
 *     const registry = new ToolRegistry([
 *       { name: "calculator", parameters: {...}, implementation: { type: "builtin", handler: "math_eval" } },
 *     ]);
 *     const executor = new ToolExecutor(registry, { target: "127.0.0.1:50051" });
 *     await executor.execute("calculator", { expression: "2+2" });
 *     // { success: true, result: { result: 4 }, tool_name: "calculator", execution_time_ms: 0.4 }
 *
 * Every call is validated against the tool's JSON Schema (required parameters, types,
 * enums listing the values allowed; parameters the schema does not define are ignored)
 * before it runs, and never throws: a failure is `{ success: false, error: "<string>",
 * tool_name, execution_time_ms }`, in the specification's words. A tool's throw goes to
 * errord like any executor failure: errord decides whether it is retried (a transient one)
 * or given up, and keeps the tool's statistics and breaker.
 *
 * Builtin handlers: `math_eval` ({expression} -> {result}, evaluated by ./mathEval.ts,
 * never eval()) and `echo` ({...} -> {echo: {...}}); register more with
 * `handlers.registerBuiltin`. Internal handlers (the application's own services) are
 * registered with `handlers.registerInternal`.
 */
import { randomUUID } from "node:crypto";
import type { JsonObject } from "@bufbuild/protobuf";
import { Executor, type ExecutorOptions } from "../executor/executor.js";
import {
  checkArguments,
  InvalidArguments,
  ToolNotFound,
  ToolRegistry as ExecutorRegistry,
  type Tool,
} from "../tools/registry.js";
import { mathEval } from "./mathEval.js";

/** How a tool runs: a static response, a builtin handler, or an internal one. */
export type ToolImplementation =
  | { readonly type: "mock"; readonly mock_response?: unknown }
  | { readonly type: "builtin"; readonly handler: string }
  | { readonly type: "internal"; readonly handler: string };

/** A tool as configured. */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** The JSON Schema of its parameters. */
  readonly parameters?: JsonObject;
  readonly implementation: ToolImplementation;
}

/** A call that ran: the tool's result. */
export interface ToolSuccess {
  readonly success: true;
  readonly result: unknown;
  readonly tool_name: string;
  readonly execution_time_ms: number;
}

/** A call that did not: why, in words. */
export interface ToolFailure {
  readonly success: false;
  readonly error: string;
  readonly tool_name: string;
  readonly execution_time_ms: number;
}

export type ToolExecutionResult = ToolSuccess | ToolFailure;

/** A handler: the call's parameters in, the tool's result out. */
export type ToolHandler = (params: Record<string, unknown>) => unknown;

/** Tool definitions by name. */
export class ToolRegistry {
  private readonly tools = new Map<string, ToolDefinition>();

  constructor(definitions: Iterable<ToolDefinition> = []) {
    for (const definition of definitions) this.register(definition);
  }

  /** Add `definition`; one of a name already held replaces it. */
  register(definition: ToolDefinition): void {
    const type = definition?.implementation?.type;
    if (!definition?.name) throw new TypeError("a tool definition needs a name");
    if (type !== "mock" && type !== "builtin" && type !== "internal") {
      throw new TypeError(`tool ${definition.name}: implementation.type should be mock, builtin or internal, got ${JSON.stringify(type)}`);
    }
    this.tools.set(definition.name, definition);
  }

  has(name: string): boolean {
    return this.tools.has(name);
  }

  get(name: string): ToolDefinition | undefined {
    return this.tools.get(name);
  }

  list(): ToolDefinition[] {
    return [...this.tools.values()];
  }
}

/** Builtin and internal handlers by name; `math_eval` and `echo` are builtin. */
export class ToolHandlers {
  private readonly builtin = new Map<string, ToolHandler>([
    ["math_eval", (params) => ({ result: mathEval(params["expression"] as string) })],
    ["echo", (params) => ({ echo: params })],
  ]);
  private readonly internal = new Map<string, ToolHandler>();

  registerBuiltin(name: string, handler: ToolHandler): void {
    this.builtin.set(name, handler);
  }

  registerInternal(name: string, handler: ToolHandler): void {
    this.internal.set(name, handler);
  }

  /** The handler `implementation` names; throws "Builtin handler 'NAME' not found" (or
   * Internal) when there is none. */
  resolve(implementation: { type: "builtin" | "internal"; handler: string }): ToolHandler {
    const handlers = implementation.type === "builtin" ? this.builtin : this.internal;
    const handler = handlers.get(implementation.handler);
    if (handler !== undefined) return handler;
    const kind = implementation.type === "builtin" ? "Builtin" : "Internal";
    // ReferenceError: errord reads it as the tool's own fault, not retried.
    throw new ReferenceError(`${kind} handler '${implementation.handler}' not found`);
  }
}

/** How the executor reaches errord; `handlers`: the builtin and internal ones. */
export interface ToolExecutorOptions extends Omit<ExecutorOptions, "tools"> {
  readonly handlers?: ToolHandlers;
}

/** Validates and runs the registry's tools under errord. */
export class ToolExecutor {
  readonly handlers: ToolHandlers;
  /** errord's executor, which runs each call. */
  readonly executor: Executor;

  constructor(
    readonly registry: ToolRegistry,
    options: ToolExecutorOptions = {},
  ) {
    this.handlers = options.handlers ?? new ToolHandlers();
    this.executor = new Executor({ ...options, tools: new DefinedTools(registry, this.handlers) });
  }

  /** Run tool `name` with `params`: its result, or why not; never throws. A tool not
   * registered, or parameters that break its schema, are reported to errord as the
   * model's mistake (TOOL_NOT_FOUND, INVALID_INPUT) and not run. */
  async execute(name: string, params: Record<string, unknown> = {}): Promise<ToolExecutionResult> {
    const ran = await this.executor.runOne({ id: `call-${randomUUID()}`, name, arguments: (params ?? {}) as JsonObject });
    const execution_time_ms = ran.executionTimeMs;
    const tool_name = typeof name === "string" ? name : String(name);
    if (ran.status === "succeeded") return { success: true, result: ran.output, tool_name, execution_time_ms };
    const definition = this.registry.get(tool_name);
    let error = ran.error?.message || ran.error?.userMessage || `Tool '${tool_name}' failed (${ran.status})`;
    if (definition === undefined) error = `Tool '${tool_name}' not found`;
    else if (ran.error?.code === "INVALID_INPUT") error = invalidParameters(definition, params) ?? error;
    return { success: false, error, tool_name, execution_time_ms };
  }

  /** Send what is still queued to errord (`patience` seconds at most), then stop. */
  close(patience = 5): Promise<void> {
    return this.executor.close(patience);
  }
}

/** The specification's words for `params` breaking `definition`'s schema, if they do. */
function invalidParameters(definition: ToolDefinition, params: unknown): string | undefined {
  if (typeof params !== "object" || params === null || Array.isArray(params)) {
    return `Invalid parameters: expected an object, got ${params === null ? "null" : Array.isArray(params) ? "an array" : typeof params}`;
  }
  try {
    checkArguments(toolOf(definition, () => null), params as JsonObject);
  } catch (error) {
    if (!(error instanceof InvalidArguments)) throw error;
    if (error.problem === "missing") return `Invalid parameters: missing '${error.parameter}'`;
    if (error.problem === "enum") return `Invalid parameters: '${error.parameter}' must be one of: ${error.allowed.map(String).join(", ")}`;
    if (error.problem === "type") {
      const value = (params as Record<string, unknown>)[error.parameter];
      return `Invalid parameters: '${error.parameter}' must be ${error.allowed.join(" or ")}, got ${Array.isArray(value) ? "array" : value === null ? "null" : typeof value}`;
    }
    return `Invalid parameters: ${error.message}`;
  }
  return undefined;
}

function toolOf(definition: ToolDefinition, run: Tool["run"]): Tool {
  return { name: definition.name, description: definition.description, parameters: definition.parameters, run };
}

/** The registry's definitions as the executor's tools. */
class DefinedTools extends ExecutorRegistry {
  constructor(
    private readonly definitions: ToolRegistry,
    private readonly handlers: ToolHandlers,
  ) {
    super();
  }

  override get(name: string): Tool {
    const definition = this.definitions.get(name);
    if (definition === undefined) throw new ToolNotFound(`Tool '${name}' not found`);
    const implementation = definition.implementation;
    return toolOf(definition, (args) => {
      if (implementation.type === "mock") return implementation.mock_response ?? {};
      return this.handlers.resolve(implementation)(args);
    });
  }

  override get names(): string[] {
    return this.definitions.list().map((definition) => definition.name);
  }
}
