// The tool loop stops where a tool call must wait for a signal, and carries on from there: in a
// swarm, in a pipeline, with two waiting calls in one turn. Effects are scripted; nothing else runs.
import { type AgentSpec, type JsonValue, type SwarmSpec, TaskSuspended, WaitForSignal } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { type LoopEffects, runLoop, type SuspendedRun, Suspension, settle, type TurnOutput } from "../src/loop.ts";
import { HANDOFF_TOOL, type SignalOutcome } from "../src/steps.ts";
import { resumePoint, suspended } from "../src/suspend.ts";

const agent = (name: string): AgentSpec => ({ kind: "agent", name, model: "fake:x", instructions: "", tools: ["gate", "gate2", "fast"], options: {} });
const usage = { inputTokens: 1, outputTokens: 1, totalTokens: 2 };
const turn = (text: string, ...calls: Array<[string, JsonValue]>): TurnOutput => ({
  text,
  toolCalls: calls.map(([name, args], i) => ({ toolCallId: `${text}-${i}`, name, args })),
  usage,
  finishReason: calls.length ? "tool-calls" : "stop",
});

/** Each agent plays its turns in order; `gate` and `gate2` wait for the signal of their name until it came. */
function effects(script: Record<string, TurnOutput[]>) {
  const log: string[] = [];
  const played: Record<string, number> = {};
  const fx: LoopEffects = {
    enter: (a, targets) => {
      log.push(`enter ${a.name} [${targets.join(",")}]`);
      return {
        async modelTurn() {
          const n = played[a.name] ?? 0;
          played[a.name] = n + 1;
          log.push(`turn ${a.name}`);
          return script[a.name]![Math.min(n, script[a.name]!.length - 1)]!;
        },
        async toolCall(call, _turn, _emit, signals?: Readonly<Record<string, SignalOutcome>>) {
          log.push(`call ${call.name}`);
          if (call.name.startsWith("gate")) {
            const got = signals?.[call.name];
            if (!got) throw new WaitForSignal(call.name, "signal", { timeoutMs: 1000 });
            return { result: "payload" in got ? got.payload : "timed out", isError: false };
          }
          return { result: "fast ok", isError: false };
        },
      };
    },
    toolResults: async (results) => {
      log.push(`results ${results.map((r) => `${r.call.name}=${JSON.stringify(r.result)}`).join(" ")}`);
    },
    handoff: async ({ from, to }) => {
      log.push(`handoff ${from}>${to}`);
    },
  };
  return { fx, log };
}

/** Runs until the loop stops; returns where (through the JSON a task keeps). */
async function stops(run: Promise<unknown>): Promise<SuspendedRun> {
  const err = await run.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(Suspension);
  return JSON.parse(JSON.stringify((err as Suspension).run)) as SuspendedRun;
}

const resumeWith = (run: SuspendedRun, payload: JsonValue) =>
  resumePoint({ state: run as unknown as JsonValue, signal: { name: run.waits[0]!.signal, payload, at: 1 } });

