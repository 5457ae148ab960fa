import { type AgentSpec, DEFAULTS, type JsonValue, type Message, type SwarmSpec } from "@flotilla/core";
import type { AgentEvent } from "@flotilla/events";
import { describe, expect, it } from "vitest";
import { type LoopEffects, runLoop, settle, type TurnOutput } from "../src/loop.ts";
import { HANDOFF_TOOL, type ToolCall, type ToolOutput, type ToolResult } from "../src/steps.ts";

/** Every agent here has the tools the scripts call, but `ghost`. */
const agent = (name: string, options: Record<string, JsonValue> = {}): AgentSpec => ({
  kind: "agent",
  name,
  model: "fake:x",
  instructions: "",
  tools: ["slow", "fast", "look", "t", "x"],
  options,
});
const swarm = (agents: AgentSpec[], extra: Partial<SwarmSpec> = {}): SwarmSpec => ({
  kind: "swarm",
  name: "s",
  agents,
  mode: "handoff",
  maxHandoffs: 8,
  ...extra,
});
const usage = { inputTokens: 1, outputTokens: 2, totalTokens: 3 };
const turn = (text: string, ...toolCalls: Array<[string, JsonValue]>): TurnOutput => ({
  text,
  toolCalls: toolCalls.map(([name, args], i) => ({ toolCallId: `c${i}`, name, args })),
  usage,
  finishReason: toolCalls.length ? "tool-calls" : "stop",
});
const handoffTo = (to: string, reason?: string): [string, JsonValue] => [HANDOFF_TOOL, { agent: to, ...(reason && { reason }) }];

/**
 * Effects that play each agent's turns from a script (its last turn repeats) and record every
 * call, in the order the loop made them. `toolCall` answers after `delays[name]` ms.
 */
/** A toolResults effect that streams one `tool_result` event per result. */
async function* resultEvents(results: readonly ToolResult[]): AsyncGenerator<AgentEvent, void, undefined> {
  for (const r of results) yield { type: "tool_result", toolCallId: r.call.toolCallId, name: r.call.name, result: r.result, isError: r.isError };
}

function fakeEffects(script: Record<string, TurnOutput[]>, delays: Record<string, number> = {}) {
  const log: string[] = [];
  const seen: Array<{ agent: string; step: number; messages: Message[] }> = [];
  const effects: LoopEffects = {
    enter(a, targets) {
      log.push(`enter ${a.name} [${targets.join(",")}]`);
      let n = 0;
      return {
        async modelTurn(messages, { step }) {
          seen.push({ agent: a.name, step, messages: [...messages] });
          log.push(`turn ${a.name} #${step}`);
          const turns = script[a.name]!;
          return turns[Math.min(n++, turns.length - 1)]!;
        },
        async toolCall(call: ToolCall, { step }): Promise<ToolOutput> {
          log.push(`call ${call.name} #${step}`);
          await new Promise((r) => setTimeout(r, delays[call.name] ?? 0));
          log.push(`done ${call.name}`);
          return { result: `${call.name} ok`, isError: false };
        },
      };
    },
    async answered(message) {
      log.push(`answered ${message.content}`);
    },
    async toolResults(results, { step }) {
      log.push(`results #${step}: ${results.map((r) => `${r.call.name}=${JSON.stringify(r.result)}${r.isError ? "!" : ""}`).join(" ")}`);
    },
    async handoff({ from, to, reason, message }, step) {
      log.push(`handoff ${from}->${to} (${reason ?? ""}) #${step}${message ? ` input=${message.content}` : ""}`);
    },
  };
  return { effects, log, seen };
}

const input: Message[] = [{ role: "user", content: "go" }];

