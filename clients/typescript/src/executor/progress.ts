/**
 * What the executor tells a streaming UI while a call runs: each attempt, each wait
 * before a retry, each switch to an alternative, and how the call ended.
 *
 *     const executor = new Executor({
 *       tools,
 *       onProgress: (progress) => {
 *         if (progress.kind === "retry") show(progress.message); // "Weather had a temporary problem; ..."
 *       },
 *     });
 *
 * The callback is called in the run's async context; it must not block, and what it
 * throws is logged, never the call's concern. The fields are the Python client's
 * `Progress`'s, in camelCase.
 */
import type { Logger } from "./link.js";
import type { ResultStatus } from "./result.js";

/** What happened to the call. */
export type ProgressKind =
  /** An attempt of `tool` starts (`attempt` counts this tool's attempts). */
  | "attempt"
  /** The attempt failed; the call waits `delay` seconds and tries `tool` again. */
  | "retry"
  /** The attempt failed; the call goes on with `alternative`. */
  | "alternative"
  /** The call has its result (`status`). */
  | "done";

/** One step of one call, as a UI shows it. */
export interface Progress {
  readonly kind: ProgressKind;
  readonly turnId: string;
  readonly callId: string;
  /** The tool of the step: the one called, or the alternative running in its place. */
  readonly tool: string;
  /** The attempt that starts ("attempt") or failed ("retry", "alternative"); 0 for "done". */
  readonly attempt: number;
  /** Seconds before the next attempt ("retry"); 0 otherwise. */
  readonly delay: number;
  /** The tool that runs next ("alternative"); "" otherwise. */
  readonly alternative: string;
  /** How the call ended ("done"); null otherwise. */
  readonly status: ResultStatus | null;
  /** What to tell the user, in plain words: errord's (or the local policy's) user message
   * for "retry", "alternative" and a "done" without an output of its own; "" when there
   * is nothing to say. */
  readonly message: string;
}

/** Called with each step of each call. */
export type OnProgress = (progress: Progress) => void;

/** A step of `kind`, the fields not given empty. */
export function progress(kind: ProgressKind, step: Omit<Partial<Progress>, "kind"> & Pick<Progress, "turnId" | "callId" | "tool">): Progress {
  return { kind, attempt: 0, delay: 0, alternative: "", status: null, message: "", ...step };
}

/** Hand `step` to `onProgress`, if any; what it throws is logged to `log`. */
export function tell(onProgress: OnProgress | undefined, step: Progress, log: Logger): void {
  if (onProgress === undefined) return;
  try {
    onProgress(step);
  } catch (error) {
    // A UI's mistake must not cost the call its result.
    log.warn(`onProgress threw for call ${step.callId}: ${error instanceof Error ? error.message : String(error)}`);
  }
}
