import { type Broker, isMissingGroup, laneKeys } from "@flotilla/broker";
import { TestBroker } from "@flotilla/broker/testing";
import { createKeys, DEFAULT_RETENTION, type Logger, silentLogger } from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis } from "@flotilla/core/redis";
import type { StartReply } from "@flotilla/store";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, recordingLogger, redisUrl, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { ClaimScheduler, type SchedulerOptions } from "../src/claim-scheduler.ts";
import { InFlight } from "../src/in-flight.ts";

// The claim loop on its own: real Redis, real store and broker; what it claims goes to a list.
const redis = testRedis();
const prefix = testPrefix("claim-scheduler");
const keys = createKeys(prefix);
const store = new TestTaskStore(redis, keys, DEFAULT_RETENTION);
const broker = new TestBroker(redis, keys);
const opened: OwnedRedis[] = [];
const schedulers: ClaimScheduler[] = [];
afterEach(async () => {
  for (const s of schedulers.splice(0)) await s.stop();
  for (const c of opened.splice(0)) await closeRedis(c);
});
afterAll(async () => {
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const task = (queue: string, name: string, over: { delayMs?: number } = {}) => newTask(`${queue}/${name}`, over);

interface Claimed {
  queue: string;
  reply: StartReply;
  reclaimed: boolean;
}

/** A started scheduler whose dispatched entries are kept (and held in flight until `finish`). */
async function scheduler(options: Partial<SchedulerOptions> & { queues: string[] }, start = true, using: Broker = broker, log: Logger = silentLogger) {
  for (const q of options.queues) await broker.ensureGroup(q);
  const blocking = openRedis(redisUrl(), "blocking");
  const command = openRedis(redisUrl(), "command");
  opened.push(blocking, command);
  const claimed: Claimed[] = [];
  const errors: unknown[] = [];
  const readiness: string[] = [];
  const finishers = new Map<string, () => void>();
  let settling = 0;
  const inFlight = new InFlight(() => s.wake());
  // Whether Redis can be reached, as the worker's RedisLink says: up unless the test says otherwise.
  let linkUp = true;
  let linkBack: (() => void) | undefined;
  const link = {
    get up() {
      return linkUp;
    },
    whenUp: () => (linkUp ? Promise.resolve() : new Promise<void>((resolve) => (linkBack = resolve))),
  };
  const setLink = (up: boolean) => {
    linkUp = up;
    if (up) linkBack?.();
  };
  const s: ClaimScheduler = new ClaimScheduler(
    { workerId: "w1", concurrency: 2, blockMs: 200, leaseMs: 60_000, promoteIntervalMs: 60_000, fairnessEvery: 0, ...options },
    {
      store,
      broker: using,
      blocking,
      command,
      inFlight,
      settling: () => settling,
      dispatch: (queue, reply, reclaimed, leaseFrom) => {
        claimed.push({ queue, reply, reclaimed });
        if (reply.kind !== "run") return;
        inFlight.track(
          { queue, priority: reply.priority },
          reply.entryId,
          reply.taskId,
          leaseFrom,
          () => new Promise<void>((resolve) => finishers.set(reply.taskId, resolve)),
          () => {},
        );
      },
      log,
      onError: (err) => errors.push(err),
      readiness: {
        raise: (reason) => void readiness.push(`raise ${reason}`),
        clear: (reason) => void readiness.push(`clear ${reason}`),
      },
      link,
    },
  );
  if (start) {
    schedulers.push(s);
    await s.start();
  }
  return {
    s,
    setLink,
    blocking,
    claimed,
    errors,
    readiness,
    inFlight,
    setSettling: (n: number) => {
      settling = n;
    },
    finish: (taskId: string) => finishers.get(taskId)?.(),
    ids: () => claimed.map((c) => (c.reply.kind === "run" ? c.reply.taskId : c.reply.kind)),
  };
}

describe("ClaimScheduler", () => {
  it("claims no more than its free slots, and claims again as a slot frees", async () => {
    await store.createMany("slots", [task("slots", "a"), task("slots", "b"), task("slots", "c")]);
    const h = await scheduler({ queues: ["slots"] });
    await waitFor(async () => h.claimed.length === 2, { what: "two claims" });
    expect(h.s.freeSlots()).toBe(0);
    await new Promise((r) => setTimeout(r, 300)); // a block round passes: still two
    expect(h.claimed).toHaveLength(2);
    h.finish(h.ids()[0]!);
    await waitFor(async () => h.claimed.length === 3, { what: "the third claim" });
    expect(h.ids().sort()).toEqual(["slots/a", "slots/b", "slots/c"]);
    expect(h.claimed.every((c) => !c.reclaimed)).toBe(true);
  });

  it("counts a run whose outcome went to the settler as a free slot", async () => {
    const h = await scheduler({ queues: ["free"], concurrency: 1 });
    await store.createMany("free", [task("free", "a")]);
    await waitFor(async () => h.claimed.length === 1, { what: "a claim" });
    expect(h.s.freeSlots()).toBe(0);
    h.setSettling(1);
    expect(h.s.freeSlots()).toBe(1);
  });

  it("blocks for new work and takes it as soon as it comes", async () => {
    const h = await scheduler({ queues: ["block"], blockMs: 30_000 });
    await new Promise((r) => setTimeout(r, 100));
    await store.createMany("block", [task("block", "late")]);
    await waitFor(async () => h.claimed.length === 1, { what: "the late task", timeoutMs: 5_000 });
  });

  it("stops promptly though blocked on a long read", async () => {
    const h = await scheduler({ queues: ["stop"], blockMs: 60_000 });
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await h.s.stop();
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(h.s.claiming).toBe(false);
  });

  it("promotes a delayed task when it falls due, not at the next promotion interval", async () => {
    await broker.ensureGroup("due");
    await store.createMany("due", [task("due", "soon", { delayMs: 300 })]);
    // Its first promotion finds the task due in 300 ms: that, not the interval, is when it looks again.
    const g = await scheduler({ queues: ["due"], blockMs: 60_000, promoteIntervalMs: 60_000 });
    expect(g.claimed).toEqual([]);
    await waitFor(async () => g.claimed.length === 1, { what: "the due task", timeoutMs: 10_000 });
    expect(g.ids()).toEqual(["due/soon"]);
  });

  it("reclaims an entry whose holder's lease lapsed, as reclaimed, but never its own", async () => {
    await broker.ensureGroup("lapsed");
    await store.createMany("lapsed", [task("lapsed", "x")]);
    await broker.claim(redis, "dead-worker", ["lapsed"], 1, 100);
    await new Promise((r) => setTimeout(r, 400));
    const h = await scheduler({ queues: ["lapsed"], leaseMs: 300 });
    await waitFor(async () => h.claimed.length === 1, { what: "the reclaim" });
    expect(h.claimed[0]).toMatchObject({ queue: "lapsed", reclaimed: true, reply: { kind: "run", taskId: "lapsed/x" } });
    // Held here (in flight) past the lease: idle, but ours; it is not started again.
    await new Promise((r) => setTimeout(r, 1000));
    expect(h.claimed).toHaveLength(1);
  });

  it("claims across queues within one budget of slots", async () => {
    await store.createMany("qa", [task("qa", "1"), task("qa", "2")]);
    await store.createMany("qb", [task("qb", "1"), task("qb", "2")]);
    const h = await scheduler({ queues: ["qa", "qb"], concurrency: 3 });
    await waitFor(async () => h.claimed.length === 3, { what: "three claims" });
    await new Promise((r) => setTimeout(r, 300));
    expect(h.claimed).toHaveLength(3);
    expect(h.ids()).toEqual(["qa/1", "qa/2", "qb/1"]);
  });

  it("hands a malformed entry to dispatch for dead-lettering, from a blocking read too", async () => {
    const h = await scheduler({ queues: ["junk"], blockMs: 30_000 });
    await new Promise((r) => setTimeout(r, 100));
    await redis.xadd(keys.lane("junk", "normal"), "*", "nonsense", "1");
    await waitFor(async () => h.claimed.length === 1, { what: "the junk entry" });
    expect(h.claimed[0]).toMatchObject({ queue: "junk", reclaimed: false, reply: { kind: "malformed", fields: { nonsense: "1" } } });
  });

  it("lets a settle call claim the slots its outcomes free, for a single-queue worker, holding them until it is back", async () => {
    await store.createMany("one", [task("one", "a"), task("one", "b"), task("one", "c")]);
    const h = await scheduler({ queues: ["one"], concurrency: 2 });
    await waitFor(async () => h.claimed.length === 2, { what: "two claims" });
    expect(h.s.settleClaim("one")).toBeUndefined(); // no slot free
    h.setSettling(1); // one run's outcome is with the settler: its slot is free
    expect(h.s.settleClaim("one")).toEqual({ count: 1, order: ["high", "normal", "low"] });
    expect(h.s.freeSlots()).toBe(0); // promised to that settle call
    h.setSettling(0);
    // The settle call comes back with the task it claimed and started.
    const replies = await store.claim("one", "w1", 1);
    h.s.settleStarted("one", replies, 1, performance.now());
    expect(h.s.freeSlots()).toBe(-1); // 2 slots, 3 held, nothing reserved any more
    expect(h.ids().sort()).toEqual(["one/a", "one/b", "one/c"]);
    expect(h.claimed.map((c) => c.reclaimed)).toEqual([false, false, false]);
  });

  it("makes every queue's groups again when a claim meets NOGROUP, claims what waits, and is not ready until a claim works", async () => {
    const h = await scheduler({ queues: ["lost-a", "lost-b"], blockMs: 30_000 });
    await new Promise((r) => setTimeout(r, 100)); // blocked on both queues
    // Redis lost its data; then a task comes back through a producer that makes no group.
    await redis.del(...laneKeys(keys, "lost-a"), ...laneKeys(keys, "lost-b"), keys.queues());
    await store.writeRaw("lost-b/x");
    await broker.enqueue("lost-b", "x");
    await waitFor(async () => h.ids().includes("lost-b/x"), { what: "the task after the groups were made again", timeoutMs: 10_000 });
    expect(h.errors.some(isMissingGroup)).toBe(true);
    const raised = h.readiness.indexOf("raise claiming");
    expect(raised).toBeGreaterThanOrEqual(0);
    expect(h.readiness.lastIndexOf("clear claiming")).toBeGreaterThan(raised);
    for (const lane of [...laneKeys(keys, "lost-a"), ...laneKeys(keys, "lost-b")]) {
      expect(((await redis.xinfo("GROUPS", lane)) as unknown[][]).map((g) => g[1])).toEqual(["flotilla"]);
    }
    expect((await redis.smembers(keys.queues())).sort()).toEqual(["lost-a", "lost-b"]);
  });

  it("makes the groups once per queue per failed claim, and backs off while NOGROUP persists", async () => {
    const remakes: string[] = [];
    // A broker whose groups never come back (as if Redis kept refusing to make them).
    const stuck = new (class extends TestBroker {
      override async ensureGroup(queue: string, options: { again?: boolean } = {}): Promise<void> {
        if (options.again) remakes.push(queue);
        else await super.ensureGroup(queue);
      }
    })(redis, keys);
    const h = await scheduler({ queues: ["stuck-a", "stuck-b"] }, true, stuck);
    await redis.del(...laneKeys(keys, "stuck-a"), ...laneKeys(keys, "stuck-b"));
    await new Promise((r) => setTimeout(r, 1500));
    const failures = h.errors.filter(isMissingGroup).length;
    // One make per queue per NOGROUP; the second try comes at once, then 400, 800, 1600 ms… (not a busy loop).
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(failures).toBeLessThanOrEqual(8);
    expect(remakes.length).toBe(2 * failures);
    expect(remakes.filter((q) => q === "stuck-a").length).toBe(failures);
    expect(h.readiness.at(-1)).toBe("raise claiming");
  });

  it("never lets a settle call claim for a worker of several queues, a stopping one, or when reclaiming is due", async () => {
    const m = await scheduler({ queues: ["m1", "m2"], concurrency: 4 });
    expect(m.s.settleClaim("m1")).toBeUndefined();
    // Not started: its first reclaim scan is due now.
    const due = await scheduler({ queues: ["m3"], concurrency: 4 }, false);
    expect(due.s.freeSlots()).toBe(4);
    expect(due.s.settleClaim("m3")).toBeUndefined();
    const g = await scheduler({ queues: ["m4"], concurrency: 4 });
    await g.s.stop();
    expect(g.s.settleClaim("m4")).toBeUndefined();
  });

  it("is not claiming before it starts, and after it stopped leaves no timer behind", async () => {
    const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    const before = refTimers();
    // Five lives: a timer left behind by each would show as five more (less the odd timer of an
    // earlier test that ends meanwhile).
    for (let i = 0; i < 5; i++) {
      const h = await scheduler({ queues: ["idle"], blockMs: 60_000 }, false);
      expect(h.s.claiming).toBe(false);
      await h.s.start();
      expect(h.s.claiming).toBe(true);
      await new Promise((r) => setTimeout(r, 100));
      await h.s.stop();
      expect(h.s.claiming).toBe(false);
    }
    expect(refTimers()).toBeLessThan(before + 2);
  });

  it("stops promptly after its blocking connection reconnected (it unblocks the new connection)", async () => {
    const h = await scheduler({ queues: ["reconnect"], blockMs: 60_000 }, false);
    const firstId = String(await h.blocking.redis.client("ID"));
    await h.s.start();
    schedulers.push(h.s);
    await new Promise((r) => setTimeout(r, 100));
    await redis.client("KILL", "ID", firstId);
    await waitFor(async () => h.blocking.redis.status !== "ready", { what: "the blocking connection lost" });
    await waitFor(async () => h.blocking.redis.status === "ready", { what: "the blocking connection back" });
    await new Promise((r) => setTimeout(r, 300)); // blocked again, on the new connection
    const started = Date.now();
    await h.s.stop();
    expect(Date.now() - started).toBeLessThan(10_000);
  }, 30_000);

  it("never claims past its slots: a reclaim takes the slot a new entry would", async () => {
    await broker.ensureGroup("reclaim-slot");
    await store.createMany("reclaim-slot", [task("reclaim-slot", "old")]);
    await broker.claim(redis, "dead-worker", ["reclaim-slot"], 1, 100);
    await store.createMany("reclaim-slot", [task("reclaim-slot", "new")]);
    await new Promise((r) => setTimeout(r, 400));
    const h = await scheduler({ queues: ["reclaim-slot"], concurrency: 1, leaseMs: 300 });
    await waitFor(async () => h.claimed.length === 1, { what: "the reclaim" });
    await new Promise((r) => setTimeout(r, 300));
    expect(h.ids()).toEqual(["reclaim-slot/old"]);
    expect(h.claimed[0]!.reclaimed).toBe(true);
  });

  it("stops at its slots across queues: a full first queue leaves the next one alone", async () => {
    await store.createMany("full-a", [task("full-a", "1"), task("full-a", "2")]);
    await store.createMany("full-b", [task("full-b", "1")]);
    const h = await scheduler({ queues: ["full-a", "full-b"], concurrency: 2 });
    await waitFor(async () => h.claimed.length === 2, { what: "two claims" });
    await new Promise((r) => setTimeout(r, 300));
    expect(h.ids()).toEqual(["full-a/1", "full-a/2"]);
  });

  it("reclaims past its own idle entries: each scan of a lane goes on where the last one stopped", async () => {
    // Eleven entries this worker holds (in flight, idle: nothing renews them here), then a dead
    // worker's. With one slot free a scan claims one entry among at most ten it looks at; scans that
    // always began at the start of the lane would keep finding this worker's own entries.
    await broker.ensureGroup("scan");
    await store.createMany(
      "scan",
      Array.from({ length: 11 }, (_, i) => task("scan", `mine-${String(i).padStart(2, "0")}`)),
    );
    await store.createMany("scan", [task("scan", "orphan")]);
    const h = await scheduler({ queues: ["scan"], concurrency: 12, leaseMs: 300 }, false);
    const mine = await broker.claim(redis, "w1", ["scan"], 11, 100);
    for (const e of mine)
      h.inFlight.track(
        e,
        e.entryId,
        `scan/${e.fields!.task}`,
        performance.now(),
        () => new Promise<void>(() => {}),
        () => {},
      );
    await broker.claim(redis, "dead-worker", ["scan"], 1, 100);
    await new Promise((r) => setTimeout(r, 400));
    await h.s.start();
    schedulers.push(h.s);
    await waitFor(async () => h.claimed.length === 1, { what: "the orphan reclaimed", timeoutMs: 10_000 });
    expect(h.claimed[0]).toMatchObject({ reclaimed: true, reply: { taskId: "scan/orphan" } });
  });

  it("logs each entry it reclaims", async () => {
    const { log, lines } = recordingLogger();
    await broker.ensureGroup("logged");
    await store.createMany("logged", [task("logged", "x")]);
    const [entry] = await broker.claim(redis, "dead-worker", ["logged"], 1, 100);
    await new Promise((r) => setTimeout(r, 400));
    const h = await scheduler({ queues: ["logged"], leaseMs: 300 }, true, broker, log);
    await waitFor(async () => h.claimed.length === 1, { what: "the reclaim" });
    expect(lines.filter((l) => l.level === "info").map((l) => l.fields)).toEqual([{ queue: "logged", priority: "normal", entryId: entry!.entryId, task: "x" }]);
  });

  it("promotes on time while every slot is busy", async () => {
    await broker.ensureGroup("busy");
    await store.createMany("busy", [task("busy", "running"), task("busy", "later", { delayMs: 500 })]);
    // Its first promotion learns when "later" falls due; its one slot is taken meanwhile.
    const h = await scheduler({ queues: ["busy"], concurrency: 1, promoteIntervalMs: 60_000 });
    await waitFor(async () => h.claimed.length === 1, { what: "the running task" });
    expect((await broker.depth("busy")).delayed).toBe(1);
    await waitFor(async () => (await broker.depth("busy")).delayed === 0, { what: "the promotion while full", timeoutMs: 10_000 });
    expect((await broker.depth("busy")).waiting).toBe(1);
    expect(h.claimed).toHaveLength(1);
  });

  it("goes on claiming from its other queues when one queue's claims and scans fail", async () => {
    // The broken queue's lanes are keys of the wrong type (written by something else): every read
    // of them fails, the claim and the reclaim scan alike, with WRONGTYPE rather than NOGROUP.
    await broker.ensureGroup("broken");
    for (const priority of ["high", "normal", "low"] as const) {
      await redis.del(keys.lane("broken", priority));
      await redis.set(keys.lane("broken", priority), "not a stream");
    }
    await broker.ensureGroup("sound");
    await store.createMany("sound", [task("sound", "lapsed")]);
    await broker.claim(redis, "dead-worker", ["sound"], 1, 100);
    await store.createMany("sound", [task("sound", "new")]);
    await new Promise((r) => setTimeout(r, 400));
    const h = await scheduler({ queues: ["broken", "sound"], concurrency: 4, leaseMs: 300 });
    await waitFor(async () => h.claimed.length === 2, { what: "the sound queue's tasks, new and lapsed" });
    expect(h.claimed.map((c) => [c.reply.kind === "run" && c.reply.taskId, c.reclaimed]).sort()).toEqual([
      ["sound/lapsed", true],
      ["sound/new", false],
    ]);
    expect(h.errors.length).toBeGreaterThan(0);
    expect(String(h.errors[0])).toMatch(/WRONGTYPE/);
  });

  it("goes on claiming when a promotion fails, and says why", async () => {
    const { log, lines } = recordingLogger();
    let promotions = 0;
    const flaky = new (class extends TestBroker {
      override async promote(queue: string, now?: number, max?: number) {
        if (++promotions === 1) throw new Error("promotion refused");
        return super.promote(queue, now, max);
      }
    })(redis, keys);
    await store.createMany("flaky", [task("flaky", "a")]);
    const h = await scheduler({ queues: ["flaky"], promoteIntervalMs: 60_000 }, true, flaky, log);
    await waitFor(async () => h.claimed.length === 1, { what: "a claim after the failed promotion" });
    expect(lines.filter((l) => l.level === "warn").map((l) => l.fields)).toEqual([{ err: expect.objectContaining({ message: "promotion refused" }) }]);
    // The next promotion waits for the interval, not the next loop turn.
    await new Promise((r) => setTimeout(r, 300));
    expect(promotions).toBe(1);
  });

  it("claims again as soon as a settle call hands back the slots it held", async () => {
    await store.createMany("handback", [task("handback", "a")]);
    const h = await scheduler({ queues: ["handback"], concurrency: 1, leaseMs: 600_000, promoteIntervalMs: 600_000 });
    await waitFor(async () => h.claimed.length === 1, { what: "the first claim" });
    h.setSettling(1);
    expect(h.s.settleClaim("handback")).toEqual({ count: 1, order: expect.any(Array) });
    h.setSettling(0);
    h.finish("handback/a");
    await store.createMany("handback", [task("handback", "b")]);
    await new Promise((r) => setTimeout(r, 200));
    // The settle call claimed nothing: its slot is free again, and the loop must know at once.
    h.s.settleStarted("handback", [], 1, performance.now());
    await waitFor(async () => h.claimed.length === 2, { what: "the claim after the hand-back", timeoutMs: 5_000 });
  });

  it("promotes once per interval however many claims it makes", async () => {
    let promotions = 0;
    const counting = new (class extends TestBroker {
      override async promote(queue: string, now?: number, max?: number) {
        promotions++;
        return super.promote(queue, now, max);
      }
    })(redis, keys);
    await store.createMany(
      "many",
      Array.from({ length: 6 }, (_, i) => task("many", String(i))),
    );
    const h = await scheduler({ queues: ["many"], concurrency: 1, promoteIntervalMs: 60_000 }, true, counting);
    for (let i = 0; i < 6; i++) {
      await waitFor(async () => h.claimed.length === i + 1, { what: `claim ${i + 1}` });
      h.finish(h.ids()[i]!);
    }
    expect(promotions).toBe(1);
  });
});

describe("ClaimScheduler while Redis is out of reach", () => {
  it("claims nothing, promises no slot to a settle call, and claims as soon as Redis answers again", async () => {
    const h = await scheduler({ queues: ["offline"] }, false);
    h.setLink(false);
    schedulers.push(h.s);
    await h.s.start();
    await store.createMany("offline", [task("offline", "waiting")]);
    await new Promise((r) => setTimeout(r, 400));
    expect(h.claimed).toEqual([]);
    expect(h.s.settleClaim("offline")).toBeUndefined();
    h.setLink(true);
    await waitFor(async () => h.ids().includes("offline/waiting"), { what: "the claim once Redis is back", timeoutMs: 5_000 });
  });
});
