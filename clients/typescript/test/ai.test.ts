/** The Vercel AI SDK adapter against errord as a process, with the SDK's own mock model
 * scripted: an input the tool's zod schema rejects reaches the model as errord's
 * correction naming the parameter, and the model's corrected call runs; a hung attempt is
 * retried to success; one generateText inside a turn is one errord turn. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { generateText, simulateReadableStream, stepCountIs, streamText, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { z } from "zod";
import { errordTools } from "../src/adapters/ai.js";
import { CallStatus, ErrordClient, Executor } from "../src/index.js";
import { scratch, startErrord, waitFor } from "./helpers.js";

/** Seconds each executor gives errord to answer before its local policy would decide. */
const DECISIONS = 10;

type Step = { calls: { id: string; tool: string; input: string }[] } | { text: string };
type Prompt = { role: string; content: unknown }[];

/** A mock model that answers with `script`'s steps in turn, and keeps each prompt it got. */
function scriptedModel(script: Step[]) {
  const prompts: Prompt[] = [];
  const usage = {
    inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 },
    outputTokens: { total: 1, text: 1, reasoning: 0 },
  };
  const model = new MockLanguageModelV3({
    doGenerate: async (options) => {
      prompts.push(options.prompt as Prompt);
      const step = script[prompts.length - 1];
      assert.ok(step, `the model was asked ${prompts.length} times; its script has ${script.length} steps`);
      if ("text" in step) {
        return { content: [{ type: "text", text: step.text }], finishReason: { unified: "stop", raw: "stop" }, usage, warnings: [] };
      }
      const content = step.calls.map((call) => ({ type: "tool-call" as const, toolCallId: call.id, toolName: call.tool, input: call.input }));
      return { content, finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage, warnings: [] };
    },
  });
  return { model, prompts };
}

/** The output the model read for `callId` in `prompt`. */
function toolOutput(prompt: Prompt | undefined, callId: string): { type: string; value: unknown } | undefined {
  for (const message of prompt ?? []) {
    if (message.role !== "tool" || !Array.isArray(message.content)) continue;
    for (const part of message.content as { type: string; toolCallId: string; output: { type: string; value: unknown } }[]) {
      if (part.type === "tool-result" && part.toolCallId === callId) return part.output;
    }
  }
  return undefined;
}

test("an input the tool's zod schema rejects reaches the model as errord's correction naming the parameter; the corrected call runs; one generateText is one turn", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: weather\n");
  const booked: unknown[] = [];
  const bookRoom = tool({
    description: "Book a hotel room",
    inputSchema: z.object({ hotel: z.string(), nights: z.number().int().min(1) }),
    execute: async (input) => {
      booked.push(input);
      return { booked: input.hotel, nights: input.nights };
    },
  });
  const { model, prompts } = scriptedModel([
    { calls: [{ id: "c1", tool: "book_room", input: '{"hotel": "Grand", "nights": 0}' }] },
    { calls: [{ id: "c2", tool: "book_room", input: '{"hotel": "Grand", "nights": 2}' }] },
    { text: "Booked two nights at the Grand." },
  ]);
  const executor = new Executor({ target: daemon.address, decisionTimeout: DECISIONS });
  const errord = new ErrordClient({ target: daemon.address, token: daemon.token });
  try {
    const tools = errordTools(executor, { book_room: bookRoom });
    const answer = await executor
      .turn({ turnId: "turn-ai-sdk" })
      .within(() => generateText({ model, tools, prompt: "Book the Grand for two nights", stopWhen: stepCountIs(5) }));
    assert.equal(answer.text, "Booked two nights at the Grand.");
    assert.deepEqual(booked, [{ hotel: "Grand", nights: 2 }], "the rejected input ran the tool");

    const correction = toolOutput(prompts[1], "c1");
    assert.equal(correction?.type, "error-text", `the model read ${JSON.stringify(correction)}`);
    const text = String(correction?.value);
    assert.match(text, /nights/, "errord's correction names the parameter");
    assert.doesNotMatch(text, /^Invalid input for tool/, "the model read the SDK's own validation message");
    assert.deepEqual(toolOutput(prompts[2], "c2"), { type: "json", value: { booked: "Grand", nights: 2 } });

    const events = await waitFor(async () => {
      const found = await errord.turnTrace("turn-ai-sdk", { timeout: 10 });
      return found.some((e) => e.event.case === "turnEnded") ? found : undefined;
    }, "the end of the generateText's turn");
    const failure = events.find((e) => e.event.case === "failure");
    assert.ok(failure?.event.case === "failure");
    assert.equal(failure.callId, "c1");
    assert.equal(failure.event.value.decision?.classification?.parameter, "nights");
    assert.equal(failure.event.value.decision?.llmMessage, text, "the model read other words than errord's decision");
    assert.ok(events.some((e) => e.event.case === "outcome" && e.callId === "c2"), "the corrected call's success is in the same turn");
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("a tool whose first attempt hangs past its manifest's timeout is retried to success: the model reads the output", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: weather\n    timeout_ms: 200\n    retry_policy: {initial_delay_ms: 10}\n");
  const signals: AbortSignal[] = [];
  const weather = tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }, { abortSignal }) => {
      if (abortSignal) signals.push(abortSignal);
      if (signals.length === 1) await new Promise((resolve) => abortSignal?.addEventListener("abort", resolve, { once: true }));
      return { city, sky: "clear" };
    },
  });
  const { model, prompts } = scriptedModel([{ calls: [{ id: "w1", tool: "weather", input: '{"city": "Oslo"}' }] }, { text: "Clear in Oslo." }]);
  const executor = new Executor({ target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const answer = await generateText({ model, tools: errordTools(executor, { weather }), prompt: "Weather in Oslo?", stopWhen: stepCountIs(3) });
    assert.equal(answer.text, "Clear in Oslo.");
    assert.deepEqual(toolOutput(prompts[1], "w1"), { type: "json", value: { city: "Oslo", sky: "clear" } });
    assert.equal(signals.length, 2, "the tool ran other than twice");
    assert.ok(signals[0]?.aborted, "the hung attempt's abortSignal did not abort at its timeout");
  } finally {
    await executor.close();
    await daemon.stop();
  }
});

