import type { Lane } from "@flotilla/broker";
import type { FinishInput, StartReply } from "@flotilla/store";
import { recordingLogger } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import type { AttemptRunner } from "../src/attempt.ts";
import { Dispatcher } from "../src/dispatcher.ts";
import { InFlight } from "../src/in-flight.ts";
import type { OutcomeRecorder } from "../src/outcome-recorder.ts";

// The dispatcher on its own: which claimed entries it runs, which it dead-letters and which it leaves
// alone, and where a failure of either goes. The attempt runner and the recorder are stand-ins that
// record their calls (each has tests of its own against Redis); the in-flight table is the real one.

interface Call {
  what: "run" | "record" | "deadLetter" | "deadLettered" | "failCorrupt";
  args: unknown[];
}

function setup(behaviour: { run?: () => Promise<unknown>; deadLetter?: () => Promise<void>; failCorrupt?: () => Promise<void> } = {}) {
  const calls: Call[] = [];
  const errors: unknown[] = [];
  const { log, lines } = recordingLogger();
  const attempts = {
    run: (...args: unknown[]) => {
      calls.push({ what: "run", args });
      return (behaviour.run ?? (async () => ({ outcome: { attempt: 1, status: "COMPLETED", agent: "a" } satisfies FinishInput, traceId: "t1" })))();
    },
  } as unknown as AttemptRunner;
  const recorder = {
    record: async (...args: unknown[]) => void calls.push({ what: "record", args }),
    deadLetter: (...args: unknown[]) => {
      calls.push({ what: "deadLetter", args });
      return (behaviour.deadLetter ?? (async () => {}))();
    },
    deadLettered: (...args: unknown[]) => void calls.push({ what: "deadLettered", args }),
    failCorrupt: (...args: unknown[]) => {
      calls.push({ what: "failCorrupt", args });
      return (behaviour.failCorrupt ?? (async () => {}))();
    },
  } as unknown as OutcomeRecorder;
  let freed = 0;
  const inFlight = new InFlight(() => freed++);
  const dispatcher = new Dispatcher(
    inFlight,
    attempts,
    recorder,
    log,
    (err) => errors.push(err),
    (leaseFrom) => leaseFrom < 0,
  );
  const settled = () => inFlight.settled();
  return { dispatcher, inFlight, calls, errors, lines, settled, freed: () => freed };
}

const lane: Lane = { queue: "q", priority: "normal" };
const at = (kind: string) => ({ priority: "normal" as const, entryId: "1-0", kind });

