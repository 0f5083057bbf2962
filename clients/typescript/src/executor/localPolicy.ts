/**
 * The local policy: what the executor decides on its own while errord does not answer.
 *
 * errord's default policy, without what only errord knows (manifests, breakers, memory, the
 * turn's plan): a transient failure is retried after 100, 200, 400 and 800 ms, at most
 * 5 attempts and 2 s of delays per call, never sooner than a Retry-After asks; a
 * permanent one, or a transient one out of retries, is escalated to the user. A call the
 * model got wrong (its arguments, or a tool that does not exist) goes back to the model.
 */
import type { ToolFailure } from "./failures.js";
import type { Verdict } from "./verdict.js";

const TRANSIENT_CODES = new Set(["TIMEOUT", "CONNECTION", "RATE_LIMITED", "UNAVAILABLE", "UNKNOWN"]);
const MODEL_CODES = new Set(["INVALID_INPUT", "TOOL_NOT_FOUND"]);
const TRANSIENT_STATUSES = new Set([408, 425, 429]);
const CODES_BY_NAME: Record<string, string> = {
  TypeError: "INVALID_INPUT",
  RangeError: "INVALID_INPUT",
  SyntaxError: "INVALID_INPUT",
};

/** errord's default retry policy, applied by the executor itself. */
export class LocalPolicy {
  constructor(
    readonly initialDelay = 0.1,
    readonly multiplier = 2,
    readonly maxDelay = 0.8,
    readonly maxAttempts = 5,
    /** Seconds of delays one call's retries of one tool may add up to. */
    readonly maxTotalDelay = 2,
  ) {}

  /** The verdict on attempt `attempt` of `tool`, failed with `failure`, after
   * `delaysSoFar` seconds of delays granted to this call's retries of it. */
  decide(tool: string, failure: ToolFailure, attempt: number, delaysSoFar: number): Verdict {
    const code = localCode(failure);
    const transient = TRANSIENT_CODES.has(code);
    const said = failure.message || failure.exceptionType || code;
    const local = { decidedBy: "local" as const, delay: 0, alternative: "", decisionId: "", consequences: [], fault: "", parameter: "" };
    if (MODEL_CODES.has(code)) {
      return {
        ...local,
        action: "RETURN_TO_MODEL",
        fault: "ARGUMENTS",
        code,
        errorClass: "permanent",
        llmMessage: `Error: the call to ${tool} is invalid: ${said}. Correct the call and try again.`,
        userMessage: `${label(tool)} was called incorrectly; the assistant will correct it.`,
        reason: "the call is the model's to correct (local policy: errord did not answer)",
      };
    }
    if (transient) {
      let delay = Math.min(this.initialDelay * this.multiplier ** (attempt - 1), this.maxDelay);
      if (failure.retryAfter !== undefined) delay = Math.max(delay, failure.retryAfter);
      if (attempt < this.maxAttempts && delaysSoFar + delay <= this.maxTotalDelay + 1e-9) {
        return {
          ...local,
          action: "RETRY",
          delay,
          code,
          errorClass: "transient",
          llmMessage: "",
          userMessage: `${label(tool)} had a temporary problem; trying again.`,
          reason: `transient ${code}: retry ${attempt} of ${this.maxAttempts - 1} after ${Math.round(delay * 1000)} ms (local policy: errord did not answer)`,
        };
      }
    }
    const why = transient
      ? `${tool} failed ${attempt} times with a temporary error (${code})`
      : `${tool} failed with an error that retrying cannot fix (${code || "permanent"})`;
    return {
      ...local,
      action: "ESCALATE",
      code,
      errorClass: transient ? "transient" : "permanent",
      llmMessage: `Error: ${why}: ${said}. Do not call it again in this turn; tell the user what could not be done.`,
      userMessage: `${label(tool)} isn't working right now, so I couldn't finish this step. Please try again later.`,
      reason: `${why} (local policy: errord did not answer)`,
    };
  }
}

/** The failure's code as far as the executor can tell on its own. */
export function localCode(failure: ToolFailure): string {
  if (failure.code) return failure.code;
  const status = failure.httpStatus;
  if (TRANSIENT_STATUSES.has(status) || (status >= 500 && status <= 599)) {
    return status === 429 ? "RATE_LIMITED" : "UNAVAILABLE";
  }
  if (status === 401 || status === 403) return "AUTH";
  if (status === 404) return "NOT_FOUND";
  if (status >= 400 && status <= 499) return "INVALID_INPUT";
  const byName = CODES_BY_NAME[failure.exceptionType];
  if (byName !== undefined) return byName;
  if (failure.exceptionType.toLowerCase().includes("timeout")) return "TIMEOUT";
  const words = failure.message.slice(0, 200).toLowerCase();
  if (["unauthorized", "forbidden", "401", "403"].some((word) => words.includes(word))) return "AUTH";
  return "UNKNOWN";
}

function label(tool: string): string {
  const words = tool.replaceAll("_", " ");
  return words.charAt(0).toUpperCase() + words.slice(1).toLowerCase();
}
