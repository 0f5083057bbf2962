/**
 * The executor's picture of its tools: each one's timeout and circuit breaker, pushed by
 * errord (WatchTools) and kept in memory, so that admitting a call costs no RPC while its
 * breaker is closed.
 *
 * The watch runs in the background for the executor's life and starts again, half a
 * second after its stream ends (errord restarted, or was never there). Meanwhile the
 * picture is the last one received; a tool errord never mentioned has a closed breaker
 * and the executor's default timeout.
 */
import { BreakerPhase, type WatchToolsResponse } from "../gen/errord/v1/errord_pb.js";
import type { ErrordClient } from "../client.js";
import { ErrordError } from "../errors.js";
import type { Plain } from "../plain.js";
import { Code } from "@connectrpc/connect";

/** Between a tool's name and its scope in a key, as errord joins them. */
const SCOPE_SEPARATOR = "\x1f";

/** The key of `tool`'s breaker in `scope`: its name alone without one (errord keeps a
 * breaker per tool and scope). */
export function boardKey(tool: string, scope = ""): string {
  return scope ? `${tool}${SCOPE_SEPARATOR}${scope}` : tool;
}

interface ToolView {
  readonly timeout: number;
  /** True when `timeout` is the tool's manifest's; false for a tool errord knows only by
   * its breaker (the default timeout, which a tool's own `timeout` replaces). */
  readonly hasManifest: boolean;
  /** True while the breaker's recorded phase is CLOSED: attempts run without asking. */
  readonly closed: boolean;
}

/** Tool policies as errord last sent them. */
export class ToolBoard {
  private tools = new Map<string, ToolView>();
  private syncedNow = false;
  private streamLost = false;
  private waiters: (() => void)[] = [];

  /** `defaultTimeout`: seconds an attempt of a tool errord did not mention may run. */
  constructor(public defaultTimeout = 30) {}

  /** Seconds an attempt of the tool of `key` (boardKey) may run: its manifest's, sent
   * for the tool and each of its scopes; else `declared`, the tool's own (`Tool.timeout`);
   * else errord's default. */
  timeout(key: string, declared?: number): number {
    const view = this.tools.get(key) ?? this.tools.get(key.split(SCOPE_SEPARATOR, 1)[0] ?? key);
    if (view?.hasManifest) return view.timeout;
    return declared ?? view?.timeout ?? this.defaultTimeout;
  }

  /** True when attempts of the tool in the scope of `key` may run without asking errord first. */
  closed(key: string): boolean {
    return this.tools.get(key)?.closed ?? true;
  }

  /** True once a snapshot arrived, while its stream lasts. */
  get synced(): boolean {
    return this.syncedNow;
  }

  /** True from the end of a watch (errord went away, or closed the stream) until errord
   * answers again. */
  get lost(): boolean {
    return this.streamLost;
  }

  /** Resolves once a snapshot arrives (at once when one did). */
  whenSynced(): Promise<void> {
    return this.syncedNow ? Promise.resolve() : new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Take in one WatchTools response. */
  apply(response: Plain<WatchToolsResponse>): void {
    this.streamLost = false;
    if (response.defaultTimeout !== undefined) this.defaultTimeout = response.defaultTimeout;
    if (response.snapshot) this.tools = new Map();
    for (const policy of response.tools) {
      const phase = policy.breaker?.phase ?? BreakerPhase.UNSPECIFIED;
      this.tools.set(boardKey(policy.tool, policy.scope), {
        timeout: policy.timeout ?? this.defaultTimeout,
        hasManifest: policy.hasManifest,
        closed: phase === BreakerPhase.CLOSED || phase === BreakerPhase.UNSPECIFIED,
      });
    }
    if (response.snapshot) {
      this.syncedNow = true;
      for (const wake of this.waiters.splice(0)) wake();
    }
  }

  /** Apply WatchTools responses until `signal` aborts, watching again `retryEvery`
   * seconds after each stream ends. */
  async follow(client: ErrordClient, signal: AbortSignal, retryEvery = 0.5): Promise<void> {
    while (!signal.aborted) {
      try {
        for await (const response of client.watchTools({ signal })) this.apply(response);
      } catch (error) {
        if (error instanceof ErrordError && error.code === Code.Unimplemented) {
          console.warn("errord does not serve WatchTools: every call runs unasked");
          return;
        }
      }
      this.syncedNow = false;
      this.streamLost = true;
      await sleep(retryEvery, signal);
    }
  }
}

/** Resolves after `seconds`, or at once when `signal` aborts. */
export function sleep(seconds: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const timer = setTimeout(done, seconds * 1000);
    signal?.addEventListener("abort", done, { once: true });
    function done(): void {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
  });
}
