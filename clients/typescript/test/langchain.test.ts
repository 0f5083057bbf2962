/** The LangChain.js tools adapter against errord as a process, with a scripted fake chat
 * model (@langchain/core's FakeListChatModel, its responses read as tool calls): an input
 * the tool's zod schema rejects reaches the model as errord's correction naming the
 * parameter and the corrected call runs, in one turn; a hung attempt is retried to
 * success; an artifact comes back as the tool's own ToolMessage carries it. */
import assert from "node:assert/strict";
import { test } from "node:test";
import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { z } from "zod";
import { errordTools, type ErrordTool } from "../src/adapters/langchain.js";
import { ErrordClient, Executor } from "../src/index.js";
import { scratch, startErrord, waitFor } from "./helpers.js";

/** Seconds each executor gives errord to answer before its local policy would decide. */
const DECISIONS = 10;

type Step = { calls: { id: string; name: string; args: Record<string, unknown> }[] } | { text: string };

/** A FakeListChatModel whose responses are `script`'s steps (tool calls, or a text), and
 * which keeps the messages of each prompt it got. */
class ScriptedChatModel extends FakeListChatModel {
  readonly prompts: BaseMessage[][] = [];

  constructor(script: Step[]) {
    super({ responses: script.map((step) => JSON.stringify(step)) });
  }

  override async _generate(messages: BaseMessage[], options?: this["ParsedCallOptions"]) {
    this.prompts.push([...messages]);
    return super._generate(messages, options);
  }

  override _formatGeneration(text: string) {
    const step = JSON.parse(text) as Step;
    if ("text" in step) return { message: new AIMessage(step.text), text: step.text };
    const toolCalls = step.calls.map((call) => ({ id: call.id, name: call.name, args: call.args, type: "tool_call" as const }));
    return { message: new AIMessage({ content: "", tool_calls: toolCalls }), text: "" };
  }
}

/** The agent loop of a LangChain.js tool-calling agent: the model, then its calls' tools,
 * until it answers. */
async function agentLoop(model: ScriptedChatModel, tools: ErrordTool[], question: string): Promise<{ answer: string; messages: BaseMessage[] }> {
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  const messages: BaseMessage[] = [new HumanMessage(question)];
  for (;;) {
    const ai = (await model.invoke(messages)) as AIMessage;
    messages.push(ai);
    if (!ai.tool_calls?.length) return { answer: String(ai.content), messages };
    for (const call of ai.tool_calls) messages.push((await byName.get(call.name)?.invoke({ ...call, type: "tool_call" })) as ToolMessage);
  }
}

/** The ToolMessage answering `callId` among `messages`. */
function answered(messages: readonly BaseMessage[], callId: string): ToolMessage | undefined {
  return messages.find((m): m is ToolMessage => ToolMessage.isInstance(m) && m.tool_call_id === callId);
}

test("an input the tool's zod schema rejects reaches the model as errord's correction naming the parameter; the corrected call runs; the loop is one turn", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: weather\n");
  const booked: unknown[] = [];
  const bookRoom = tool(
    async (input) => {
      booked.push(input);
      return `Booked ${input.hotel} for ${input.nights} nights`;
    },
    { name: "book_room", description: "Book a hotel room", schema: z.object({ hotel: z.string(), nights: z.number().int().min(1) }) },
  );
  const model = new ScriptedChatModel([
    { calls: [{ id: "c1", name: "book_room", args: { hotel: "Grand", nights: 0 } }] },
    { calls: [{ id: "c2", name: "book_room", args: { hotel: "Grand", nights: 2 } }] },
    { text: "Booked two nights at the Grand." },
  ]);
  const executor = new Executor({ target: daemon.address, decisionTimeout: DECISIONS });
  const errord = new ErrordClient({ target: daemon.address, token: daemon.token });
  try {
    const tools = errordTools(executor, [bookRoom]);
    const { answer, messages } = await executor.turn({ turnId: "turn-langchain" }).within(() => agentLoop(model, tools, "Book the Grand for two nights"));
    assert.equal(answer, "Booked two nights at the Grand.");
    assert.deepEqual(booked, [{ hotel: "Grand", nights: 2 }], "the rejected input ran the tool");

    const correction = answered(model.prompts[1] ?? [], "c1");
    assert.equal(correction?.status, "error");
    const text = String(correction?.content);
    assert.match(text, /nights/, "errord's correction names the parameter");
    assert.doesNotMatch(text, /Received tool input did not match expected schema/, "the model read LangChain's own validation message");
    assert.equal(answered(messages, "c2")?.content, "Booked Grand for 2 nights");

    const events = await waitFor(async () => {
      const found = await errord.turnTrace("turn-langchain", { timeout: 10 });
      return found.some((e) => e.event.case === "turnEnded") ? found : undefined;
    }, "the end of the agent loop's turn");
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

test("a tool whose first attempt hangs past its manifest's timeout is retried to success; its artifact comes back in its ToolMessage", async () => {
  const daemon = await startErrord(scratch(), "tools:\n  - name: weather\n    timeout_ms: 200\n    retry_policy: {initial_delay_ms: 10}\n");
  const signals: AbortSignal[] = [];
  const weather = tool(
    async ({ city }, config) => {
      const signal = (config as { signal?: AbortSignal } | undefined)?.signal;
      if (signal) signals.push(signal);
      if (signals.length === 1) await new Promise((resolve) => signal?.addEventListener("abort", resolve, { once: true }));
      return [`Clear in ${city}`, { city, sky: "clear", source: "station 7" }];
    },
    { name: "weather", description: "The weather in a city", schema: z.object({ city: z.string() }), responseFormat: "content_and_artifact" },
  );
  const model = new ScriptedChatModel([{ calls: [{ id: "w1", name: "weather", args: { city: "Oslo" } }] }, { text: "Clear in Oslo." }]);
  const executor = new Executor({ target: daemon.address, decisionTimeout: DECISIONS });
  try {
    const { answer, messages } = await agentLoop(model, errordTools(executor, [weather]), "Weather in Oslo?");
    assert.equal(answer, "Clear in Oslo.");
    const message = answered(messages, "w1");
    assert.deepEqual([message?.content, message?.status, message?.artifact], ["Clear in Oslo", "success", { city: "Oslo", sky: "clear", source: "station 7" }]);
    assert.equal(signals.length, 2, "the tool ran other than twice");
    assert.ok(signals[0]?.aborted, "the hung attempt's signal did not abort at its timeout");
  } finally {
    await executor.close();
    await daemon.stop();
  }
});
