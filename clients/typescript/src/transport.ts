/**
 * The gRPC connection to errord: where it listens, its token, TLS, and a short retry of
 * UNAVAILABLE.
 *
 * Every ErrorHandlerService RPC is idempotent (a report repeated returns what was
 * recorded), so a unary call that finds errord away (restarting, a connection being set
 * up) is tried again a few times, 20 ms apart and doubling up to 100 ms, within the call's
 * own deadline: what the Python client asks of gRPC with a retry service config.
 */
import { Code, ConnectError, type Interceptor, type Transport } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";

/** Where errord listens unless told otherwise. */
export const DEFAULT_TARGET = "127.0.0.1:50051";

/** TLS for the connection to errord: PEM texts (or Buffers), as node:tls takes them. */
export interface TlsOptions {
  /** The certificate authorities to trust instead of the system's. */
  readonly ca?: string | Buffer;
  /** A client certificate and its key, for mutual TLS. */
  readonly cert?: string | Buffer;
  readonly key?: string | Buffer;
  /** The name the server's certificate must carry, when not the target's host. */
  readonly servername?: string;
}

/** How to reach errord. */
export interface ConnectionOptions {
  /** host:port errord listens on; "127.0.0.1:50051" by default. */
  readonly target?: string;
  /** errord's bearer token, sent as `authorization: Bearer TOKEN` with every call. */
  readonly token?: string;
  /** TLS: true for the system's authorities, or the options; plaintext when absent. */
  readonly tls?: boolean | TlsOptions;
  /** Attempts of a unary call that errord answers UNAVAILABLE (5; 1: no retry). */
  readonly attempts?: number;
}

/** A gRPC transport to errord with the token, TLS and retry of `options`. */
export function openTransport(options: ConnectionOptions = {}): Transport {
  const target = options.target ?? DEFAULT_TARGET;
  const tls = options.tls === true ? {} : options.tls || undefined;
  const interceptors: Interceptor[] = [retryUnavailable(options.attempts ?? 5)];
  if (options.token) interceptors.push(bearer(options.token));
  return createGrpcTransport({
    baseUrl: `${tls ? "https" : "http"}://${target}`,
    interceptors,
    nodeOptions: tls ? { ...tls } : {},
  });
}

function bearer(token: string): Interceptor {
  return (next) => async (request) => {
    request.header.set("authorization", `Bearer ${token}`);
    return next(request);
  };
}

function retryUnavailable(attempts: number): Interceptor {
  return (next) => async (request) => {
    if (request.stream) return next(request);
    let wait = 20;
    for (let attempt = 1; ; attempt++) {
      try {
        return await next(request);
      } catch (error) {
        const unavailable = error instanceof ConnectError && error.code === Code.Unavailable;
        if (!unavailable || attempt >= attempts || request.signal.aborted) throw error;
      }
      await pause(wait, request.signal);
      wait = Math.min(wait * 2, 100);
    }
  };
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
  });
}
