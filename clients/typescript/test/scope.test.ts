/** Scopes against errord as a process: a tool's breaker is kept per scope, so one forced
 * open in one scope refuses that scope's calls and lets another's run. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { BreakerPhase, Executor, OperatorClient, tool } from "../src/index.js";
import { boardKey } from "../src/executor/board.js";
import { scratch, startErrord, waitFor } from "./helpers.js";

test("a breaker open in one scope refuses its calls and leaves another scope's running", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: quotes\n    retry_policy: {max_total_time_ms: 500}\n");
  let calls = { eu: 0, us: 0 };
  const inScope = (scope: "eu" | "us") =>
    tool("quotes", () => {
      calls = { ...calls, [scope]: calls[scope] + 1 };
      return { from: scope };
    }, { scope });
  const operator = new OperatorClient({ target: daemon.address, token: daemon.token });
  const eu = new Executor({ tools: [inScope("eu")], target: daemon.address, decisionTimeout: 10 });
  const us = new Executor({ tools: [inScope("us")], target: daemon.address, decisionTimeout: 10 });
  try {
    await operator.forceOpenBreaker({ tool: "quotes", scope: "eu", by: "test" }, { timeout: 10 });
    await Promise.all([eu.start(10), us.start(10)]);
    await waitFor(() => !eu.board.closed(boardKey("quotes", "eu")), "the executor to see eu's breaker open");
    const [refused] = await eu.run([{ id: "c-eu", name: "quotes", arguments: {} }], { turnId: "turn-eu" });
    const [ran] = await us.run([{ id: "c-us", name: "quotes", arguments: {} }], { turnId: "turn-us" });

    assert.equal(refused?.status, "failed");
    assert.equal(refused?.attempts, 0);
    assert.deepEqual([ran?.status, ran?.output], ["succeeded", { from: "us" }]);
    assert.deepEqual(calls, { eu: 0, us: 1 });
    const succeededInUs = async (): Promise<boolean> => {
      const { tools } = await operator.getToolStats({ tool: "quotes" }, { timeout: 10 });
      return tools.find((stats) => stats.scope === "us")?.successes === 1n;
    };
    await waitFor(succeededInUs, "errord to record the success in us (the outcome goes in the background)");
    const { breaker } = await operator.getBreaker({ tool: "quotes", scope: "us" }, { timeout: 10 });
    assert.equal(breaker?.effectivePhase, BreakerPhase.CLOSED);
  } finally {
    await Promise.all([eu.close(), us.close()]);
    await daemon.stop();
  }
});
