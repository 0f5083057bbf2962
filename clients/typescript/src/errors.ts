/**
 * The one error the client raises: `ErrordError`, a refused or failed RPC.
 *
 * It carries the gRPC status code (`code`, and its name `codeName`: "INVALID_ARGUMENT"),
 * errord's message, and for an invalid request the field violations errord attached
 * as a `google.rpc.BadRequest` in `grpc-status-details-bin` (`violations`: each names a
 * request field, such as `failures[2].attempt`, and what is wrong with it).
 *
 *     ErrordError            an RPC failed: UNAVAILABLE, INVALID_ARGUMENT, NOT_FOUND...
 *     └── (violations)       the fields an INVALID_ARGUMENT names
 *
 * A tool's failure is never an ErrordError: the executor turns it into a result.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { BinaryReader, WireType } from "@bufbuild/protobuf/wire";

/** One invalid field of a request, as google.rpc.BadRequest reports it. */
export interface FieldViolation {
  /** The field's path in the request: "turn_id", "failures[2].attempt". */
  readonly field: string;
  /** What is wrong with it. */
  readonly description: string;
}

/** An RPC to errord that failed, with its gRPC status code and field violations. */
export class ErrordError extends Error {
  /** The gRPC status code (connect's `Code`, numbered as gRPC numbers them). */
  readonly code: Code;
  /** The status code's gRPC name: "INVALID_ARGUMENT", "UNAVAILABLE", ... */
  readonly codeName: string;
  /** errord's message, without the code. */
  readonly details: string;
  /** For an invalid request: each field errord found wrong, in its order. */
  readonly violations: readonly FieldViolation[];

  constructor(code: Code, details: string, violations: readonly FieldViolation[] = [], cause?: unknown) {
    super(`${codeName(code)}: ${details}`, { cause });
    this.name = "ErrordError";
    this.code = code;
    this.codeName = codeName(code);
    this.details = details;
    this.violations = violations;
  }

  /** `error` as an ErrordError: a ConnectError read, anything else UNKNOWN. */
  static from(error: unknown): ErrordError {
    if (error instanceof ErrordError) return error;
    const connect = ConnectError.from(error);
    return new ErrordError(connect.code, connect.rawMessage, violationsOf(connect), error);
  }
}

/** gRPC's name of a status code: Code.InvalidArgument -> "INVALID_ARGUMENT". */
export function codeName(code: Code): string {
  return (Code[code] ?? "UNKNOWN").replace(/([a-z])([A-Z])/g, "$1_$2").toUpperCase();
}

const BAD_REQUEST = "google.rpc.BadRequest";

function violationsOf(error: ConnectError): FieldViolation[] {
  const found: FieldViolation[] = [];
  for (const detail of error.details) {
    if ("type" in detail && detail.type === BAD_REQUEST && detail.value instanceof Uint8Array) {
      found.push(...decodeBadRequest(detail.value));
    }
  }
  return found;
}

/** google.rpc.BadRequest's field_violations (1), each FieldViolation's field (1) and
 * description (2); other fields skipped. Read by hand: the client needs only these two. */
export function decodeBadRequest(bytes: Uint8Array): FieldViolation[] {
  const reader = new BinaryReader(bytes);
  const violations: FieldViolation[] = [];
  while (reader.pos < reader.len) {
    const [number, wireType] = reader.tag();
    if (number === 1 && wireType === WireType.LengthDelimited) {
      violations.push(decodeViolation(reader.bytes()));
    } else {
      reader.skip(wireType);
    }
  }
  return violations;
}

function decodeViolation(bytes: Uint8Array): FieldViolation {
  const reader = new BinaryReader(bytes);
  let field = "";
  let description = "";
  while (reader.pos < reader.len) {
    const [number, wireType] = reader.tag();
    if (number === 1 && wireType === WireType.LengthDelimited) field = reader.string();
    else if (number === 2 && wireType === WireType.LengthDelimited) description = reader.string();
    else reader.skip(wireType);
  }
  return { field, description };
}
