/** errord killed (SIGKILL) in the middle of a batch and started again on its port:
 * every call gets a result and none rejects; failures while it is away are decided by
 * the local policy and say so; failures after the restart are errord's again. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Executor, type Tool, type ToolContext } from "../src/index.js";
import { freePort, scratch, startErrord, waitFor } from "./helpers.js";

const PER_PHASE = 10;
const YAML = "tools:\n  - name: feed\n    timeout_ms: 60000\n";

/** A promise and what resolves it. */
function gate(): { opened: Promise<void>; open: () => void } {
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

test("SIGKILL and restart mid-batch: every call has a result, local decisions while errord is away, errord's after", async () => {
  const dir = scratch();
  const port = await freePort();
  let daemon = await startErrord(dir, YAML, port);
  const killed = gate();
  const restarted = gate();
  const seen = new Set<string>();
  let succeeded = 0;
  // Each phase's calls run once it comes (up, killed, restarted). The first call of each
  // phase fails its first attempt with a dropped connection; every other attempt succeeds.
  // (One failure per phase: the turn's retry budget is errord's to spend, not the test's.)
  const feed: Tool = {
    name: "feed",
    async run(_args, context: ToolContext) {
      const n = Number(context.callId.slice(2));
      await [Promise.resolve(), killed.opened, restarted.opened][Math.floor(n / PER_PHASE)];
      if (n % PER_PHASE === 0 && !seen.has(context.callId)) {
        seen.add(context.callId);
        throw Object.assign(new Error("read ECONNRESET"), { code: "ECONNRESET" });
      }
      succeeded += 1;
      return { call: context.callId };
    },
  };
  const executor = new Executor({ tools: [feed], target: `127.0.0.1:${port}`, decisionTimeout: 2, logger: { warn: () => undefined } });
  try {
    await executor.start(10);
    const calls = Array.from({ length: 3 * PER_PHASE }, (_, n) => ({ id: `c-${n}`, name: "feed", arguments: { n } }));
    const batch = executor.run(calls, { turnId: "turn-restart" });
    await waitFor(() => succeeded === PER_PHASE, "the first calls to succeed with errord up");
    await daemon.stop("SIGKILL");
    killed.open();
    await waitFor(() => succeeded === 2 * PER_PHASE, "the calls failing while errord is away to succeed");
    daemon = await startErrord(dir, YAML, port);
    restarted.open();
    const results = await batch;

    assert.deepEqual(results.map((r) => r.callId), calls.map((c) => c.id));
    assert.ok(results.every((r) => r.status === "succeeded"));
    const failed = results.filter((_r, n) => n % PER_PHASE === 0);
    const shown = JSON.stringify(failed);
    assert.ok(failed.every((r) => r.attempts === 2), shown);
    assert.deepEqual(failed.map((r) => r.decidedBy), ["errord", "local", "errord"], shown);
    assert.deepEqual(failed.map((r) => r.decisionIds.length), [1, 0, 1], shown);
    const others = results.filter((_r, n) => n % PER_PHASE !== 0);
    assert.ok(others.every((r) => r.attempts === 1 && r.decidedBy === "nobody"));
  } finally {
    killed.open();
    restarted.open();
    await executor.close(2);
    await daemon.stop();
  }
});
