/**
 * Tools for testing agents: a static answer, or a scripted sequence of answers and
 * failures, one per invocation (the last step repeats). `hang(seconds)` is a step that
 * answers only after `seconds` (never within a shorter timeout), stopping early when
 * the attempt is abandoned.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { sleep } from "../executor/board.js";
import type { Tool, ToolContext } from "./registry.js";

const HANG = Symbol("hang");

/** A step that answers `answer` after `seconds`, or never when the signal aborts first. */
export interface Hang {
  readonly [HANG]: number;
  readonly answer: JsonValue;
}

/** A scripted step: wait `seconds` (stopping when the attempt is abandoned). */
export function hang(seconds: number, answer: JsonValue = null): Hang {
  return { [HANG]: seconds, answer };
}

/** One step of a script: an answer, an Error to throw, or a hang. */
export type Step = JsonValue | Error | Hang;

/** A mock tool: `answer` every time, or the steps of `script` in turn, the last repeated.
 * `calls` counts its invocations. */
export function mockTool(
  name: string,
  options: { answer?: JsonValue; script?: readonly Step[]; description?: string } = {},
): Tool & { readonly calls: number } {
  const script = options.script ?? [options.answer ?? null];
  let calls = 0;
  return {
    name,
    description: options.description,
    get calls() {
      return calls;
    },
    async run(_args, context: ToolContext) {
      const step = script[Math.min(calls, script.length - 1)] ?? null;
      calls += 1;
      if (step instanceof Error) throw step;
      if (typeof step === "object" && step !== null && HANG in step) {
        await sleep((step as Hang)[HANG], context.signal);
        if (context.signal.aborted) throw context.signal.reason;
        return (step as Hang).answer;
      }
      return step;
    },
  };
}

/** The builtin `echo`: its arguments back. */
export const echo: Tool = {
  name: "echo",
  description: "Returns its arguments.",
  run: (args) => args,
};
