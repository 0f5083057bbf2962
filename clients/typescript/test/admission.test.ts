/** Admission against errord as a process: 20 executors, each with its own connection,
 * on a half-open breaker: exactly one claims the probe and runs the tool, the others are
 * refused and run the alternative without running it. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { BreakerPhase, Executor, mockTool, OperatorClient, type Tool } from "../src/index.js";
import { scratch, startErrord, waitFor } from "./helpers.js";

const EXECUTORS = 20;

test("20 executors on a half-open breaker run one probe and 19 alternatives", async () => {
  const yaml = "tools:\n  - name: quotes\n    timeout_ms: 60000\n    alternatives: [quotes_backup]\n  - name: quotes_backup\n";
  const daemon = await startErrord(scratch(), yaml);
  let release = (): void => undefined;
  const gate = new Promise<void>((open) => (release = open));
  let quotesCalls = 0;
  const quotes: Tool = {
    name: "quotes",
    async run() {
      quotesCalls += 1;
      await gate; // held until the others are done, so the probe cannot end early
      return { from: "quotes" };
    },
  };
  const backup = mockTool("quotes_backup", { answer: { from: "backup" } });
  const operator = new OperatorClient({ target: daemon.address, token: daemon.token });
  const executors = Array.from(
    { length: EXECUTORS },
    () => new Executor({ tools: [quotes, backup], target: daemon.address, decisionTimeout: 10 }),
  );
  try {
    await operator.forceOpenBreaker({ tool: "quotes", duration: 0.2, by: "test" }, { timeout: 10 });
    await waitFor(async () => {
      const { breaker } = await operator.getBreaker({ tool: "quotes" }, { timeout: 10 });
      return breaker?.effectivePhase === BreakerPhase.HALF_OPEN;
    }, "the forced-open breaker to half-open");
    await Promise.all(executors.map((executor) => executor.start(10)));
    await waitFor(() => executors.every((executor) => !executor.board.closed("quotes")), "every executor to see the breaker open");
    let done = 0;
    const runs = executors.map((executor, n) =>
      executor.runOne({ id: `c-${n}`, name: "quotes", arguments: {} }, { turnId: `turn-${n}` }).finally(() => {
        done += 1;
      }),
    );
    await waitFor(() => done === EXECUTORS - 1, "19 executors to have their results");
    const callsWhileHeld = quotesCalls;
    release();
    const results = await Promise.all(runs);

    assert.equal(callsWhileHeld, 1);
    assert.deepEqual([quotesCalls, backup.calls], [1, EXECUTORS - 1]);
    const probes = results.filter((result) => result.toolUsed === "quotes");
    assert.equal(probes.length, 1);
    assert.deepEqual([probes[0]?.status, probes[0]?.output, probes[0]?.fallbackUsed], ["succeeded", { from: "quotes" }, false]);
    const others = results.filter((result) => result.toolUsed !== "quotes");
    assert.ok(others.every((r) => r.status === "succeeded" && r.fallbackUsed && r.decidedBy === "errord" && r.decisionIds.length === 1));
  } finally {
    release();
    await Promise.all(executors.map((executor) => executor.close()));
    await daemon.stop();
  }
});
