/** Trace context: with `@opentelemetry/api`, a context manager and the W3C propagator set
 * up as an SDK does, the executor's ReportFailure(s), AdmitCall and ReportOutcome carry
 * the `traceparent` of the span active where each was reported (seen by an in-memory
 * errord), and a run inside a span against errord as a process still succeeds. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { context, propagation, ROOT_CONTEXT, trace, TraceFlags, type Context } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { createRouterTransport } from "@connectrpc/connect";
import { ErrordClient, ErrorCode, Executor, mockTool } from "../src/index.js";
import { ErrordLink } from "../src/executor/link.js";
import { ErrorHandlerService } from "../src/gen/errord/v1/errord_pb.js";
import { scratch, startErrord } from "./helpers.js";

context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
propagation.setGlobalPropagator(new W3CTraceContextPropagator());

let spans = 0;

/** A context whose active span has fresh ids, and the `traceparent` it propagates as. */
function inSpan(): { ctx: Context; traceparent: string } {
  spans += 1;
  const traceId = spans.toString(16).padStart(32, "a");
  const spanId = spans.toString(16).padStart(16, "b");
  const span = trace.wrapSpanContext({ traceId, spanId, traceFlags: TraceFlags.SAMPLED });
  return { ctx: trace.setSpan(ROOT_CONTEXT, span), traceparent: `00-${traceId}-${spanId}-01` };
}

/** An in-memory errord answering every call, recording each call's method and `traceparent`. */
function fakeErrord(): { client: ErrordClient; seen: [string, string | null][] } {
  const seen: [string, string | null][] = [];
  const transport = createRouterTransport(({ service }) => {
    service(ErrorHandlerService, {
      reportFailure(_request, call) {
        seen.push(["ReportFailure", call.requestHeader.get("traceparent")]);
        return {};
      },
      reportFailures(request, call) {
        seen.push(["ReportFailures", call.requestHeader.get("traceparent")]);
        return { results: request.failures.map(() => ({ result: { case: "answer", value: {} } })) };
      },
      admitCall(_request, call) {
        seen.push(["AdmitCall", call.requestHeader.get("traceparent")]);
        return { admitted: true };
      },
      reportOutcome(_request, call) {
        seen.push(["ReportOutcome", call.requestHeader.get("traceparent")]);
        return {};
      },
    });
  });
  return { client: new ErrordClient({ transport }), seen };
}

const quiet = { warn: (): void => undefined };

function failure(callId: string) {
  return { turnId: "turn-1", callId, tool: "search", attempt: 1, error: { code: ErrorCode.TIMEOUT, message: "slow" } };
}

test("ReportFailure, AdmitCall and ReportOutcome carry the traceparent of the span active where each was reported", async () => {
  const { client, seen } = fakeErrord();
  const link = new ErrordLink(client, quiet, 5);
  const failed = inSpan();
  const admitted = inSpan();
  const succeeded = inSpan();
  await context.with(failed.ctx, () => link.decide(failure("c1")));
  await context.with(admitted.ctx, () => link.admit({ turnId: "turn-1", callId: "c1", tool: "search", attempt: 2 }));
  context.with(succeeded.ctx, () => link.reportOutcome({ turnId: "turn-1", callId: "c1", tool: "search", attempt: 2 }));
  await link.outcomesSent();
  assert.deepEqual(seen, [
    ["ReportFailure", failed.traceparent],
    ["AdmitCall", admitted.traceparent],
    ["ReportOutcome", succeeded.traceparent],
  ]);
});

test("failures reported together go as one ReportFailures with the first one's traceparent", async () => {
  const { client, seen } = fakeErrord();
  const link = new ErrordLink(client, quiet, 5);
  const first = inSpan();
  const second = inSpan();
  const answers = [context.with(first.ctx, () => link.decide(failure("c1"))), context.with(second.ctx, () => link.decide(failure("c2")))];
  await Promise.all(answers);
  assert.deepEqual(seen, [["ReportFailures", first.traceparent]]);
});

test("outcomes sent by one background loop each carry the traceparent of the span they were reported in", async () => {
  const { client, seen } = fakeErrord();
  const link = new ErrordLink(client, quiet, 5);
  const one = inSpan();
  const two = inSpan();
  context.with(one.ctx, () => link.reportOutcome({ turnId: "turn-1", callId: "c1", tool: "search", attempt: 1 }));
  context.with(two.ctx, () => link.reportOutcome({ turnId: "turn-1", callId: "c2", tool: "search", attempt: 1 }));
  await link.outcomesSent();
  assert.deepEqual(seen.map(([, traceparent]) => traceparent).sort(), [one.traceparent, two.traceparent].sort());
});

test("with no span active, calls go without a traceparent", async () => {
  const { client, seen } = fakeErrord();
  const link = new ErrordLink(client, quiet, 5);
  await context.with(ROOT_CONTEXT, () => link.decide(failure("c1")));
  await context.with(ROOT_CONTEXT, () => link.admit({ turnId: "turn-1", callId: "c1", tool: "search", attempt: 2 }));
  assert.deepEqual(seen, [
    ["ReportFailure", null],
    ["AdmitCall", null],
  ]);
});

test("inside an active span, a failure then success against errord as a process is decided by errord and succeeds", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: flaky\n");
  const unavailable = Object.assign(new Error("service unavailable"), { status: 503 });
  const flaky = mockTool("flaky", { script: [unavailable, { ok: true }] });
  const executor = new Executor({ tools: [flaky], target: daemon.address, decisionTimeout: 10 });
  try {
    const { ctx } = inSpan();
    const result = await context.with(ctx, () => executor.runOne({ id: "c1", name: "flaky", arguments: {} }, { turnId: "turn-traced" }));
    assert.deepEqual([result.status, result.output, result.attempts, result.decidedBy], ["succeeded", { ok: true }, 2, "errord"]);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});
