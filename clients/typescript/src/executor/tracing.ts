/**
 * Trace context for the executor's calls to errord, when OpenTelemetry is there.
 *
 * `@opentelemetry/api` is an optional peer dependency: it is imported once, on first use,
 * and when it cannot be, nothing changes. When it can, the context active where a failure,
 * an admission or an outcome is reported is injected into its call's headers by the
 * global propagator (W3C `traceparent` once an SDK registered one), so errord's span of
 * the decision joins the agent's trace. The application's SDK sets up the context
 * manager and the propagator (`NodeSDK` does both); without them nothing is injected.
 */

/** Request headers a propagator writes into: `traceparent`, `tracestate`, `baggage`. */
export type TraceHeaders = Record<string, string>;

type Inject = (carrier: TraceHeaders) => void;

let injector: Promise<Inject | undefined> | undefined;

/** The global propagator injecting the active context; undefined without `@opentelemetry/api`. */
export function loadInjector(): Promise<Inject | undefined> {
  injector ??= import("@opentelemetry/api").then(
    ({ context, propagation }) =>
      (carrier: TraceHeaders) =>
        propagation.inject(context.active(), carrier),
    () => undefined,
  );
  return injector;
}

/** The headers carrying the context active here; undefined when there is none to send.
 * Never rejects: trace context must not cost a call. */
export async function traceHeaders(): Promise<TraceHeaders | undefined> {
  const inject = await loadInjector();
  if (inject === undefined) return undefined;
  const carrier: TraceHeaders = {};
  try {
    inject(carrier);
  } catch {
    return undefined; // a broken propagator: the call goes without
  }
  return Object.keys(carrier).length > 0 ? carrier : undefined;
}
