/** Turns as an agent's run, against errord as a process: who a turn acts for, recorded
 * with its reports; a deadline that cuts a batch short; a call whose every attempt timed
 * out; progress steps; several runs as one turn; closing while errord is away. */
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { CallStatus, ErrordClient, Executor, hang, mockTool, tool, type Progress } from "../src/index.js";
import { recordedReports, scratch, startErrord, waitFor, type Daemon } from "./helpers.js";

/** Seconds each executor gives errord to answer before its local policy would decide. */
const DECISIONS = 10;

/** The summary errord recorded when `turnId` ended (its trace's turn_ended event). */
async function endedSummary(daemon: Daemon, turnId: string) {
  const errord = new ErrordClient({ target: daemon.address, token: daemon.token });
  const ended = await waitFor(async () => {
    const events = await errord.turnTrace(turnId, { timeout: 10 });
    const found = events.filter((e) => e.event.case === "turnEnded");
    return found.length > 0 ? found : undefined;
  }, `the end of ${turnId} in the trace`);
  assert.equal(ended.length, 1, `${turnId} ended ${ended.length} times`);
  const event = ended[0]?.event;
  assert.ok(event?.case === "turnEnded" && event.value.summary);
  return event.value.summary;
}

test("userId and sessionId, the executor's or a run's own, are recorded with every failure and outcome of the turn", async () => {
  const dir = scratch();
  const daemon = await startErrord(dir, "tools:\n  - name: flaky\n    timeout_ms: 200\n    retry_policy: {initial_delay_ms: 10}\n");
  const flaky = () => mockTool("flaky", { script: [hang(60), { ok: true }] });
  const executor = new Executor({ tools: [flaky()], target: daemon.address, decisionTimeout: DECISIONS, userId: "ada-42", sessionId: "session-a" });
  const other = new Executor({ tools: [flaky()], target: daemon.address, decisionTimeout: DECISIONS, userId: "ada-42", sessionId: "session-a" });
  try {
    const mine = await executor.runOne({ id: "c1", name: "flaky", arguments: {} }, { turnId: "turn-executors" });
    const own = await other.runOne({ id: "c1", name: "flaky", arguments: {} }, { turnId: "turn-runs", userId: "bob-7", sessionId: "session-b" });
    assert.deepEqual([mine.status, own.status], ["succeeded", "succeeded"]);
  } finally {
    await executor.close();
    await other.close();
  }
  try {
    const db = join(dir, "errord.db");
    for (const [turnId, user, session] of [
      ["turn-executors", "ada-42", "session-a"],
      ["turn-runs", "bob-7", "session-b"],
    ] as const) {
      const bodies = await waitFor(() => {
        const found = recordedReports(db, turnId);
        return found.length === 2 ? found : undefined;
      }, `the failure and the outcome of ${turnId}`);
      for (const body of bodies) {
        assert.ok(body.includes(user) && body.includes(session), `${turnId}'s report lacks ${user} or ${session}: ${body}`);
      }
    }
    assert.ok(!recordedReports(db, "turn-runs").some((body) => body.includes("ada-42")), "a run's own userId did not replace the executor's");
  } finally {
    await daemon.stop();
  }
});

