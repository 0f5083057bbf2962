/**
 * What a failure report tells errord of its tool: the JSON Schema of its parameters and the
 * timeout its attempt ran under (the wire's `ToolDeclaration`), for a tool without a
 * manifest. A schema errord would refuse (more than MAX_SCHEMA_VALUES values, keys
 * included, or MAX_SCHEMA_DEPTH levels, as it bounds a manifest's; more than
 * MAX_SCHEMA_BYTES of JSON), or one that declares nothing, is left out: the timeout goes
 * alone. Each tool's schema is measured once. A success sends none of it.
 */
import type { JsonObject } from "@bufbuild/protobuf";
import type { ToolDeclaration } from "../gen/errord/v1/errord_pb.js";
import type { PlainInit } from "../plain.js";
import type { Tool } from "../tools/registry.js";

/** Values (keys included) of a schema errord takes, as for a manifest's parameters. */
export const MAX_SCHEMA_VALUES = 10_000;
/** Levels of objects and arrays of a schema errord takes, as for a manifest's parameters. */
export const MAX_SCHEMA_DEPTH = 32;
/** Bytes of a JSON value errord takes in a request. */
export const MAX_SCHEMA_BYTES = 262_144;

const declared = new WeakMap<Tool, JsonObject | null>();

/** `tool`'s declaration, its attempt having run under `timeout` seconds. */
export function declarationOf(tool: Tool, timeout: number): PlainInit<ToolDeclaration> {
  let parameters = declared.get(tool);
  if (parameters === undefined) {
    parameters = tool.parameters !== undefined && declares(tool.parameters) ? tool.parameters : null;
    declared.set(tool, parameters);
  }
  return parameters === null ? { timeout } : { parameters, timeout };
}

/** Whether `schema` says something errord does not know, within errord's bounds. */
function declares(schema: JsonObject): boolean {
  const keys = Object.keys(schema);
  const properties = schema["properties"];
  const empty = typeof properties === "object" && properties !== null && Object.keys(properties).length === 0;
  if (keys.every((key) => key === "type" || (key === "properties" && empty))) return false;
  if (!fits(schema)) return false;
  try {
    return Buffer.byteLength(JSON.stringify(schema)) <= MAX_SCHEMA_BYTES;
  } catch {
    return false; // a cycle, a bigint: errord could not read it either
  }
}

/** Whether `schema` holds at most MAX_SCHEMA_VALUES values and MAX_SCHEMA_DEPTH levels. */
function fits(schema: unknown): boolean {
  let count = 0;
  const pending: [unknown, number][] = [[schema, 0]];
  while (pending.length > 0) {
    const [node, depth] = pending.pop() as [unknown, number];
    const isObject = typeof node === "object" && node !== null && !Array.isArray(node);
    count += 1 + (isObject ? Object.keys(node).length : 0);
    if (count > MAX_SCHEMA_VALUES || depth > MAX_SCHEMA_DEPTH) return false;
    if (isObject) for (const value of Object.values(node)) pending.push([value, depth + 1]);
    else if (Array.isArray(node)) for (const item of node) pending.push([item, depth + 1]);
  }
  return true;
}
