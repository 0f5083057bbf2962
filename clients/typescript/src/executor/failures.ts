/**
 * What errord reads of a failed attempt, made from what the tool threw.
 *
 * A tool fails by throwing (or rejecting). `failureFromError` reads the error the way
 * errord's wire `ToolError` wants it, without importing any HTTP or SDK library:
 * - an HTTP status (`status` or `statusCode` on the error or its `response`, as the
 *   OpenAI and Anthropic SDKs, axios, got and ky errors carry it) fills `httpStatus` and
 *   leaves `code` empty: errord classifies statuses, with the manifest's overrides.
 *   `retry-after-ms`, then `Retry-After` (seconds or an HTTP-date), fills `retryAfter`.
 * - timeouts (`TimeoutError`, as `AbortSignal.timeout` aborts a fetch; ETIMEDOUT,
 *   undici's connect timeout) are TIMEOUT;
 * - broken connections (ECONNREFUSED, ECONNRESET, EPIPE, ENOTFOUND..., also as the
 *   `cause` of fetch's "fetch failed") are CONNECTION;
 * - the registry's `InvalidArguments` is INVALID_INPUT;
 * - anything else gives its name and message, and errord infers the code.
 *
 * An error may carry what the tool produced before it failed as `partialResult`.
 */
import type { JsonValue } from "@bufbuild/protobuf";
import { ErrorCode, type ToolError } from "../gen/errord/v1/errord_pb.js";
import type { PlainInit } from "../plain.js";
import { jsonValue } from "./result.js";

/** Bytes of an error's message kept (errord's bound). */
export const MAX_MESSAGE_BYTES = 4096;

/** What errord reads of a failed attempt (the wire's ToolError). */
export interface ToolFailure {
  /** The technical message, as the error said it. */
  readonly message: string;
  /** The error's class: "TimeoutError", "RateLimitError". */
  readonly exceptionType: string;
  /** An ErrorCode name without its prefix, or "" for errord to infer. */
  readonly code: string;
  /** The HTTP status the tool's backend answered; 0 for none. */
  readonly httpStatus: number;
  /** Seconds the backend asked to wait (Retry-After), if it did. */
  readonly retryAfter?: number;
  /** What the tool produced before it failed, if anything. */
  readonly partialResult?: JsonValue;
}

const CONNECTION_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ECONNABORTED",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
]);
const TIMEOUT_CODES = new Set(["ETIMEDOUT", "UND_ERR_CONNECT_TIMEOUT", "UND_ERR_HEADERS_TIMEOUT", "UND_ERR_BODY_TIMEOUT"]);
const CODES_BY_NAME: Record<string, string> = {
  TimeoutError: "TIMEOUT",
  APITimeoutError: "TIMEOUT",
  APIConnectionError: "CONNECTION",
  InvalidArguments: "INVALID_INPUT",
  ToolNotFound: "TOOL_NOT_FOUND",
};

/** A failure of a given code, made by the executor itself. */
export function failure(message: string, exceptionType: string, code: string): ToolFailure {
  return { message, exceptionType, code, httpStatus: 0 };
}

/** What errord reads of `error` (see the module's comment); never throws. */
export function failureFromError(error: unknown, now: () => number = Date.now): ToolFailure {
  const status = httpStatus(error);
  const headers = field(error, "headers") ?? field(field(error, "response"), "headers");
  const partial = field(error, "partialResult");
  return {
    message: cut(messageOf(error)),
    exceptionType: typeOf(error).slice(0, 512),
    code: status ? "" : codeOf(error),
    httpStatus: status,
    retryAfter: headers === undefined ? undefined : retryAfter(headers, now),
    partialResult: partial === undefined ? undefined : jsonValue(partial),
  };
}

/** The failure as the wire's ToolError, in the client's plain shape. */
export function toToolError(failure: ToolFailure): PlainInit<ToolError> {
  return {
    code: failure.code ? ErrorCode[failure.code as keyof typeof ErrorCode] : ErrorCode.UNSPECIFIED,
    httpStatus: failure.httpStatus,
    exceptionType: failure.exceptionType,
    message: failure.message,
    retryHint: failure.retryAfter === undefined ? undefined : { case: "retryAfter", value: failure.retryAfter },
    partialResult: failure.partialResult,
  };
}

function codeOf(error: unknown): string {
  const name = typeOf(error);
  if (name in CODES_BY_NAME) return CODES_BY_NAME[name] ?? "";
  for (const holder of [error, field(error, "cause")]) {
    const code = field(holder, "code");
    if (typeof code === "string" && TIMEOUT_CODES.has(code)) return "TIMEOUT";
    if (typeof code === "string" && CONNECTION_CODES.has(code)) return "CONNECTION";
  }
  return "";
}

function httpStatus(error: unknown): number {
  for (const holder of [error, field(error, "response")]) {
    for (const name of ["status", "statusCode"]) {
      const value = field(holder, name);
      if (typeof value === "number" && Number.isInteger(value) && value >= 100 && value <= 599) return value;
    }
  }
  return 0;
}

function retryAfter(headers: unknown, now: () => number): number | undefined {
  const ms = seconds(header(headers, "retry-after-ms"));
  if (ms !== undefined) return ms / 1000;
  const value = header(headers, "retry-after");
  if (value === undefined) return undefined;
  const given = seconds(value);
  if (given !== undefined) return given;
  const moment = Date.parse(value);
  return Number.isNaN(moment) ? undefined : Math.max(0, (moment - now()) / 1000);
}

function header(headers: unknown, name: string): string | undefined {
  const get = field(headers, "get");
  if (typeof get === "function") {
    const value: unknown = get.call(headers, name);
    return value === null || value === undefined ? undefined : String(value);
  }
  if (typeof headers === "object" && headers !== null) {
    for (const [key, value] of Object.entries(headers)) {
      if (key.toLowerCase() === name && value !== undefined && value !== null) return String(value);
    }
  }
  return undefined;
}

function seconds(text: string | undefined): number | undefined {
  if (text === undefined || !/^\s*\d+(\.\d+)?\s*$/.test(text)) return undefined;
  return Number(text);
}

function typeOf(error: unknown): string {
  if (error instanceof Error) {
    return error.name !== "Error" ? error.name : error.constructor.name;
  }
  return typeof error;
}

function messageOf(error: unknown): string {
  if (error instanceof Error) return error.message || error.name;
  try {
    return typeof error === "string" ? error : JSON.stringify(error) ?? String(error);
  } catch {
    return String(error);
  }
}

function field(holder: unknown, name: string): unknown {
  if ((typeof holder !== "object" && typeof holder !== "function") || holder === null) return undefined;
  try {
    return (holder as Record<string, unknown>)[name];
  } catch {
    return undefined;
  }
}

function cut(text: string): string {
  const bytes = new TextEncoder().encode(text);
  if (bytes.length <= MAX_MESSAGE_BYTES) return text;
  return new TextDecoder().decode(bytes.slice(0, MAX_MESSAGE_BYTES)).replace(/\uFFFD$/, "");
}