describe("suspend and resume", () => {
  it("a swarm's member stops mid-turn; resumed, it carries on as itself: no earlier turn, handoff or finished call again", async () => {
    const spec: SwarmSpec = { kind: "swarm", name: "s", agents: [agent("a"), agent("b")], mode: "handoff", maxHandoffs: 1 };
    const script = { a: [turn("to b", [HANDOFF_TOOL, { agent: "b" }])], b: [turn("b1", ["fast", {}], ["gate", {}]), turn("done")] };
    const first = effects(script);
    const run = await stops(settle(runLoop(spec, [{ role: "user", content: "hi" }], first.fx)));
    expect(run).toMatchObject({ agent: "b", at: 1, agentSteps: 1, steps: 2, waits: [{ toolCallId: "b1-1", tool: "gate", signal: "gate" }] });
    expect(run.results).toEqual({ "b1-0": { result: "fast ok", isError: false } });
    expect(first.log).toEqual([
      "enter a [b]",
      "turn a",
      'results transfer_to_agent="transferred to b"',
      "handoff a>b",
      "enter b []",
      "turn b",
      "call fast",
      "call gate",
    ]);

    // Resumed, b's next turn is its second: its first was answered before the stop.
    const again = effects({ a: [turn("never")], b: [turn("done")] });
    const result = await settle(runLoop(spec, [], again.fx, { resume: resumeWith(run, "open") }));
    // b's handoff allowance is still spent: it may hand over to no one.
    expect(again.log).toEqual(["enter b []", "call gate", 'results fast="fast ok" gate="open"', "turn b"]);
    expect(result).toMatchObject({ text: "done", agent: { name: "b" }, steps: 3 });
  });

  it("a pipeline's second agent stops; resumed, the first is not run again and the handoff not repeated", async () => {
    const spec: SwarmSpec = { kind: "swarm", name: "p", agents: [agent("a"), agent("b")], mode: "pipeline", maxHandoffs: 0 };
    const run = await stops(settle(runLoop(spec, [{ role: "user", content: "hi" }], effects({ a: [turn("a says")], b: [turn("b1", ["gate", {}])] }).fx)));
    expect(run).toMatchObject({ agent: "b", at: 1 });
    const again = effects({ a: [turn("never")], b: [turn("b done")] });
    const result = await settle(runLoop(spec, [], again.fx, { resume: resumeWith(run, 1) }));
    expect(again.log).toEqual(["enter b []", "call gate", "results gate=1", "turn b"]);
    expect(result.text).toBe("b done");
  });

  it("two calls of a turn wait: the first's signal resumes it, and it stops again for the second, keeping the first's result", async () => {
    const spec = agent("solo");
    const script = { solo: [turn("t", ["gate2", {}], ["gate", {}]), turn("end")] };
    const run = await stops(settle(runLoop(spec, [{ role: "user", content: "go" }], effects(script).fx)));
    expect(run.waits.map((w) => w.signal)).toEqual(["gate2", "gate"]);
    const second = await stops(settle(runLoop(spec, [], effects(script).fx, { resume: resumeWith(run, "A") })));
    expect(second.waits.map((w) => w.signal)).toEqual(["gate"]);
    expect(second.results).toEqual({ "t-0": { result: "A", isError: false } });
    const last = effects({ solo: [turn("end")] });
    expect((await settle(runLoop(spec, [], last.fx, { resume: resumeWith(second, "B") }))).text).toBe("end");
    expect(last.log).toEqual(["enter solo []", "call gate", 'results gate2="A" gate="B"', "turn solo"]);
  });

  it("a model turn that stops (its rate limit released the slot) is taken when the run resumes: the turns before it are not", async () => {
    const spec = agent("solo");
    const first = effects({ solo: [turn("t", ["fast", {}]), turn("end")] });
    let turns = 0;
    const limited: LoopEffects = {
      ...first.fx,
      enter: async (a, t) => {
        const own = await first.fx.enter(a, t);
        return {
          ...own,
          modelTurn: (m, c) => {
            if (++turns === 2) throw new WaitForSignal("rate-limit:llm", "rate-limit", { timeoutMs: 500, onTimeout: "continue" });
            return own.modelTurn(m, c);
          },
        };
      },
    };
    const run = await stops(settle(runLoop(spec, [{ role: "user", content: "go" }], limited)));
    expect(run).toMatchObject({ beforeTurn: true, agentSteps: 1, steps: 1, waits: [{ signal: "rate-limit:llm", kind: "rate-limit" }] });
    expect(suspended(run).request).toEqual({ name: "rate-limit:llm", kind: "rate-limit", timeoutMs: 500, onTimeout: "continue" });
    const again = effects({ solo: [turn("end")] });
    const result = await settle(runLoop(spec, [], again.fx, { resume: resumePoint({ state: run as unknown as JsonValue }) }));
    expect(again.log).toEqual(["enter solo []", "turn solo"]);
    expect(result).toMatchObject({ text: "end", steps: 2 });
  });

  it("the state is checked when read back, and the request shows the waiting call's tool and arguments", () => {
    expect(() => resumePoint({ state: { messages: [] } })).toThrow(/corrupt saved run state/);
    const err = suspended({
      messages: [{ role: "assistant", content: "", toolCalls: [{ toolCallId: "c", name: "gate", args: { x: 1 } }] }],
      agent: "a",
      at: 0,
      agentSteps: 1,
      steps: 1,
      usage,
      results: {},
      signals: {},
      waits: [{ toolCallId: "c", tool: "gate", signal: "gate", kind: "approval", options: {} }],
    });
    expect(err).toBeInstanceOf(TaskSuspended);
    expect(err.request).toEqual({ name: "gate", kind: "approval", toolCallId: "c", tool: "gate", args: { x: 1 }, onTimeout: "fail" });
  });
});
