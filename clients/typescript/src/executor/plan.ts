/**
 * A batch's calls as a plan: which call needs which, checked before anything runs.
 *
 * A call may name, in `dependsOn`, calls of the same batch whose results it needs. A
 * name not in the batch is ignored; calls on a dependency cycle (or waiting on one), and
 * a second call with an id already taken, are not run: their results say why. With
 * dependencies the plan goes to errord (BeginTurn), whose decisions then name what
 * becomes of the calls waiting on a failed one.
 */
import type { BeginTurnRequest } from "../gen/errord/v1/errord_pb.js";
import type { PlainInit } from "../plain.js";
import type { ToolCall } from "./calls.js";

/** The calls of a batch and what each needs. */
export class Plan {
  constructor(
    /** Every call of the batch, in the model's order. */
    readonly calls: readonly ToolCall[],
    /** For each call id, the ids of the batch's calls it needs. */
    readonly needed: ReadonlyMap<string, readonly string[]>,
    /** Calls that cannot run (on a dependency cycle, or waiting on one), with why. */
    readonly broken: ReadonlyMap<string, string>,
    /** Positions of calls whose id an earlier call of the batch has: they do not run. */
    readonly repeated: ReadonlySet<number>,
  ) {}

  /** True when some call needs another. */
  get dependencies(): boolean {
    return [...this.needed.values()].some((needs) => needs.length > 0);
  }

  needs(call: ToolCall): readonly string[] {
    return this.needed.get(call.callId) ?? [];
  }

  /** BeginTurn with the plan of the calls that can run. */
  begin(turnId: string): PlainInit<BeginTurnRequest> {
    const plan = this.calls
      .filter((call, position) => !this.broken.has(call.callId) && !this.repeated.has(position))
      .map((call) => ({
        callId: call.callId,
        tool: call.name,
        arguments: call.arguments,
        dependsOn: [...this.needs(call)],
        optional: call.optional,
        defaultValue: call.default,
      }));
    return { turnId, plan };
  }
}

/** The plan of `calls`. */
export function planOf(calls: readonly ToolCall[]): Plan {
  const seen = new Set<string>();
  const repeated = new Set<number>();
  calls.forEach((call, position) => {
    if (seen.has(call.callId)) repeated.add(position);
    seen.add(call.callId);
  });
  const needed = new Map<string, readonly string[]>();
  calls.forEach((call, position) => {
    if (repeated.has(position)) return;
    needed.set(call.callId, call.dependsOn.filter((id) => seen.has(id) && id !== call.callId));
  });
  const broken = new Map<string, string>();
  for (const callId of onCycles(needed)) {
    broken.set(callId, `${callId} waits on a dependency cycle, so it can never start`);
  }
  return new Plan(calls, needed, broken, repeated);
}

/** The calls that can never start: on a cycle, or waiting on one (Kahn's algorithm). */
function onCycles(needed: ReadonlyMap<string, readonly string[]>): Set<string> {
  const waiting = new Map([...needed].map(([call, needs]) => [call, new Set(needs)]));
  const ready = [...waiting].filter(([, needs]) => needs.size === 0).map(([call]) => call);
  while (ready.length > 0) {
    const done = ready.pop() as string;
    for (const [call, needs] of waiting) {
      if (needs.delete(done) && needs.size === 0) ready.push(call);
    }
  }
  return new Set([...waiting].filter(([, needs]) => needs.size > 0).map(([call]) => call));
}
