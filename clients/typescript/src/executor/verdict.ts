/**
 * What the executor follows after a failure: errord's decision, or the local policy's.
 *
 * Both come as one `Verdict`, so following them is one piece of code; `decidedBy` says
 * which it was. `fromDecision` reads errord's RecoveryDecision (as the client gives it,
 * plain); nothing else in the executor reads the wire's decision.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { ErrorClass, ErrorCode, Fault, RecoveryAction, type RecoveryDecision } from "../gen/errord/v1/errord_pb.js";
import type { Plain } from "../plain.js";
import type { Correction, DecidedBy } from "./result.js";

/** RecoveryAction, by name. */
export type Action =
  | "RETRY"
  | "USE_ALTERNATIVE"
  | "CONTINUE_PARTIAL"
  | "USE_DEFAULT"
  | "SKIP"
  | "ESCALATE"
  | "FAIL"
  | "RETURN_TO_MODEL";

/** What a verdict means for another call of the batch that waits on this one. */
export interface Consequence {
  readonly callId: string;
  /** SKIP, USE_DEFAULT or ESCALATE. */
  readonly action: Action;
  readonly reason: string;
  /** The default result (USE_DEFAULT); undefined when none was given. */
  readonly defaultValue?: JsonValue;
}

/** One decision on one failed (or refused) attempt. */
export interface Verdict {
  readonly action: Action;
  readonly decidedBy: DecidedBy;
  /** Seconds to wait before the next attempt (RETRY). */
  readonly delay: number;
  /** Seconds the next attempt may run, when the decision says. */
  readonly nextTimeout?: number;
  readonly alternative: string;
  readonly defaultValue?: JsonValue;
  readonly llmMessage: string;
  readonly userMessage: string;
  readonly reason: string;
  /** ErrorCode name without its prefix. */
  readonly code: string;
  /** "transient", "permanent" or "". */
  readonly errorClass: string;
  /** Who can act on the failure (a Fault name without its prefix), or "". */
  readonly fault: string;
  /** The call's parameter the failure is about, or "". */
  readonly parameter: string;
  readonly decisionId: string;
  readonly consequences: readonly Consequence[];
  /** errord's correction, for a call handed back to the model. */
  readonly correction?: Correction;
}

function actionOf(action: RecoveryAction, otherwise: Action): Action {
  return action === RecoveryAction.UNSPECIFIED ? otherwise : (RecoveryAction[action] as Action);
}

/** errord's decision as the executor follows it. */
export function fromDecision(decision: Plain<RecoveryDecision>): Verdict {
  const classification = decision.classification;
  const code = classification?.code ?? ErrorCode.UNSPECIFIED;
  const errorClass = classification?.errorClass ?? ErrorClass.UNSPECIFIED;
  const fault = classification?.fault ?? Fault.UNSPECIFIED;
  return {
    action: actionOf(decision.action, "ESCALATE"),
    decidedBy: "errord",
    delay: decision.delay ?? 0,
    nextTimeout: decision.nextAttemptTimeout,
    alternative: decision.alternativeTool,
    defaultValue: decision.defaultValue,
    llmMessage: decision.llmMessage,
    userMessage: decision.userMessage,
    reason: decision.reason,
    code: code === ErrorCode.UNSPECIFIED ? "" : ErrorCode[code],
    errorClass: errorClass === ErrorClass.UNSPECIFIED ? "" : ErrorClass[errorClass].toLowerCase(),
    fault: fault === Fault.UNSPECIFIED ? "" : Fault[fault],
    parameter: classification?.parameter ?? "",
    decisionId: decision.decisionId,
    correction: decision.correction && {
      type: decision.correction.type,
      message: decision.correction.message,
      parameter: decision.correction.parameter,
      requiredParameters: [...decision.correction.requiredParameters],
      example: (decision.correction.example as Record<string, unknown> | undefined) ?? null,
      retryHint: decision.correction.retryHint,
      availableTools: [...decision.correction.availableTools],
    },
    consequences: decision.consequences.map((consequence) => ({
      callId: consequence.callId,
      action: actionOf(consequence.action, "SKIP"),
      reason: consequence.reason,
      defaultValue: consequence.defaultValue,
    })),
  };
}
