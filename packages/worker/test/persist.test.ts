import { ConnectionError, ErrorCodes, RedisFullError } from "@flotilla/core";
import { recordingLogger } from "@flotilla/testing";
import { describe, expect, it } from "vitest";
import { persist, worthResending } from "../src/persist.ts";

/** Redis's own OOM reply, as ioredis gives it. */
const oom = () => Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), { name: "ReplyError" });

describe("persist: an outcome is sent again until it lands", () => {
  it("resends a write Redis refused for being full or out of reach, logging once and telling each refusal", async () => {
    const { log: logger, lines } = recordingLogger();
    const refusals = [oom(), new ConnectionError("Redis at x is unreachable"), new RedisFullError("script settle")];
    const seen: unknown[] = [];
    let calls = 0;
    const result = await persist(
      async () => {
        calls++;
        const err = refusals.shift();
        if (err) throw err;
        return "landed";
      },
      { log: logger, what: "outcome", fields: { taskId: "q/t" }, observe: (err) => seen.push(err) },
    );
    expect(result).toBe("landed");
    expect(calls).toBe(4);
    expect(seen).toHaveLength(3);
    expect(lines.filter((l) => l.message.includes("outcome not written"))).toMatchObject([{ level: "warn", fields: { taskId: "q/t" } }]);
  });

  it("throws any other error at once", async () => {
    const { log: logger } = recordingLogger();
    let calls = 0;
    const err = new Error("ERR wrong number of arguments");
    await expect(
      persist(
        async () => {
          calls++;
          throw err;
        },
        { log: logger, what: "outcome", fields: {} },
      ),
    ).rejects.toBe(err);
    expect(calls).toBe(1);
  });

  it("gives up when told to (the drain deadline), throwing the last refusal", async () => {
    const { log: logger } = recordingLogger();
    const giveUp = new AbortController();
    let calls = 0;
    const done = persist(
      async () => {
        calls++;
        if (calls === 2) giveUp.abort();
        throw oom();
      },
      { log: logger, what: "outcome", fields: {}, giveUp: giveUp.signal },
    );
    await expect(done).rejects.toThrow(/^OOM/);
    expect(calls).toBe(2);
  });

  it("worthResending: connection failures and a full Redis, typed or raw; nothing else", () => {
    expect(worthResending(oom())).toBe(true);
    expect(worthResending(new RedisFullError("x"))).toBe(true);
    expect(worthResending(new ConnectionError("x"))).toBe(true);
    expect(worthResending(Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" }))).toBe(true);
    expect(worthResending(new Error("NOGROUP No such key"))).toBe(false);
    expect(worthResending({ code: ErrorCodes.REDIS_FULL })).toBe(false);
  });
});
