/**
 * A framework's schema validation failure, in words errord reads: each problem names its
 * parameter ("parameter 'date': Invalid ISO date"), whether the validator gave zod's,
 * a Standard Schema's or JSON Schema's issues. The adapters throw it as the registry's
 * `InvalidArguments`, which the executor reports as INVALID_INPUT.
 */
import { InvalidArguments } from "../tools/registry.js";

interface Issue {
  readonly path?: readonly unknown[] | string;
  readonly instancePath?: string;
  readonly message?: string;
}

/** `error` (what a validator gave for `tool`'s arguments) as InvalidArguments. */
export function invalidArguments(tool: string, error: unknown): InvalidArguments {
  const issues = issuesOf(error);
  if (issues.length === 0) return new InvalidArguments(`${tool}: ${error instanceof Error ? error.message : String(error)}`);
  const problems = issues.map((issue) => {
    const parameter = pathOf(issue);
    const message = issue.message ?? "is invalid";
    return parameter ? `parameter '${parameter}': ${message}` : message;
  });
  return new InvalidArguments(`${tool}: ${problems.join("; ")}`);
}

function issuesOf(error: unknown): Issue[] {
  for (let found = error, depth = 0; found && typeof found === "object" && depth < 3; depth++) {
    if (Array.isArray(found)) return found as Issue[];
    const record = found as { issues?: unknown; errors?: unknown; cause?: unknown };
    if (Array.isArray(record.issues)) return record.issues as Issue[];
    if (Array.isArray(record.errors)) return record.errors as Issue[];
    found = record.cause;
  }
  return [];
}

function pathOf(issue: Issue): string {
  if (typeof issue.instancePath === "string") return issue.instancePath.replace(/^\//, "").replaceAll("/", ".");
  if (typeof issue.path === "string") return issue.path;
  return (issue.path ?? []).map((step) => (typeof step === "object" && step !== null && "key" in step ? String(step.key) : String(step))).join(".");
}