describe("Dispatcher", () => {
  it("runs a `run` reply and records its outcome with the attempt's trace id", async () => {
    const s = setup();
    const reply = { ...at("run"), taskId: "q/t1", attempt: 1 } as unknown as StartReply;
    s.dispatcher.dispatch("q", reply, false, performance.now());
    expect(s.inFlight.taskIds()).toEqual(["q/t1"]);
    await s.settled();
    expect(s.calls.map((c) => c.what)).toEqual(["run", "record"]);
    expect(s.calls[1]!.args).toEqual([lane, "1-0", "q/t1", { attempt: 1, status: "COMPLETED", agent: "a" }, "t1"]);
    expect(s.errors).toEqual([]);
    expect(s.freed()).toBe(1);
  });

  it("records nothing for an attempt that lost its claim, and says so", async () => {
    const s = setup({ run: async () => undefined });
    s.dispatcher.dispatch("q", { ...at("run"), taskId: "q/t2", attempt: 3 } as unknown as StartReply, false, performance.now());
    await s.settled();
    expect(s.calls.map((c) => c.what)).toEqual(["run"]);
    expect(s.errors).toEqual([]);
    expect(s.lines.filter((l) => l.level === "warn").map((l) => l.fields)).toEqual([{ taskId: "q/t2", attempt: 3 }]);
  });

  it("does not run a task whose claim was answered after its lease may have lapsed, and says so", async () => {
    const s = setup();
    // The setup's lease check calls a lease given at a negative time lapsed.
    s.dispatcher.dispatch("q", { ...at("run"), taskId: "q/late", attempt: 2 } as unknown as StartReply, false, -1);
    expect(s.inFlight.size).toBe(0);
    expect(s.calls).toEqual([]);
    expect(s.lines).toEqual([
      {
        level: "warn",
        message: "claim answered too late to run: leaving the task to whoever takes it over",
        fields: { queue: "q", entryId: "1-0", taskId: "q/late" },
      },
    ]);
    // The lease counts from when the claim was sent: the run carries it.
    s.dispatcher.dispatch("q", { ...at("run"), entryId: "2-0", taskId: "q/on-time", attempt: 1 } as unknown as StartReply, false, 1234);
    expect(s.inFlight.get(lane, "2-0")?.leaseFrom).toBe(1234);
    await s.settled();
  });

  it("leaves a skipped entry alone: nothing runs, nothing is dead-lettered, no slot is taken", async () => {
    const s = setup();
    s.dispatcher.dispatch("q", { ...at("skip"), taskId: "q/t3", reason: "terminal", status: "COMPLETED" } as StartReply, true, performance.now());
    expect(s.inFlight.size).toBe(0);
    await s.settled();
    expect(s.calls).toEqual([]);
    expect(s.lines).toEqual([
      { level: "debug", message: "entry skipped", fields: { queue: "q", entryId: "1-0", taskId: "q/t3", reason: "terminal", reclaimed: true } },
    ]);
  });

  it("dead-letters a missing record and a malformed entry, each with its reason", async () => {
    const s = setup();
    s.dispatcher.dispatch("q", { ...at("missing"), taskId: "q/gone" } as StartReply, false, performance.now());
    // The task being dead-lettered counts as held, under its id.
    expect(s.inFlight.taskIds()).toEqual(["q/gone"]);
    await s.settled();
    s.dispatcher.dispatch("q", { ...at("malformed"), entryId: "4-0", fields: { junk: "1" } } as StartReply, false, performance.now());
    s.dispatcher.dispatch("q", { ...at("malformed"), entryId: "5-0", fields: null } as StartReply, false, performance.now());
    // Fields that parse, but the script found the entry unusable (its record key is not a hash).
    s.dispatcher.dispatch("q", { ...at("malformed"), entryId: "6-0", fields: { task: "ok" } } as StartReply, false, performance.now());
    // An entry with no task id is held under none.
    expect(s.inFlight.taskIds()).toEqual([]);
    await s.settled();
    expect(s.calls.map((c) => c.args)).toEqual([
      [lane, "1-0", "task record not found (expired or never written)", { task: "gone" }, "q/gone", undefined],
      [lane, "4-0", "malformed queue entry: task: Invalid input: expected string, received undefined", { junk: "1" }, undefined, undefined],
      [lane, "5-0", "entry has no fields", null, undefined, undefined],
      [lane, "6-0", "malformed queue entry", { task: "ok" }, undefined, undefined],
    ]);
    expect(s.errors).toEqual([]);
  });

  it("only reports a task past its delivery limit: the script that answered failed it and dead-lettered its entry, nothing is left to write", async () => {
    const s = setup();
    const reason = "delivery limit reached after 4 attempts; last error: [TIMEOUT] too slow";
    s.dispatcher.dispatch("q", { ...at("dead"), entryId: "2-0", taskId: "q/spent", attempts: 4, reason } as StartReply, false, performance.now());
    // No write, so nothing held.
    expect(s.inFlight.size).toBe(0);
    await s.settled();
    expect(s.calls).toEqual([{ what: "deadLettered", args: [lane, "2-0", reason, "q/spent"] }]);
    expect(s.errors).toEqual([]);
  });

  it("hands a failed attempt's error to onError and logs it, and frees the slot", async () => {
    const boom = new Error("boom");
    const s = setup({
      run: async () => {
        throw boom;
      },
    });
    s.dispatcher.dispatch("q", { ...at("run"), taskId: "q/t4", attempt: 1 } as unknown as StartReply, false, performance.now());
    await s.settled();
    expect(s.errors).toEqual([boom]);
    expect(s.lines.filter((l) => l.level === "error").map((l) => l.fields)).toEqual([{ queue: "q", entryId: "1-0", err: boom }]);
    expect(s.freed()).toBe(1);
    expect(s.inFlight.size).toBe(0);
  });

  it("hands a failed dead-lettering to onError and logs it", async () => {
    const boom = new Error("no dead letters today");
    const s = setup({
      deadLetter: async () => {
        throw boom;
      },
    });
    s.dispatcher.dispatch("q", { ...at("missing"), taskId: "q/t5" } as StartReply, false, performance.now());
    await s.settled();
    expect(s.errors).toEqual([boom]);
    expect(s.lines.filter((l) => l.level === "error").map((l) => l.fields)).toEqual([{ queue: "q", entryId: "1-0", err: boom }]);
  });

  it("takes out the task of a corrupt record, held under its id meanwhile", async () => {
    const s = setup();
    s.dispatcher.dispatch("q", { ...at("corrupt"), taskId: "q/bad", reason: "seq is not a number" } as StartReply, false, performance.now());
    expect(s.inFlight.taskIds()).toEqual(["q/bad"]);
    await s.settled();
    expect(s.calls).toEqual([{ what: "failCorrupt", args: [lane, "1-0", "q/bad", "seq is not a number"] }]);
    expect(s.errors).toEqual([]);
  });

  it("hands a failure to take out a corrupt record to onError and logs it", async () => {
    const boom = new Error("no dead letters today");
    const s = setup({
      failCorrupt: async () => {
        throw boom;
      },
    });
    s.dispatcher.dispatch("q", { ...at("corrupt"), taskId: "q/bad", reason: "seq is not a number" } as StartReply, false, performance.now());
    await s.settled();
    expect(s.errors).toEqual([boom]);
    expect(s.lines.filter((l) => l.level === "error")).toEqual([
      { level: "error", message: "could not dead-letter entry", fields: { queue: "q", entryId: "1-0", err: boom } },
    ]);
    expect(s.inFlight.size).toBe(0);
  });
});