test("streamText read to its end inside a turn's within is one errord turn: every step's calls in its summary", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: weather\n    timeout_ms: 200\n    retry_policy: {initial_delay_ms: 10}\n");
  let runs = 0;
  const weather = tool({
    description: "The weather in a city",
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }, { abortSignal }) => {
      runs += 1;
      if (runs === 1) await new Promise((resolve) => abortSignal?.addEventListener("abort", resolve, { once: true }));
      return { city, sky: "clear" };
    },
  });
  const usage = { inputTokens: { total: 1, noCache: 1, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: 1, text: 1, reasoning: 0 } };
  const steps: unknown[][] = [
    [{ type: "tool-call", toolCallId: "s1", toolName: "weather", input: '{"city": "Oslo"}' }, { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage }],
    [{ type: "tool-call", toolCallId: "s2", toolName: "weather", input: '{"city": "Bergen"}' }, { type: "finish", finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage }],
    [
      { type: "text-start", id: "t" },
      { type: "text-delta", id: "t", delta: "Clear in both." },
      { type: "text-end", id: "t" },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage },
    ],
  ];
  const model = new MockLanguageModelV3({
    doStream: async () => ({ stream: simulateReadableStream({ chunks: steps.shift() ?? [], chunkDelayInMs: 5 }) as never }),
  });
  const executor = new Executor({ target: daemon.address, decisionTimeout: DECISIONS });
  const errord = new ErrordClient({ target: daemon.address, token: daemon.token });
  try {
    const tools = errordTools(executor, { weather });
    const text = await executor.turn({ turnId: "turn-stream" }).within(async () => {
      const result = streamText({ model, tools, prompt: "Oslo and Bergen?", stopWhen: stepCountIs(4) });
      return result.text;
    });
    assert.equal(text, "Clear in both.");
    const ended = await waitFor(async () => {
      const events = await errord.turnTrace("turn-stream", { timeout: 10 });
      return events.find((e) => e.event.case === "turnEnded");
    }, "the end of the streamed run's turn");
    assert.ok(ended.event.case === "turnEnded");
    const calls = ended.event.value.summary?.calls.map((call) => [call.callId, CallStatus[call.status]]);
    assert.deepEqual(calls, [
      ["s1", "SUCCEEDED"],
      ["s2", "SUCCEEDED"],
    ]);
  } finally {
    await executor.close();
    await daemon.stop();
  }
});
