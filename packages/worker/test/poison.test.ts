import { CONSUMER_GROUP, ErrorCodes, FlotillaError, TaskFailedError } from "@flotilla/core";
import { scripted, waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";

const agent = scripted("fine").toJSON();
const payload = (p: unknown) => (typeof p === "string" ? p : JSON.stringify(p));

/** Bad queue entries: [name, fields, what the dead letter's reason must say]. */
const badEntries: Array<[string, string[], RegExp]> = [
  ["no task field", ["foo", "bar"], /malformed queue entry: task/],
  ["empty task id", ["task", ""], /malformed queue entry: task/],
  ["braces in the id", ["task", "a{b}c"], /malformed queue entry: task/],
  ["spaces in the id", ["task", "two words"], /malformed queue entry: task/],
  ["huge id (1 MB)", ["task", "x".repeat(1_000_000)], /malformed queue entry: task/],
  ["unknown extra field", ["task", "ok-id", "run", "rm -rf /"], /malformed queue entry/],
  ["id of a task that does not exist", ["task", "ghost-task"], /task record not found/],
];

/** JSON text of `levels` objects inside each other (JSON.stringify itself overflows the stack on such a value). */
const deepJson = (levels: number) => `${'{"a":'.repeat(levels)}1${"}".repeat(levels)}`;
const tooDeep = /INVALID_PAYLOAD.*nested deeper than 128 levels/;

/** Records whose payload or metadata no worker can run: [name, stored payload, field named in the reason]. */
const badPayloads: Array<[string, string, RegExp, Record<string, string>?]> = [
  ["payload not JSON", "{not json", /INVALID_PAYLOAD.*JSON/],
  ["payload a number", "42", /INVALID_PAYLOAD/],
  ["payload without an agent", payload({ input: "x" }), /INVALID_PAYLOAD.*agent/],
  ["agent without a model", payload({ agent: { ...agent, model: undefined }, input: "x" }), /INVALID_PAYLOAD.*agent\.model/],
  ["model without a provider", payload({ agent: { ...agent, model: "gpt" }, input: "x" }), /INVALID_PAYLOAD.*agent\.model/],
  ["unknown agent field", payload({ agent: { ...agent, code: "require('child_process')" }, input: "x" }), /INVALID_PAYLOAD.*agent/],
  ["tools not a list", payload({ agent: { ...agent, tools: "all" }, input: "x" }), /INVALID_PAYLOAD.*agent\.tools/],
  ["empty agent name", payload({ agent: { ...agent, name: "" }, input: "x" }), /INVALID_PAYLOAD.*agent\.name/],
  ["options not an object", payload({ agent: { ...agent, options: [1, 2] }, input: "x" }), /INVALID_PAYLOAD.*agent\.options/],
  ["no input", payload({ agent }), /INVALID_PAYLOAD.*input/],
  ["unknown payload field", payload({ agent, input: "x", eval: "1+1" }), /INVALID_PAYLOAD/],
  ["metadata not JSON", payload({ agent, input: "x" }), /INVALID_PAYLOAD.*metadata/, { metadata: "{oops" }],
  ["input nested 5,000 levels", `{"agent":${JSON.stringify(agent)},"input":${deepJson(5000)}}`, tooDeep],
  ["agent options nested 5,000 levels", `{"agent":${JSON.stringify({ ...agent, options: "@" }).replace('"@"', deepJson(5000))},"input":"x"}`, tooDeep],
  ["metadata nested 5,000 levels", payload({ agent, input: "x" }), tooDeep, { metadata: deepJson(5000) }],
  ["input nested 129 levels", `{"agent":${JSON.stringify(agent)},"input":${deepJson(129)}}`, tooDeep],
  // Past the worker's maxPayloadBytes (8 MiB): refused before it is parsed.
  ["payload of 9 MB", payload({ agent, input: "x".repeat(9_000_000) }), /PAYLOAD_TOO_LARGE.*this worker reads at most 8388608/],
  ["metadata of 9 MB", payload({ agent, input: "x" }), /PAYLOAD_TOO_LARGE/, { metadata: JSON.stringify({ pad: "x".repeat(9_000_000) }) }],
];

describe("poison messages", () => {
  const h = useFlotilla("poison");

  it(`dead-letters ${badEntries.length + badPayloads.length} kinds of bad entries and payloads with a reason, and keeps serving`, async () => {
    const w = await h.worker({ queues: ["poison"] });
    let crashed = 0;
    w.on("worker:error", () => crashed++);
    const stream = h.keys.queue("poison");
    await h.broker.ensureGroup("poison");
    const expected = new Map<string, RegExp>();
    for (const [, fields, reason] of badEntries) expected.set((await h.redis.xadd(stream, "*", ...fields)) as string, reason);
    for (const [i, [, stored, reason, overrides]] of badPayloads.entries()) {
      const name = await h.record(`poison/bad-payload-${i}`, { payload: stored, maxRetries: 3, ...overrides });
      expected.set(await h.broker.enqueue("poison", name), reason);
    }
    const good = await h.submit(scripted("fine"), "after all that", { queue: "poison" });
    expect((await h.until(good)).status).toBe("COMPLETED");

    const letters = await waitFor(
      async () => {
        const l = await h.broker.listDeadLetters("poison", { count: 100 });
        return l.length >= expected.size ? l : undefined;
      },
      { what: `${expected.size} dead letters` },
    );
    const unmatched = letters.filter((l) => !expected.get(l.entryId)?.test(l.reason)).map((l) => `${l.entryId}: ${l.reason}`);
    expect(unmatched).toEqual([]);
    expect(new Set(letters.map((l) => l.entryId))).toEqual(new Set(expected.keys()));
    // Bad payloads fail their task once, without retries: the same payload would fail again.
    for (let i = 0; i < badPayloads.length; i++) {
      expect(await h.redis.hmget(h.keys.task(`poison/bad-payload-${i}`), "status", "attempt", "retries")).toEqual(["FAILED", "1", null]);
    }
    expect(((await h.redis.xpending(stream, CONSUMER_GROUP)) as [number])[0]).toBe(0);
    expect(await h.redis.xlen(stream)).toBe(0);
    expect(crashed).toBe(0);
  });

  /** Ways a producer may spoil a task record: [what, how, what the dead letter's reason must say]. */
  const badRecords: Array<[string, (key: string) => Promise<unknown>, RegExp]> = [
    ["attempt not a number", (key) => h.redis.hset(key, "attempt", "abc"), /attempt is not a number/],
    ["createdAt not a number", (key) => h.redis.hset(key, "createdAt", "yesterday"), /createdAt is not a number/],
    ["seq not a number", (key) => h.redis.hset(key, "seq", "x"), /seq is not a number/],
    ["maxDeliveries not a number", (key) => h.redis.hset(key, "maxDeliveries", "lots"), /maxDeliveries is not a number/],
    ["deliveriesBase not a number", (key) => h.redis.hset(key, "deliveriesBase", "-3"), /deliveriesBase is not a number/],
    ["taskId missing", (key) => h.redis.hdel(key, "taskId"), /taskId is missing/],
    ["unknown status", (key) => h.redis.hset(key, "status", "ZOMBIE"), /status is unknown/],
    ["garbage log", (key) => h.redis.hset(key, "log", "<<garbage>>"), /log is not a list of events/],
    ["key not a hash", (key) => h.redis.multi().del(key).set(key, "x").exec(), /the key is not a hash/],
  ];

  it(`one worker serving ${badRecords.length} poisoned queues and 3 clean ones completes every good task; each bad one is dead-lettered and its waiter told`, async () => {
    const client = h.client();
    const queues = [...badRecords.map((_, i) => `rec-${i}`), "clean-a", "clean-b", "clean-c"];
    const good: string[] = [];
    const bad = new Map<string, RegExp>();
    for (const [i, queue] of queues.entries()) {
      // Two good tasks, the bad one, two more good ones: one claim batch of five.
      for (const input of ["a", "b"]) good.push(await h.submit(scripted("fine"), input, { queue }));
      if (i < badRecords.length) {
        const [, spoil, reason] = badRecords[i]!;
        const name = await h.record(`${queue}/bad`, { agent: "x", payload: payload({ agent, input: "x" }) });
        await spoil(h.keys.task(`${queue}/bad`));
        await h.broker.enqueue(queue, name);
        bad.set(`${queue}/bad`, reason);
      }
      for (const input of ["c", "d"]) good.push(await h.submit(scripted("fine"), input, { queue }));
    }
    // Every waiter, bad ones included, is waiting before the worker starts.
    const goodResults = good.map((id) => client.handle(id).result());
    const badResults = [...bad.keys()].map((id) =>
      client
        .handle(id)
        .result()
        .then(
          () => "resolved",
          (err: unknown) => (err instanceof TaskFailedError ? err.taskError.code : err instanceof FlotillaError ? err.code : String(err)),
        ),
    );
    const w = await h.worker({ queues, concurrency: 5 });
    let errors = 0;
    w.on("worker:error", () => errors++);

    await expect(Promise.all(goodResults)).resolves.toHaveLength(good.length);
    expect(await Promise.all(badResults)).toEqual([...bad.keys()].map(() => ErrorCodes.CORRUPT_RECORD));
    for (const [taskId, reason] of bad) {
      const queue = taskId.split("/")[0]!;
      const letters = await waitFor(async () => {
        const l = await h.broker.listDeadLetters(queue);
        return l.length > 0 ? l : undefined;
      });
      expect(letters.map((l) => l.taskId)).toEqual([taskId]);
      expect(letters[0]!.reason).toMatch(/^corrupt task record: /);
      expect(letters[0]!.reason).toMatch(reason);
    }
    for (const queue of queues) {
      expect(((await h.redis.xpending(h.keys.lane(queue, "normal"), CONSUMER_GROUP)) as [number])[0]).toBe(0);
    }
    expect(errors).toBe(0);
  });
});
