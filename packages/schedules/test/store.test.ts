import { CorruptRecordError, ValidationError } from "@flotilla/core";
import { describe, expect, it } from "vitest";
import { template, useSchedules } from "./helpers.ts";

const t = useSchedules("schedules-store");

/** The ValidationError `run` throws, for its field and message. */
async function rejection(run: () => Promise<unknown>): Promise<ValidationError> {
  const err = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ValidationError);
  return err as ValidationError;
}

describe("ScheduleStore", () => {
  it("creates a schedule and reads it back with its defaults, its template's queue and agent and its first tick", async () => {
    const before = await t.now();
    const result = await t.schedules.create({ id: "nightly", cron: "0 9 * * *", timezone: "Europe/Paris" }, template("reports"));
    const after = await t.now();
    expect(result.created).toBe(true);
    const info = await t.schedules.get("nightly");
    expect(info).toMatchObject({
      id: "nightly",
      spec: { id: "nightly", cron: "0 9 * * *", timezone: "Europe/Paris", overlap: "skip", catchupWindowMs: 60_000, paused: false },
      queue: "reports",
      agent: "echo",
      nextTickAt: result.nextTickAt,
      lastTickAt: undefined,
      lastTaskId: undefined,
      fired: 0,
      skipped: 0,
      missed: 0,
      paused: false,
    });
    expect(info!.createdAt).toBeGreaterThanOrEqual(before);
    expect(info!.createdAt).toBeLessThanOrEqual(after);
    // The next 9:00 in Paris after now, on the due set at that score.
    const next = info!.nextTickAt!;
    expect(next).toBeGreaterThan(info!.createdAt);
    expect(next - info!.createdAt).toBeLessThanOrEqual(86_400_000 + 3_600_000);
    expect(new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Paris", timeStyle: "short" }).format(next)).toBe("09:00");
    expect(Number(await t.redis.zscore(t.keys.schedulesDue(), "nightly"))).toBe(next);
  });

  it("anchors an interval at its creation time", async () => {
    await t.schedules.create({ id: "beat", every: 5000 }, template());
    const info = (await t.schedules.get("beat"))!;
    expect(info.nextTickAt).toBe(info.createdAt + 5000);
  });

  it("create is an upsert: the definition and template change, the counters, last fired tick and anchor stay", async () => {
    await t.schedules.create({ id: "beat", every: 5000 }, template("q1"));
    const first = (await t.schedules.get("beat"))!;
    // As if it had fired a while.
    await t.redis.hset(t.keys.schedule("beat"), { fired: 7, skipped: 2, missed: 1, lastTickAt: first.createdAt + 5000, lastTaskId: "q1/schedule:beat:1" });
    const replaced = await t.schedules.create({ id: "beat", every: 60_000, overlap: "allow" }, template("q2"));
    expect(replaced.created).toBe(false);
    const info = (await t.schedules.get("beat"))!;
    expect(info).toMatchObject({ queue: "q2", spec: { every: 60_000, overlap: "allow" }, fired: 7, skipped: 2, missed: 1, lastTaskId: "q1/schedule:beat:1" });
    expect(info.createdAt).toBe(first.createdAt);
    expect(info.updatedAt).toBeGreaterThanOrEqual(first.updatedAt);
    // Still on its anchor's rhythm, at the new interval.
    expect((info.nextTickAt! - info.createdAt) % 60_000).toBe(0);
    expect(Number(await t.redis.zscore(t.keys.schedulesDue(), "beat"))).toBe(info.nextTickAt);
  });

  it("lists every schedule, paused ones too, the next to fire first", async () => {
    await t.schedules.create({ id: "later", every: 60_000 }, template());
    await t.schedules.create({ id: "sooner", every: 2000 }, template());
    await t.schedules.create({ id: "held", every: 1000, paused: true }, template());
    const list = await t.schedules.list();
    expect(list.map((s) => [s.id, s.paused])).toEqual([
      ["sooner", false],
      ["later", false],
      ["held", true],
    ]);
    expect(list[2]!.nextTickAt).toBeUndefined();
  });

  it("pauses (out of the due order, still listed) and resumes at the next tick after now, with no burst for the paused time", async () => {
    await t.schedules.create({ id: "beat", every: 1000 }, template());
    expect(await t.schedules.pause("beat")).toBe(true);
    expect(await t.schedules.pause("beat")).toBe(true);
    expect(await t.schedules.get("beat")).toMatchObject({ paused: true, nextTickAt: undefined, spec: { paused: true } });
    expect(await t.redis.zscore(t.keys.schedulesDue(), "beat")).toBe("inf");
    // Paused with its next tick far in the past: resuming starts from now.
    await t.redis.hset(t.keys.schedule("beat"), "nextTickAt", 1000);
    const now = await t.now();
    expect(await t.schedules.resume("beat")).toBe(true);
    const info = (await t.schedules.get("beat"))!;
    expect(info.paused).toBe(false);
    expect(info.nextTickAt).toBeGreaterThan(now);
    expect(info.nextTickAt! - now).toBeLessThanOrEqual(1000 + 200);
    expect((info.nextTickAt! - info.createdAt) % 1000).toBe(0);
    expect(Number(await t.redis.zscore(t.keys.schedulesDue(), "beat"))).toBe(info.nextTickAt);
    // Resuming a running schedule leaves it as it is.
    await t.redis.hset(t.keys.schedule("beat"), "nextTickAt", info.nextTickAt! + 5000);
    expect(await t.schedules.resume("beat")).toBe(true);
    expect((await t.schedules.get("beat"))!.nextTickAt).toBe(info.nextTickAt! + 5000);
  });

  it("deletes a schedule, hash and due entry", async () => {
    await t.schedules.create({ id: "gone", every: 1000 }, template());
    expect(await t.schedules.delete("gone")).toBe(true);
    expect(await t.schedules.get("gone")).toBeUndefined();
    expect(await t.redis.exists(t.keys.schedule("gone"))).toBe(0);
    expect(await t.redis.zscore(t.keys.schedulesDue(), "gone")).toBeNull();
    expect(await t.schedules.list()).toEqual([]);
  });

  it("an unknown id: get is undefined; pause, resume and delete are false", async () => {
    expect(await t.schedules.get("nope")).toBeUndefined();
    expect(await t.schedules.pause("nope")).toBe(false);
    expect(await t.schedules.resume("nope")).toBe(false);
    expect(await t.schedules.delete("nope")).toBe(false);
    // Pausing an unknown id wrote nothing.
    expect(await t.redis.exists(t.keys.schedule("nope"), t.keys.schedulesDue())).toBe(0);
  });

  it("refuses a bad spec with a ValidationError naming the field", async () => {
    const field = async (spec: Record<string, unknown>) => (await rejection(() => t.schedules.create(spec as never, template()))).field;
    expect(await field({ id: "a", cron: "0 9 * *" })).toBe("cron");
    expect(await field({ id: "a", cron: "99 * * * *" })).toBe("cron");
    expect(await field({ id: "a", cron: "0 0 30 2 *" })).toBe("cron");
    expect(await field({ id: "a", cron: "0 9 * * *", timezone: "Mars/Olympus" })).toBe("timezone");
    expect(await field({ id: "a", every: 5000, timezone: "Nowhere" })).toBe("timezone");
    expect(await field({ id: "a" })).toBe("cron");
    expect(await field({ id: "a", cron: "0 9 * * *", every: 5000 })).toBe("every");
    expect(await field({ id: "a", every: 999 })).toBe("every");
    expect(await field({ id: "a", every: 1500.5 })).toBe("every");
    expect(await field({ id: "a b", every: 5000 })).toBe("id");
    expect(await field({ id: "x".repeat(101), every: 5000 })).toBe("id");
    expect(await field({ id: "a", every: 5000, overlap: "queue" })).toBe("overlap");
    expect(await field({ id: "a", every: 5000, catchupWindowMs: 10 })).toBe("catchupWindowMs");
    expect((await rejection(() => t.schedules.create({ id: "a", every: 5000, extra: 1 } as never, template()))).message).toContain("extra: unknown key");
    const message = (await rejection(() => t.schedules.create({ id: "a", cron: "0 9 * * *", timezone: "Mars/Olympus" }, template()))).message;
    expect(message).toContain("Mars/Olympus");
    // Nothing was written by any of them.
    expect(await t.schedules.list()).toEqual([]);
  });

  it("refuses a bad template with a ValidationError naming the field", async () => {
    const field = async (over: Record<string, unknown>) =>
      (await rejection(() => t.schedules.create({ id: "a", every: 5000 }, { ...template(), ...over } as never))).field;
    expect(await field({ queue: "has space" })).toBe("queue");
    expect(await field({ payload: "{not json" })).toBe("payload");
    expect(await field({ maxRetries: -1 })).toBe("maxRetries");
    expect((await rejection(() => t.schedules.create({ id: "a", every: 5000 }, { ...template(), taskId: "q/x" } as never))).message).toContain(
      "taskId: unknown key",
    );
  });

  it("a schedule written by something else is a CorruptRecordError on get, and create replaces it", async () => {
    await t.redis.set(t.keys.schedule("odd"), "not a hash");
    await expect(t.schedules.get("odd")).rejects.toBeInstanceOf(CorruptRecordError);
    await expect(t.schedules.pause("odd")).rejects.toBeInstanceOf(CorruptRecordError);
    await t.redis.del(t.keys.schedule("odd"));
    await t.redis.hset(t.keys.schedule("odd"), { id: "odd", spec: "{broken", rev: "3" });
    await expect(t.schedules.get("odd")).rejects.toThrow(/corrupt schedule odd: spec/);
    expect((await t.schedules.create({ id: "odd", every: 5000 }, template())).created).toBe(false);
    expect(await t.schedules.get("odd")).toMatchObject({ id: "odd", spec: { every: 5000 } });
  });
});
