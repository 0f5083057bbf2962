/**
 * errord's TypeScript client: the executor (tool calls run under errord's recovery
 * decisions), the typed clients of both services, and the generated messages.
 */
export { ErrordClient, OperatorClient, callUnary, type CallOptions } from "./client.js";
export { ErrordError, codeName, decodeBadRequest, type FieldViolation } from "./errors.js";
export { DEFAULT_TARGET, openTransport, type ConnectionOptions, type TlsOptions } from "./transport.js";
export { durationOf, secondsOf, fromMessage, toMessage, type Plain, type PlainInit } from "./plain.js";
export { Executor, type ExecutorOptions, type RunOptions } from "./executor/executor.js";
export { Turn, currentTurn, type TurnOptions } from "./executor/turn.js";
export type { OnProgress, Progress, ProgressKind } from "./executor/progress.js";
export { toolCall, type ToolCall, type RawToolCall } from "./executor/calls.js";
export { failureFromError, type ToolFailure } from "./executor/failures.js";
export { LocalPolicy, localCode } from "./executor/localPolicy.js";
export type { Logger } from "./executor/link.js";
export type { Action, Consequence, Verdict } from "./executor/verdict.js";
export {
  isOk,
  resultContent,
  toAnthropic,
  toOpenAI,
  toOpenAIResponses,
  type DecidedBy,
  type ResultError,
  type ResultStatus,
  type ToolResult,
} from "./executor/result.js";
export { validateResponseMatch, type HeldResult, type MatchedResult } from "./reconcile.js";
export {
  InvalidArguments,
  ToolNotFound,
  ToolRegistry,
  acceptArguments,
  checkArguments,
  tool,
  type Accepted,
  type Tool,
  type ToolContext,
  type ToolFunction,
} from "./tools/registry.js";
export { echo, hang, mockTool, type Hang, type Step } from "./tools/mock.js";
export {
  BreakerPhase,
  CallStatus,
  ErrorClass,
  ErrorCode,
  Outcome,
  RecoveryAction,
  ResultOrigin,
} from "./gen/errord/v1/errord_pb.js";
export * as pb from "./gen/errord/v1/errord_pb.js";
