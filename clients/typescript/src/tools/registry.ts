/**
 * The tools an executor may run, by name.
 *
 * A tool is a function of its arguments (a JSON object) and a context whose `signal`
 * aborts when the attempt's timeout passes: pass it on (to `fetch`, to a child process)
 * so the work stops. A tool that ignores it is abandoned all the same: its result, if it
 * ever comes, is dropped. `parameters` (a JSON Schema) is checked before a call runs, as
 * agent frameworks check a call: required properties, the JSON types of the properties
 * given (a whole number, `2.0` as the model may write it, is an integer) and their `enum`
 * (the error lists the values allowed); a call that breaks it goes back to the model as
 * INVALID_INPUT without running. An argument the schema does not take
 * (`additionalProperties: false`) is ignored: the tool runs without it, and the result's
 * `ignoredArguments` names it.
 */
import type { JsonObject, JsonValue } from "@bufbuild/protobuf";

/** What a tool gets besides its arguments. */
export interface ToolContext {
  /** Aborts when the attempt's timeout passes (its reason a TimeoutError). */
  readonly signal: AbortSignal;
  /** The model's id for the call. */
  readonly callId: string;
  /** Which attempt of this tool for this call, from 1. */
  readonly attempt: number;
}

/** A tool: a name and what runs it. */
export interface Tool {
  readonly name: string;
  readonly description?: string;
  /** The JSON Schema of its arguments (an object schema). */
  readonly parameters?: JsonObject;
  /** The backend its attempts reach, when errord should keep its circuit breaker,
   * statistics, rate-limit window and memory apart from the same tool's elsewhere (a host,
   * a region, a tenant, the name of a credential, never the secret); none: the tool alone. */
  readonly scope?: string;
  /** Seconds an attempt may run when errord has no manifest timeout for the tool: the
   * timeout its framework declares; none: the executor's `defaultTimeout`. A manifest's
   * `timeout_ms` wins. */
  readonly timeout?: number;
  run(args: JsonObject, context: ToolContext): unknown;
}

/** A function registered by its own name. */
export type ToolFunction = (args: JsonObject, context: ToolContext) => unknown;

/** The model named a tool the registry does not hold. */
export class ToolNotFound extends Error {
  override readonly name = "ToolNotFound";
}

/** How a call's arguments break its tool's schema. */
export type ArgumentProblem = "missing" | "type" | "enum";

/** The arguments break the tool's JSON Schema: `problem` with `parameter` (the first
 * found), and for "type" the types the schema wants, for "enum" the values it allows. */
export class InvalidArguments extends Error {
  override readonly name = "InvalidArguments";

  constructor(
    message: string,
    readonly parameter = "",
    readonly problem?: ArgumentProblem,
    readonly allowed: readonly JsonValue[] = [],
  ) {
    super(message);
  }
}

/** `run` as a tool named `name`. */
export function tool(
  name: string,
  run: ToolFunction,
  options: { description?: string; parameters?: JsonObject; scope?: string; timeout?: number } = {},
): Tool {
  if (!name) throw new TypeError("a tool's name should not be empty");
  const { timeout } = options;
  if (timeout !== undefined && !(Number.isFinite(timeout) && timeout > 0)) {
    throw new RangeError(`tool ${JSON.stringify(name)}: timeout should be a positive number of seconds, got ${timeout}`);
  }
  return { name, run, ...options };
}

/** Tools by name. */
export class ToolRegistry {
  private readonly tools = new Map<string, Tool>();

  constructor(tools: Iterable<Tool | ToolFunction> = []) {
    for (const tool of tools) this.register(tool);
  }

  /** Add `tool` (a function is registered by its name); a second tool of a name replaces the first. */
  register(given: Tool | ToolFunction): void {
    const found = typeof given === "function" ? tool(given.name, given) : given;
    this.tools.set(found.name, found);
  }

  /** The tool called `name`; throws ToolNotFound naming the tools held. */
  get(name: string): Tool {
    const tool = this.tools.get(name);
    if (tool === undefined) {
      const known = [...this.tools.keys()].sort().join(", ") || "none";
      throw new ToolNotFound(`unknown tool ${JSON.stringify(name)}; the tools are: ${known}`);
    }
    return tool;
  }

  get names(): string[] {
    return [...this.tools.keys()];
  }
}

/** A call's arguments as its tool takes them. */
export interface Accepted {
  /** What the tool runs with: the call's arguments, those the schema does not take left out. */
  readonly args: JsonObject;
  /** The call's arguments the schema does not take, in call order. */
  readonly ignored: readonly string[];
}

/** `args` as `tool` takes them (see the module's comment); throws InvalidArguments when
 * they break its parameters. */
export function acceptArguments(tool: Tool, args: JsonObject): Accepted {
  checkArguments(tool, args);
  const schema = tool.parameters;
  if (schema === undefined || schema["additionalProperties"] !== false) return { args, ignored: [] };
  const properties = (schema["properties"] ?? {}) as Record<string, unknown>;
  const ignored = Object.keys(args).filter((name) => !Object.hasOwn(properties, name));
  if (ignored.length === 0) return { args, ignored };
  const taken = Object.entries(args).filter(([name]) => Object.hasOwn(properties, name));
  return { args: Object.fromEntries(taken) as JsonObject, ignored };
}

/** Throws InvalidArguments when `args` break `tool`'s parameters (see the module's comment). */
export function checkArguments(tool: Tool, args: JsonObject): void {
  const schema = tool.parameters;
  if (schema === undefined) return;
  const required = Array.isArray(schema["required"]) ? (schema["required"] as string[]) : [];
  const missing = required.filter((name) => !(name in args));
  if (missing.length > 0) {
    const names = missing.map((m) => `'${m}'`).join(", ");
    throw new InvalidArguments(`${tool.name}: missing required parameter ${names}`, missing[0], "missing");
  }
  const properties = (schema["properties"] ?? {}) as Record<string, { type?: string | string[]; enum?: JsonValue[] } | undefined>;
  for (const [name, value] of Object.entries(args)) {
    const wanted = properties[name]?.type;
    const types = wanted === undefined ? [] : Array.isArray(wanted) ? wanted : [wanted];
    if (types.length > 0 && !types.some((type) => isOfType(value, type))) {
      const message = `${tool.name}: parameter '${name}' should be ${types.join(" or ")}, got ${jsonType(value)}`;
      throw new InvalidArguments(message, name, "type", types);
    }
    const allowed = properties[name]?.enum;
    if (Array.isArray(allowed) && !allowed.some((option) => sameJson(option, value))) {
      const options = allowed.map((option) => JSON.stringify(option)).join(", ");
      const message = `${tool.name}: parameter '${name}' should be one of ${options}, got ${JSON.stringify(value)}`;
      throw new InvalidArguments(message, name, "enum", allowed);
    }
  }
}

/** JSON equality, as JSON Schema compares an enum's values (2.0 is 2). */
function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

function isOfType(value: unknown, type: string): boolean {
  if (type === "integer") return Number.isInteger(value); // 2.0 is 2: JSON Schema's integer
  if (type === "number") return typeof value === "number";
  return jsonType(value) === type;
}

function jsonType(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  return typeof value;
}