test("a turn's deadline of 1 s with a tool that hangs: run returns at the deadline, the hung call timed_out, its dependent skipped, the others succeeded; errord's summary ends both unfinished calls TIMED_OUT", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: stuck\n    timeout_ms: 30000\n  - name: quick\n");
  let aborted = false;
  const stuck = tool("stuck", async (_args, { signal }) => {
    await new Promise((resolve) => signal.addEventListener("abort", resolve, { once: true }));
    aborted = true;
    return "late";
  });
  const quick = mockTool("quick", { answer: { fine: 1 } });
  const executor = new Executor({ tools: [stuck, quick], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    await executor.start();
    const started = performance.now();
    const results = await executor.run(
      [
        { id: "c1", name: "quick", arguments: {} },
        { id: "c2", name: "stuck", arguments: {} },
        { id: "c3", name: "quick", arguments: {} },
        { id: "c4", name: "quick", arguments: {}, dependsOn: ["c2"] },
      ],
      { turnId: "turn-deadline", deadline: 1 },
    );
    const took = performance.now() - started;
    // The hung attempt answers only when aborted, under a 30 s timeout: a run that returns
    // well before it was ended by the deadline (measured: within a few ms of it; a bound on
    // the lateness itself would fail on a loaded machine, not on a wrong executor).
    assert.ok(took < 10_000, `run returned after ${took.toFixed(0)} ms: the deadline did not end it`);
    assert.deepEqual(results.map((r) => r.status), ["succeeded", "timed_out", "succeeded", "skipped"]);
    assert.equal(quick.calls, 2, "the call waiting on the hung one ran");
    assert.equal(results[1]?.error?.code, "TIMEOUT");
    assert.match(results[1]?.modelText ?? "", /stuck did not answer before the turn's deadline \(1 s\)/);
    await waitFor(() => aborted, "the hung attempt's signal to abort");
    const summary = await endedSummary(daemon, "turn-deadline");
    assert.equal(summary.deadlinePassed, true);
    const statuses = Object.fromEntries(summary.calls.map((call) => [call.callId, CallStatus[call.status]]));
    assert.deepEqual(statuses, { c1: "SUCCEEDED", c2: "TIMED_OUT", c3: "SUCCEEDED", c4: "TIMED_OUT" });
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("a call whose every attempt timed out ends timed_out, not escalated", async () => {
  const yaml = "tools:\n  - name: slow\n    timeout_ms: 100\n    retry_policy: {initial_delay_ms: 10, max_attempts: 2}\n";
  const daemon = await startErrord(scratch(), yaml);
  const slow = mockTool("slow", { script: [hang(60)] });
  const executor = new Executor({ tools: [slow], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const result = await executor.runOne({ id: "c1", name: "slow", arguments: {} });
    assert.equal(result.decidedBy, "errord");
    assert.equal(result.attempts, 2);
    assert.deepEqual([result.status, result.error?.code], ["timed_out", "TIMEOUT"]);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("onProgress hears each attempt, the retry with its delay and errord's words, and how the call ended", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: flaky\n    timeout_ms: 200\n    retry_policy: {initial_delay_ms: 20}\n");
  const steps: Progress[] = [];
  const flaky = mockTool("flaky", { script: [hang(60), { ok: 2 }] });
  const executor = new Executor({ tools: [flaky], target: daemon.address, decisionTimeout: DECISIONS, onProgress: (step) => steps.push(step) });
  try {
    await executor.runOne({ id: "c1", name: "flaky", arguments: {} }, { turnId: "turn-progress" });
    assert.deepEqual(
      steps.map((s) => [s.kind, s.attempt, s.status]),
      [
        ["attempt", 1, null],
        ["retry", 1, null],
        ["attempt", 2, null],
        ["done", 0, "succeeded"],
      ],
    );
    assert.ok(steps.every((s) => s.turnId === "turn-progress" && s.callId === "c1" && s.tool === "flaky"));
    const retry = steps[1];
    assert.ok(retry && retry.delay > 0 && retry.message.length > 0, `the retry step: ${JSON.stringify(retry)}`);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("an onProgress that throws costs the call nothing: the throw is logged", async () => {
  const warned: string[] = [];
  const executor = new Executor({
    tools: [mockTool("t", { answer: 1 })],
    target: "127.0.0.1:1",
    watchTools: false,
    logger: { warn: (message) => warned.push(message) },
    onProgress: () => {
      throw new Error("the UI broke");
    },
  });
  const result = await executor.runOne({ id: "c1", name: "t", arguments: {} });
  await executor.close(0.1);
  assert.equal(result.status, "succeeded");
  assert.ok(warned.some((line) => /onProgress threw for call c1: the UI broke/.test(line)), warned.join("\n"));
});

test("runs inside turn.within() are one errord turn: both runs' calls in its summary, ended once, when within's function settles", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: flaky\n    timeout_ms: 200\n    retry_policy: {initial_delay_ms: 10}\n  - name: quick\n");
  const flaky = mockTool("flaky", { script: [hang(60), { ok: 1 }] });
  const executor = new Executor({ tools: [flaky, mockTool("quick", { answer: 2 })], target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const turn = executor.turn({ turnId: "turn-agent-run", userId: "ada" });
    const statuses = await turn.within(async () => {
      const [first] = await executor.run([{ id: "c1", name: "flaky", arguments: {} }]);
      const second = await executor.runOne({ id: "c2", name: "quick", arguments: {} });
      return [first?.status, second.status];
    });
    assert.deepEqual(statuses, ["succeeded", "succeeded"]);
    const summary = await endedSummary(daemon, "turn-agent-run");
    assert.deepEqual(
      summary.calls.map((call) => [call.callId, CallStatus[call.status]]),
      [
        ["c1", "SUCCEEDED"],
        ["c2", "SUCCEEDED"],
      ],
    );
    await assert.rejects(turn.run([{ id: "c3", name: "quick", arguments: {} }]), /has ended: start another/);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("with errord stopped, close() returns at once and logs how many queued reports were not delivered", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: t\n");
  const warned: string[] = [];
  const executor = new Executor({ tools: [mockTool("t", { answer: 1 })], target: daemon.address, logger: { warn: (message) => warned.push(message) } });
  await executor.runOne({ id: "c1", name: "t", arguments: {} });
  await executor.link.drain(30); // the first turn's outcome and EndTurn went through
  await daemon.stop();
  const result = await executor.runOne({ id: "c2", name: "t", arguments: {} });
  assert.equal(result.status, "succeeded");
  const started = performance.now();
  await executor.close();
  const took = performance.now() - started;
  // close() would wait out its 5 s of patience for errord: well under it, it did not
  // (measured: under a millisecond).
  assert.ok(took < 2500, `close() took ${took.toFixed(0)} ms: it waited for errord`);
  assert.ok(
    warned.some((line) => line.includes("2 queued reports were not delivered (outcomes of 1 attempts, 1 turn endings)")),
    warned.join("\n"),
  );
});