describe("runLoop (the tool loop with fake effects)", () => {
  it("runs a turn's tool calls at once and reports their results in call order, then gives them to the next turn", async () => {
    const { effects, log, seen } = fakeEffects({ a: [turn("", ["slow", {}], ["fast", {}]), turn("done")] }, { slow: 30, fast: 0 });
    const result = await settle(runLoop(agent("a"), input, effects));
    expect(log).toEqual([
      "enter a []",
      "turn a #0",
      "answered ",
      "call slow #0",
      "call fast #0",
      "done fast",
      "done slow",
      'results #0: slow="slow ok" fast="fast ok"',
      "turn a #1",
      "answered done",
    ]);
    expect(seen[1]!.messages.slice(2).map((m) => (m.role === "tool" ? m.name : m.role))).toEqual(["slow", "fast"]);
    expect(result).toMatchObject({ text: "done", agent: { name: "a" }, steps: 2, usage: { inputTokens: 2, outputTokens: 4, totalTokens: 6 } });
  });

  it("answers a call of a tool the agent does not have as an error, without running it", async () => {
    const { effects, log } = fakeEffects({ a: [turn("", ["fast", {}], ["rm_rf", {}]), turn("done")] });
    await settle(runLoop(agent("a"), input, effects));
    expect(log.filter((l) => l.startsWith("call") || l.startsWith("results"))).toEqual([
      "call fast #0",
      'results #0: fast="fast ok" rm_rf="unknown tool \\"rm_rf\\""!',
    ]);
  });

  it("takes only a turn's first handoff (a second one is an error result), after the turn's other tools", async () => {
    const { effects, log } = fakeEffects({
      a: [turn("", ["look", {}], handoffTo("b", "billing"), handoffTo("c"))],
      b: [turn("from b")],
      c: [turn("from c")],
    });
    const result = await settle(runLoop(swarm([agent("a"), agent("b"), agent("c")]), input, effects));
    expect(log.filter((l) => !l.startsWith("answered"))).toEqual([
      "enter a [b,c]",
      "turn a #0",
      "call look #0",
      "done look",
      'results #0: look="look ok" transfer_to_agent="transferred to b" transfer_to_agent="only one handoff per turn"!',
      "handoff a->b (billing) #1",
      "enter b [a,c]",
      "turn b #1",
    ]);
    expect(result).toMatchObject({ text: "from b", agent: { name: "b" }, steps: 2 });
  });

  it("refuses a handoff to an unknown agent (and any after it in the turn): the agent carries on", async () => {
    const { effects, log } = fakeEffects({ a: [turn("", handoffTo("ghost"), handoffTo("b")), turn("kept")], b: [turn("never")] });
    const result = await settle(runLoop(swarm([agent("a"), agent("b")]), input, effects));
    expect(log.filter((l) => /^(enter|handoff|results)/.test(l))).toEqual([
      "enter a [b]",
      'results #0: transfer_to_agent="no agent \\"ghost\\"; choose one of b"! transfer_to_agent="only one handoff per turn"!',
    ]);
    expect(result).toMatchObject({ text: "kept", agent: { name: "a" } });
  });

  it("stops offering handoffs once maxHandoffs are used", async () => {
    const { effects, log } = fakeEffects({ a: [turn("", handoffTo("b")), turn("a again")], b: [turn("", handoffTo("a"))] });
    const result = await settle(runLoop(swarm([agent("a"), agent("b")], { maxHandoffs: 2 }), input, effects));
    expect(log.filter((l) => /^(enter|handoff|results)/.test(l))).toEqual([
      "enter a [b]",
      'results #0: transfer_to_agent="transferred to b"',
      "handoff a->b () #1",
      "enter b [a]",
      'results #1: transfer_to_agent="transferred to a"',
      "handoff b->a () #2",
      "enter a []",
      'results #2: transfer_to_agent="no agent \\"b\\"; choose one of "!',
    ]);
    expect(result).toMatchObject({ text: "a again", agent: { name: "a" }, steps: 4 });
  });

  it("starts a swarm at its entry agent", async () => {
    const { effects, log } = fakeEffects({ a: [turn("a")], b: [turn("b")] });
    const result = await settle(runLoop(swarm([agent("a"), agent("b")], { entry: "b" }), input, effects));
    expect(log[0]).toBe("enter b [a]");
    expect(result.agent.name).toBe("b");
    await expect(settle(runLoop(swarm([agent("a")], { entry: "nobody" }), input, effects))).rejects.toMatchObject({ code: "VALIDATION_ERROR", field: "entry" });
  });

  it("runs a pipeline's agents in order, each given the previous answer as its input", async () => {
    const { effects, log, seen } = fakeEffects({ a: [turn("", ["t", {}]), turn("draft")], b: [turn("edited")], c: [turn("signed")] });
    const result = await settle(runLoop(swarm([agent("a"), agent("b"), agent("c")], { mode: "pipeline" }), input, effects));
    expect(log.filter((l) => /^(enter|handoff|turn)/.test(l))).toEqual([
      "enter a []",
      "turn a #0",
      "turn a #1",
      "handoff a->b (pipeline) #2 input=draft",
      "enter b []",
      "turn b #2",
      "handoff b->c (pipeline) #3 input=edited",
      "enter c []",
      "turn c #3",
    ]);
    expect(seen.find((s) => s.agent === "b")!.messages.at(-1)).toEqual({ role: "user", content: "draft" });
    expect(result).toMatchObject({ text: "signed", agent: { name: "c" }, steps: 4 });
  });

  it("honours maxSteps: the run's override, else the agent's option, else the default", async () => {
    const looping = { a: [turn("again", ["t", {}])] };
    const turns = async (spec: AgentSpec, maxSteps?: number) => {
      const { effects, log } = fakeEffects(looping);
      const result = await settle(runLoop(spec, input, effects, { maxSteps }));
      expect(log.filter((l) => l.startsWith("turn"))).toHaveLength(result.steps);
      return result.steps;
    };
    expect(await turns(agent("a"))).toBe(DEFAULTS.maxSteps);
    expect(await turns(agent("a", { maxSteps: 3 }))).toBe(3);
    expect(await turns(agent("a", { maxSteps: 3 }), 2)).toBe(2);
  });

  it("yields the events its effects stream, in order, and returns the result", async () => {
    const { effects } = fakeEffects({});
    const streaming: LoopEffects = {
      ...effects,
      enter: () => ({
        async *modelTurn(_messages, { step }) {
          yield { type: "text", delta: `t${step}` };
          return step === 0 ? turn("", ["x", {}]) : turn("end");
        },
        toolCall: async () => ({ result: 1, isError: false }),
      }),
      toolResults: resultEvents,
    };
    const events: AgentEvent[] = [];
    const loop = runLoop(agent("a"), input, streaming);
    for (let next = await loop.next(); ; next = await loop.next()) {
      if (next.done) {
        expect(next.value).toMatchObject({ text: "end", steps: 2 });
        break;
      }
      events.push(next.value);
    }
    expect(events.map((e) => e.type)).toEqual(["text", "tool_result", "text"]);
  });
  it("streams what a turn's tool calls emit while they run, as it comes, before the turn's results", async () => {
    const { effects } = fakeEffects({});
    const finished: string[] = [];
    const streaming: LoopEffects = {
      ...effects,
      enter: () => ({
        modelTurn: async (_messages, { step }) => (step === 0 ? turn("", ["slow", {}], ["fast", {}]) : turn("end")),
        async toolCall(call, _turn, emit) {
          const wait = call.name === "slow" ? 30 : 5;
          for (let i = 1; i <= 2; i++) {
            await new Promise((r) => setTimeout(r, wait));
            emit({ type: "progress", toolCallId: call.toolCallId, name: call.name, data: i });
          }
          finished.push(call.name);
          return { result: call.name, isError: false };
        },
      }),
      toolResults: resultEvents,
    };
    const events: AgentEvent[] = [];
    const loop = runLoop(agent("a"), input, streaming);
    for (let next = await loop.next(); !next.done; next = await loop.next()) {
      events.push(next.value);
      // Yielded while the calls still run: the stream is not held until the turn ends.
      if (events.length === 1) expect(finished).toEqual([]);
    }
    expect(events.map((e) => (e.type === "progress" ? `${e.name}:${e.data}` : `${e.type}:${(e as { name: string }).name}`))).toEqual([
      "fast:1",
      "fast:2",
      "slow:1",
      "slow:2",
      "tool_result:slow",
      "tool_result:fast",
    ]);
  });

  it("drops what a call emits once the turn's calls have all settled, even while the reader is still on an earlier event", async () => {
    const { effects } = fakeEffects({});
    const streaming: LoopEffects = {
      ...effects,
      enter: () => ({
        modelTurn: async (_messages, { step }) => (step === 0 ? turn("", ["t", {}]) : turn("end")),
        async toolCall(call, _turn, emit) {
          emit({ type: "progress", toolCallId: call.toolCallId, name: call.name, data: "working" });
          setTimeout(() => emit({ type: "progress", toolCallId: call.toolCallId, name: call.name, data: "late" }), 10);
          return { result: "ok", isError: false };
        },
      }),
      toolResults: resultEvents,
    };
    const events: AgentEvent[] = [];
    const loop = runLoop(agent("a"), input, streaming);
    for (let next = await loop.next(); !next.done; next = await loop.next()) {
      events.push(next.value);
      // A slow reader: the call settled and the late event was emitted before it asks for the next one.
      if (events.length === 1) await new Promise((r) => setTimeout(r, 40));
    }
    expect(events.map((e) => (e.type === "progress" ? e.data : e.type))).toEqual(["working", "tool_result"]);
  });

  it("fails with a tool call's error at once, without waiting for the turn's other calls", async () => {
    const { effects } = fakeEffects({});
    const fatal = new Error("fatal");
    const failing: LoopEffects = {
      ...effects,
      enter: () => ({
        modelTurn: async () => turn("", ["slow", {}], ["fast", {}]),
        toolCall: (call) => (call.name === "fast" ? Promise.reject(fatal) : new Promise(() => {})),
      }),
    };
    await expect(settle(runLoop(agent("a"), input, failing))).rejects.toBe(fatal);
  });

  it("carries on after a refused handoff even when the turn's other tools worked", async () => {
    const { effects, log } = fakeEffects({ a: [turn("", ["look", {}], handoffTo("ghost")), turn("still a")] });
    const result = await settle(runLoop(swarm([agent("a"), agent("b")]), input, effects));
    expect(log.filter((l) => l.startsWith("turn") || l.startsWith("handoff"))).toEqual(["turn a #0", "turn a #1"]);
    expect(result).toMatchObject({ text: "still a", agent: { name: "a" } });
  });

  it("runs any tool the effects know when ownToolsOnly is off", async () => {
    const { effects, log } = fakeEffects({ a: [turn("", ["rm_rf", {}]), turn("done")] });
    await settle(runLoop(agent("a"), input, effects, { ownToolsOnly: false }));
    expect(log).toContain("call rm_rf #0");
  });

  it("names the answering agent in a swarm's messages only, and needs no answered effect", async () => {
    const answers: Message[] = [];
    const { effects } = fakeEffects({ a: [turn("from a")], b: [turn("from b")] });
    const { answered: _, ...quiet } = effects;
    await settle(runLoop(agent("a"), input, { ...quiet, answered: async (m) => void answers.push(m) }));
    await settle(runLoop(swarm([agent("a"), agent("b")]), input, { ...quiet, answered: async (m) => void answers.push(m) }));
    expect(answers).toEqual([
      { role: "assistant", content: "from a" },
      { role: "assistant", content: "from a", agent: "a" },
    ]);
    expect(await settle(runLoop(agent("a"), input, quiet))).toMatchObject({ text: "from a", steps: 1 });
  });

  it("answers nothing when given no steps", async () => {
    const { effects, log } = fakeEffects({ a: [turn("never")] });
    expect(await settle(runLoop(agent("a"), input, effects, { maxSteps: 0 }))).toMatchObject({ text: "", steps: 0 });
    expect(log).toEqual(["enter a []"]);
  });

  it("settles a loop whose effects stream events to its result", async () => {
    const { effects } = fakeEffects({});
    const streaming: LoopEffects = {
      ...effects,
      enter: () => ({
        async *modelTurn() {
          yield { type: "text", delta: "t" };
          return turn("end");
        },
        toolCall: async () => ({ result: 1, isError: false }),
      }),
    };
    expect(await settle(runLoop(agent("a"), input, streaming))).toMatchObject({ text: "end", steps: 1 });
  });
});
