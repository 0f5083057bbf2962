/**
 * Messages as plain objects: what the client takes in and gives back.
 *
 * The generated messages hold durations, timestamps and JSON values as protobuf
 * messages. The client speaks in plain values instead: a `google.protobuf.Duration`
 * is a number of seconds, a `Timestamp` a `Date`, a `Value` any JSON value (a
 * `Struct` already is a JSON object in the generated code). `toMessage` builds a
 * request from such an object by walking the message's descriptor; `fromMessage`
 * turns a response back. Oneofs keep the generated shape: `{ case, value }`.
 */
import { create, fromJson, toJson } from "@bufbuild/protobuf";
import type { DescField, DescMessage, JsonValue, Message, MessageShape } from "@bufbuild/protobuf";
import {
  DurationSchema,
  ValueSchema,
  timestampDate,
  timestampFromDate,
  type Duration,
  type Timestamp,
  type Value,
} from "@bufbuild/protobuf/wkt";

type Hidden = "$typeName" | "$unknown";

/** A message as the client gives it back: durations in seconds, timestamps as Dates. */
export type Plain<T> = T extends Duration
  ? number
  : T extends Timestamp
    ? Date
    : T extends Value
      ? JsonValue
      : T extends { case: infer C extends string; value: infer V }
        ? { case: C; value: Plain<V> }
        : T extends Message
          ? { [K in keyof T as K extends Hidden ? never : K]: Plain<T[K]> }
          : T extends readonly (infer U)[]
            ? Plain<U>[]
            : T;

/** A message as the client takes it: every field optional, in the values of `Plain`. */
export type PlainInit<T> = T extends Duration
  ? number
  : T extends Timestamp
    ? Date
    : T extends Value
      ? JsonValue
      : T extends { case: infer C extends string; value: infer V }
        ? { case: C; value: PlainInit<V> }
        : T extends Message
          ? { [K in keyof T as K extends Hidden ? never : K]?: PlainInit<T[K]> }
          : T extends readonly (infer U)[]
            ? PlainInit<U>[]
            : T;

/** Seconds as a `google.protobuf.Duration` (nanosecond precision). */
export function durationOf(seconds: number): Duration {
  if (!Number.isFinite(seconds)) {
    throw new RangeError(`a duration should be a finite number of seconds, got ${seconds}`);
  }
  const nanos = Math.round(seconds * 1e9);
  const whole = Math.trunc(nanos / 1e9);
  return create(DurationSchema, { seconds: BigInt(whole), nanos: nanos - whole * 1e9 });
}

/** A `google.protobuf.Duration` in seconds. */
export function secondsOf(duration: Duration | undefined): number {
  return duration === undefined ? 0 : Number(duration.seconds) + duration.nanos / 1e9;
}

/** The message of `schema` that `plain` describes (see the module's comment). */
export function toMessage<Desc extends DescMessage>(
  schema: Desc,
  plain: PlainInit<MessageShape<Desc>> | undefined,
): MessageShape<Desc> {
  return create(schema, initOf(schema, (plain ?? {}) as Record<string, unknown>) as never);
}

/** `message`, of `schema`, as a plain object (see the module's comment). */
export function fromMessage<Desc extends DescMessage>(
  schema: Desc,
  message: MessageShape<Desc>,
): Plain<MessageShape<Desc>> {
  return plainOf(schema, message) as Plain<MessageShape<Desc>>;
}

function initOf(desc: DescMessage, plain: Record<string, unknown>): Record<string, unknown> {
  const init: Record<string, unknown> = {};
  for (const field of desc.fields) {
    const given = plain[field.localName];
    if (field.oneof === undefined && given !== undefined) {
      init[field.localName] = fieldIn(field, given);
    }
  }
  for (const oneof of desc.oneofs) {
    const given = plain[oneof.localName] as { case?: string; value?: unknown } | undefined;
    if (given?.case === undefined) continue;
    const field = oneof.fields.find((f) => f.localName === given.case);
    if (field === undefined) {
      throw new TypeError(`${desc.typeName}.${oneof.localName} has no case ${given.case}`);
    }
    init[oneof.localName] = { case: given.case, value: fieldIn(field, given.value) };
  }
  return init;
}

function fieldIn(field: DescField, given: unknown): unknown {
  if (field.fieldKind === "message") return messageIn(field.message, given);
  if (field.fieldKind === "list" && field.listKind === "message") {
    const message = field.message;
    return (given as unknown[]).map((item) => messageIn(message, item));
  }
  return given;
}

function messageIn(desc: DescMessage, given: unknown): unknown {
  switch (desc.typeName) {
    case "google.protobuf.Duration":
      return durationOf(given as number);
    case "google.protobuf.Timestamp":
      return timestampFromDate(given instanceof Date ? given : new Date(given as string));
    case "google.protobuf.Value":
      return fromJson(ValueSchema, given as JsonValue);
    case "google.protobuf.Struct":
      return given;
    default:
      return create(desc, initOf(desc, given as Record<string, unknown>) as never);
  }
}

function plainOf(desc: DescMessage, message: Message): Record<string, unknown> {
  const source = message as unknown as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const field of desc.fields) {
    if (field.oneof !== undefined) continue;
    const value = source[field.localName];
    if (value !== undefined) out[field.localName] = fieldOut(field, value);
  }
  for (const oneof of desc.oneofs) {
    const chosen = source[oneof.localName] as { case?: string; value?: unknown };
    const field = oneof.fields.find((f) => f.localName === chosen.case);
    out[oneof.localName] =
      field === undefined ? { case: undefined } : { case: chosen.case, value: fieldOut(field, chosen.value) };
  }
  return out;
}

function fieldOut(field: DescField, value: unknown): unknown {
  if (field.fieldKind === "message") return messageOut(field.message, value);
  if (field.fieldKind === "list" && field.listKind === "message") {
    const message = field.message;
    return (value as unknown[]).map((item) => messageOut(message, item));
  }
  if (field.fieldKind === "map" && field.mapKind === "message") {
    const message = field.message;
    const entries = Object.entries(value as Record<string, unknown>);
    return Object.fromEntries(entries.map(([key, item]) => [key, messageOut(message, item)]));
  }
  return value;
}

function messageOut(desc: DescMessage, value: unknown): unknown {
  switch (desc.typeName) {
    case "google.protobuf.Duration":
      return secondsOf(value as Duration);
    case "google.protobuf.Timestamp":
      return timestampDate(value as Timestamp);
    case "google.protobuf.Value":
      return toJson(ValueSchema, value as Value);
    case "google.protobuf.Struct":
      return value;
    default:
      return plainOf(desc, value as Message);
  }
}
