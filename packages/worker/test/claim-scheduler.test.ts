// @cluster: the claim loop over queues of several slots: one blocking read per slot
import { type Broker, isMissingGroup, type Lane, laneKeys } from "@flotilla/broker";
import { TestBroker } from "@flotilla/broker/testing";
import { CONSUMER_GROUP, createKeys, DEFAULT_RETENTION, type Logger, type Priority, silentLogger } from "@flotilla/core";
import { closeRedis, type OwnedRedis, openRedis } from "@flotilla/core/redis";
import type { StartReply, TaskStore } from "@flotilla/store";
import { newTask, TestTaskStore } from "@flotilla/store/testing";
import { type LoggedLine, onCluster, purgePrefix, recordingLogger, testConnection, testPrefix, testRedis, waitFor } from "@flotilla/testing";
import { afterAll, afterEach, describe, expect, it, vi } from "vitest";
import { ClaimScheduler, type SchedulerOptions } from "../src/claim-scheduler.ts";
import { InFlight } from "../src/in-flight.ts";
import { classifyRedisError } from "../src/redis-link.ts";

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

const task = (queue: string, name: string, over: { delayMs?: number; priority?: Priority } = {}) => newTask(`${queue}/${name}`, over);

interface Claimed {
  queue: string;
  reply: StartReply;
  reclaimed: boolean;
}

/** A started scheduler whose dispatched entries are kept (and held in flight until `finish`). */
async function scheduler(
  options: Partial<SchedulerOptions> & { queues: string[] },
  start = true,
  using: Broker = broker,
  log: Logger = silentLogger,
  usingStore: TaskStore = store,
) {
  for (const q of options.queues) await broker.ensureGroup(q);
  const blocking = openRedis(testConnection(), "blocking");
  const command = openRedis(testConnection(), "command");
  opened.push(blocking, command);
  const claimed: Claimed[] = [];
  const errors: unknown[] = [];
  const readiness: string[] = [];
  const finishers = new Map<string, () => void>();
  let settling = 0;
  let settlingAsked = 0;
  const inFlight = new InFlight(() => s.wake());
  // Whether Redis can be reached, as the worker's RedisLink says: up unless the test says otherwise.
  let linkUp = true;
  let linkBack: (() => void) | undefined;
  const link = {
    get up() {
      return linkUp;
    },
    whenUp: () => (linkUp ? Promise.resolve() : new Promise<void>((resolve) => (linkBack = resolve))),
    // As the worker's link: an OOM reply takes it down (Redis full) until the test brings it back.
    observe: (err: unknown) => {
      const trouble = classifyRedisError(err);
      if (trouble === "full") linkUp = false;
      return trouble;
    },
  };
  const setLink = (up: boolean) => {
    linkUp = up;
    if (up) linkBack?.();
  };
  const s: ClaimScheduler = new ClaimScheduler(
    { workerId: "w1", concurrency: 2, blockMs: 200, leaseMs: 60_000, promoteIntervalMs: 60_000, fairnessEvery: 0, ...options },
    {
      store: usingStore,
      broker: using,
      blocking,
      command,
      inFlight,
      settling: () => {
        settlingAsked++;
        return settling;
      },
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
    /** How often the scheduler has counted its free slots (each count asks how many runs are settling). */
    slotCounts: () => settlingAsked,
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

  it("takes turns between its queues: a backlog in the first never holds the others back", async () => {
    await store.createMany(
      "qt-a",
      ["1", "2", "3", "4", "5", "6"].map((n) => task("qt-a", n)),
    );
    await store.createMany(
      "qt-b",
      ["1", "2", "3"].map((n) => task("qt-b", n)),
    );
    const h = await scheduler({ queues: ["qt-a", "qt-b"], concurrency: 1 });
    for (let i = 1; i <= 6; i++) {
      await waitFor(async () => h.claimed.length === i, { what: `claim ${i}` });
      h.finish(h.ids()[i - 1]!);
    }
    expect(h.ids()).toEqual(["qt-a/1", "qt-b/1", "qt-a/2", "qt-b/2", "qt-a/3", "qt-b/3"]);
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
    // One DEL per key: on a cluster run the queues are in different slots.
    await Promise.all([...laneKeys(keys, "lost-a"), ...laneKeys(keys, "lost-b"), keys.queues()].map((k) => redis.del(k)));
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
    // One DEL per key: on a cluster run the queues are in different slots.
    await Promise.all([...laneKeys(keys, "stuck-a"), ...laneKeys(keys, "stuck-b")].map((k) => redis.del(k)));
    await new Promise((r) => setTimeout(r, 1500));
    const failures = h.errors.filter(isMissingGroup).length;
    // One make per queue per NOGROUP; the second try comes at once, then 400, 800, 1600 ms… (not a busy loop).
    expect(failures).toBeGreaterThanOrEqual(2);
    expect(failures).toBeLessThanOrEqual(8);
    expect(remakes.length).toBe(2 * failures);
    expect(remakes.filter((q) => q === "stuck-a").length).toBe(failures);
    expect(h.readiness.at(-1)).toBe("raise claiming");
  });

  it("never lets a settle call claim for a worker of several queues, a stopping one, one cut off from Redis, or when reclaiming is due", async () => {
    // Each started one is full, past its first reclaim scan (the next is half a minute away), when
    // the outcome of its run goes to the settler and frees a slot: only the rule under test refuses.
    const full = async (queue: string, queues: string[]) => {
      await store.createMany(queue, [task(queue, "a")]);
      const h = await scheduler({ queues, concurrency: 1 });
      await waitFor(async () => h.claimed.length === 1, { what: `the claim of ${queue}` });
      return h;
    };
    const m = await full("m1", ["m1", "m2"]);
    m.setSettling(1);
    expect(m.s.settleClaim("m1")).toBeUndefined();
    // Not started: its first reclaim scan is due now.
    const due = await scheduler({ queues: ["m3"], concurrency: 4 }, false);
    expect(due.s.freeSlots()).toBe(4);
    expect(due.s.settleClaim("m3")).toBeUndefined();
    const g = await full("m4", ["m4"]);
    await g.s.stop();
    g.setSettling(1);
    expect(g.s.settleClaim("m4")).toBeUndefined();
    // The same, single-queue and claiming: a settle call may claim.
    // Redis out of reach: no claim rides on a settle call either.
    const cut = await full("m6", ["m6"]);
    cut.setSettling(1);
    cut.setLink(false);
    expect(cut.s.settleClaim("m6")).toBeUndefined();
    cut.setLink(true);
    // The same, single-queue and claiming: a settle call may claim.
    const one = await full("m5", ["m5"]);
    one.setSettling(1);
    expect(one.s.settleClaim("m5")).toEqual({ count: 1, order: expect.any(Array) });
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

  it.skipIf(onCluster())(
    "stops promptly after its blocking connection reconnected (it unblocks the new connection)",
    async () => {
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
    },
    30_000,
  );

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
  it("claims nothing, and claims as soon as Redis answers again", async () => {
    const h = await scheduler({ queues: ["offline"] }, false);
    h.setLink(false);
    schedulers.push(h.s);
    await h.s.start();
    await store.createMany("offline", [task("offline", "waiting")]);
    await new Promise((r) => setTimeout(r, 400));
    expect(h.claimed).toEqual([]);
    h.setLink(true);
    await waitFor(async () => h.ids().includes("offline/waiting"), { what: "the claim once Redis is back", timeoutMs: 5_000 });
  });
});

// ---------------------------------------------------------------------------------------------
// Failure paths and cadences. Real Redis, store and broker throughout; where a failure cannot be
// made in Redis at the moment a test needs it, a subclass of the real store or broker refuses a call
// (and notes when each call came, for the cadences).

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
const gaps = (times: number[]) => times.slice(1).map((t, i) => t - times[i]!);
/** The fields of each warn line with this message. */
const warned = (lines: LoggedLine[], message: string) => lines.filter((l) => l.level === "warn" && l.message === message).map((l) => l.fields);
/** The error a read gets when Redis lost the consumer group (what `isMissingGroup` recognises). */
const nogroup = (n: number) => new Error(`NOGROUP No such key or consumer group (made up, #${n})`);

/** The real store, noting each batch claim; a queue in `failing` has its claims refused. */
class WatchedStore extends TestTaskStore {
  readonly claims: Array<{ at: number; queue: string; count: number }> = [];
  readonly failing = new Map<string, Error>();
  /** Errors the next claims throw, one per claim in turn (null: that claim goes through). */
  readonly nextClaims: Array<Error | null> = [];
  /** Claims find nothing (as if every entry came just after): what waits is taken by the blocking read. */
  blind = false;
  /** The next claim waits for this, then fails; `onHeld` is told when it starts waiting. */
  hold: Promise<void> | undefined;
  onHeld: (() => void) | undefined;
  readonly failStart = new Map<string, Error>();

  override async claim(queue: string, consumer: string, count: number, order?: readonly Priority[], now?: number): Promise<StartReply[]> {
    this.claims.push({ at: Date.now(), queue, count });
    const scripted = this.nextClaims.shift();
    if (scripted) throw scripted;
    const failure = this.failing.get(queue);
    if (failure) throw failure;
    if (this.hold) {
      const held = this.hold;
      this.hold = undefined;
      this.onHeld?.();
      await held;
      throw new Error("the connection went away under the claim");
    }
    if (this.blind) return [];
    return super.claim(queue, consumer, count, order, now);
  }

  override async startEntries(
    queue: string,
    consumer: string,
    entries: ReadonlyArray<{ priority: Priority; entryId: string; name: string }>,
    reclaimed: boolean,
    now?: number,
  ): Promise<StartReply[]> {
    const failure = this.failStart.get(queue);
    if (failure) throw failure;
    return super.startEntries(queue, consumer, entries, reclaimed, now);
  }
}

/** The real broker, noting each reclaim scan and prune; scans, prunes and remakes can be refused. */
class WatchedBroker extends TestBroker {
  readonly scans: Array<{ at: number; queue: string; priority: Priority; count: number }> = [];
  readonly prunes: number[] = [];
  failScan: ((lane: Lane) => Error | undefined) | undefined;
  failPrune: Error | undefined;
  failRemake: Error | undefined;

  override async reclaim(lane: Lane, consumer: string, leaseMs: number, count: number) {
    this.scans.push({ at: Date.now(), queue: lane.queue, priority: lane.priority, count });
    const failure = this.failScan?.(lane);
    if (failure) throw failure;
    return super.reclaim(lane, consumer, leaseMs, count);
  }

  override async pruneConsumers(queue: string, minIdleMs: number, keep: string): Promise<number> {
    this.prunes.push(Date.now());
    if (this.failPrune) throw this.failPrune;
    return super.pruneConsumers(queue, minIdleMs, keep);
  }

  override async ensureGroup(queue: string, options: { again?: boolean } = {}): Promise<void> {
    if (options.again && this.failRemake) throw this.failRemake;
    await super.ensureGroup(queue, options);
  }
}

const watchedStore = () => new WatchedStore(redis, keys, DEFAULT_RETENTION);

/** A task `name` of `queue` held by a worker that is gone: its entry lapses after the reclaimer's lease. */
async function orphan(queue: string, names: string[], priority: Priority = "normal") {
  await broker.ensureGroup(queue);
  await store.createMany(
    queue,
    names.map((n) => task(queue, n, { priority })),
  );
  return broker.claim(redis, "dead-worker", [queue], names.length, 100);
}

describe("ClaimScheduler: one queue's claims fail", () => {
  it("logs the queue and its error, reports it, and goes on claiming from the others without backing off", async () => {
    const { log, lines } = recordingLogger();
    const s = watchedStore();
    const refused = new Error("claims of pq-bad refused");
    s.failing.set("pq-bad", refused);
    await store.createMany("pq-good", [task("pq-good", "a")]);
    const h = await scheduler({ queues: ["pq-bad", "pq-good"], concurrency: 4, blockMs: 100 }, true, broker, log, s);
    await waitFor(async () => h.claimed.length === 1, { what: "the sound queue's task" });
    await store.createMany("pq-good", [task("pq-good", "b")]);
    await waitFor(async () => h.claimed.length === 2, { what: "the sound queue's next task" });
    expect(h.ids()).toEqual(["pq-good/a", "pq-good/b"]);
    expect(warned(lines, "claim from a queue failed; claiming from the others")[0]).toEqual({ queue: "pq-bad", err: refused });
    expect(h.errors).toContain(refused);
    // Some queue still claims: the worker stays ready and the loop does not back off.
    expect(h.readiness.filter((r) => r !== "clear claiming")).toEqual([]);
    expect(warned(lines, "claim failed; retrying")).toEqual([]);
  });

  it("asks the next queue for nothing once the first filled every slot", async () => {
    const s = watchedStore();
    await store.createMany("cf-a", [task("cf-a", "1"), task("cf-a", "2")]);
    await store.createMany("cf-b", [task("cf-b", "1")]);
    const h = await scheduler({ queues: ["cf-a", "cf-b"], concurrency: 2 }, true, broker, silentLogger, s);
    await waitFor(async () => h.claimed.length === 2, { what: "two claims" });
    await pause(300);
    expect(s.claims.map((c) => [c.queue, c.count])).toEqual([["cf-a", 2]]);
  });
});

describe("ClaimScheduler: every queue's claims fail", () => {
  it("is not ready, logs each failure with its count, backs off, and recovers when a claim works", async () => {
    const { log, lines } = recordingLogger();
    const s = watchedStore();
    const first = new Error("claims of af-1 refused");
    s.failing.set("af-1", first);
    s.failing.set("af-2", new Error("claims of af-2 refused"));
    const h = await scheduler({ queues: ["af-1", "af-2"] }, true, broker, log, s);
    await waitFor(async () => warned(lines, "claim failed; retrying").length >= 3, { what: "three failed claims" });
    // The error of the queue asked first stands for the round (the queues take turns at being first);
    // the count goes up with each failure.
    const second = s.failing.get("af-2");
    expect(warned(lines, "claim failed; retrying").slice(0, 3)).toEqual([
      { err: first, failures: 1 },
      { err: second, failures: 2 },
      { err: first, failures: 3 },
    ]);
    expect(warned(lines, "claim from a queue failed; claiming from the others").slice(0, 2)).toEqual([
      { queue: "af-1", err: first },
      { queue: "af-2", err: expect.objectContaining({ message: "claims of af-2 refused" }) },
    ]);
    expect(h.errors[0]).toBe(first);
    expect(h.readiness[0]).toBe("raise claiming");
    expect(h.readiness).not.toContain("clear claiming");
    // Backoff: 200 ms after the first failure, 400 ms after the second.
    const tries = s.claims.filter((c) => c.queue === "af-1").map((c) => c.at);
    expect(tries[2]! - tries[0]!).toBeGreaterThanOrEqual(550);
    s.failing.clear();
    await store.createMany("af-2", [task("af-2", "x")]);
    await waitFor(async () => h.claimed.length === 1, { what: "a claim once the queues answer", timeoutMs: 15_000 });
    // Ready again once the round that claimed it is over (its other queue is asked after it).
    await waitFor(async () => h.readiness.at(-1) === "clear claiming", { what: "ready again" });
  });
});

// Both tests take one blocking read over two queues; on a cluster run the queues lie in different
// slots and each read names one slot's queues (the broker's MULTI_SLOT_BLOCK_MS), so they skip there.
describe("ClaimScheduler: entries a blocking read took that cannot be started", () => {
  it.skipIf(onCluster())("starts the other queues' entries, then reports the failure and backs off", async () => {
    const { log, lines } = recordingLogger();
    const s = watchedStore();
    s.blind = true; // both entries reach the blocking read, in one reply
    const refused = new Error("starts of sf-bad refused");
    s.failStart.set("sf-bad", refused);
    await store.createMany("sf-bad", [task("sf-bad", "x")]);
    await store.createMany("sf-good", [task("sf-good", "x")]);
    const h = await scheduler({ queues: ["sf-bad", "sf-good"] }, true, broker, log, s);
    await waitFor(async () => warned(lines, "claim failed; retrying").length >= 1, { what: "the failed start" });
    expect(warned(lines, "claim failed; retrying")[0]).toEqual({ err: refused, failures: 1 });
    expect(h.claimed).toMatchObject([{ queue: "sf-good", reclaimed: false, reply: { kind: "run", taskId: "sf-good/x" } }]);
    expect(h.errors[0]).toBe(refused);
    expect(h.readiness[0]).toBe("raise claiming");
  });

  it.skipIf(onCluster())("makes the groups again when a start meets NOGROUP, though another queue's start failed before it", async () => {
    const { log, lines } = recordingLogger();
    const s = watchedStore();
    s.blind = true;
    s.failStart.set("sg-bad", new Error("starts of sg-bad refused"));
    s.failStart.set("sg-lost", nogroup(1));
    await store.createMany("sg-bad", [task("sg-bad", "x")]);
    await store.createMany("sg-lost", [task("sg-lost", "x")]);
    const h = await scheduler({ queues: ["sg-bad", "sg-lost"] }, true, broker, log, s);
    const missing = "a consumer group is missing (Redis lost its data?): making the queues' groups again";
    await waitFor(async () => warned(lines, missing).length > 0, { what: "the groups made again" });
    expect(h.errors[0]).toBe(s.failStart.get("sg-lost"));
  });
});

describe("ClaimScheduler: NOGROUP (Redis lost its consumer groups)", () => {
  it("makes the groups again and claims at once, the first time after each claim that worked; logs the queues", async () => {
    const { log, lines } = recordingLogger();
    const s = watchedStore();
    const h = await scheduler({ queues: ["ng-a", "ng-b"], blockMs: 100 }, false, broker, log, s);
    // Claims in turn: NOGROUP; both queues' claims work (then a 100 ms read); NOGROUP, and NOGROUP
    // again before any claim worked; then they work.
    s.nextClaims.push(nogroup(1), null, null, nogroup(2), nogroup(3));
    schedulers.push(h.s);
    await h.s.start();
    await waitFor(async () => s.claims.length >= 7, { what: "the claims after the third NOGROUP" });
    const at = s.claims.map((c) => c.at);
    // The queue asked first takes turns, round by round.
    expect(s.claims.map((c) => c.queue)).toEqual(["ng-a", "ng-b", "ng-a", "ng-a", "ng-b", "ng-a", "ng-b"]);
    expect(at[1]! - at[0]!).toBeLessThan(150); // at once (a backoff would be 200 ms)
    expect(at[4]! - at[3]!).toBeLessThan(150); // at once again: a claim worked since the last remake
    expect(at[5]! - at[4]!).toBeGreaterThanOrEqual(350); // the second in a row waits (400 ms)
    const missing = "a consumer group is missing (Redis lost its data?): making the queues' groups again";
    expect(warned(lines, missing)).toEqual([
      { err: expect.objectContaining({ message: expect.stringContaining("#1") }), queues: ["ng-a", "ng-b"] },
      { err: expect.objectContaining({ message: expect.stringContaining("#2") }), queues: ["ng-a", "ng-b"] },
      { err: expect.objectContaining({ message: expect.stringContaining("#3") }), queues: ["ng-a", "ng-b"] },
    ]);
    // NOGROUP from one queue is the whole worker's problem, not that queue's.
    expect(warned(lines, "claim from a queue failed; claiming from the others")).toEqual([]);
    expect(h.errors.filter(isMissingGroup)).toHaveLength(3);
  });

  it("backs off and says so when the groups cannot be made again", async () => {
    const { log, lines } = recordingLogger();
    const s = watchedStore();
    const b = new WatchedBroker(redis, keys);
    const refused = new Error("making groups refused");
    b.failRemake = refused;
    const h = await scheduler({ queues: ["ng-stuck"] }, false, b, log, s);
    s.nextClaims.push(nogroup(1));
    schedulers.push(h.s);
    await h.s.start();
    await waitFor(async () => s.claims.length >= 2, { what: "the claim after the failed remake" });
    expect(s.claims[1]!.at - s.claims[0]!.at).toBeGreaterThanOrEqual(150); // the backoff (200 ms), not at once
    expect(warned(lines, "could not make the consumer groups again; retrying")).toEqual([{ err: refused }]);
    expect(h.readiness[0]).toBe("raise claiming");
  });
});

describe("ClaimScheduler: a claim that fails as it stops", () => {
  it("ends without reporting it, raising readiness or backing off", async () => {
    const { log, lines } = recordingLogger();
    const s = watchedStore();
    let release!: () => void;
    s.hold = new Promise<void>((r) => {
      release = r;
    });
    const held = new Promise<void>((r) => {
      s.onHeld = r;
    });
    const h = await scheduler({ queues: ["halt"] }, true, broker, log, s);
    await held;
    const stopped = h.s.stop();
    release();
    await stopped;
    expect(h.errors).toEqual([]);
    expect(h.readiness).toEqual([]);
    expect(warned(lines, "claim failed; retrying")).toEqual([]);
  });
});

describe("ClaimScheduler: reclaim scans", () => {
  it("scans every half lease with jitter (0.75 to 1.25 of it), not at every claim round", async () => {
    // The jitter at its top: each scan is due 0.625 lease after the last one began (500 ms), whatever
    // comes between; its first lane is asked a little later (after a look for idle consumers, say).
    vi.spyOn(Math, "random").mockReturnValue(0.999);
    try {
      const b = new WatchedBroker(redis, keys);
      await scheduler({ queues: ["cadence"], leaseMs: 800, blockMs: 40 }, true, b);
      const high = () => b.scans.filter((s) => s.priority === "high").map((s) => s.at);
      await waitFor(async () => high().length >= 7, { what: "seven scans", timeoutMs: 15_000 });
      const between = gaps(high());
      // Never at a claim round's pace (40 ms here).
      expect(Math.min(...between)).toBeGreaterThanOrEqual(300);
      // On average 500 ms apart: a lane is asked some ms after its scan began, and that delay varies
      // (a single gap was 427 ms once under load, the scan before it asked late), but over six gaps
      // it shifts the mean by a sixth of one delay at most. Without the jitter's top it would be 400.
      const mean = between.reduce((a, b) => a + b, 0) / between.length;
      expect(mean).toBeGreaterThanOrEqual(460);
      // Late by the loop's own delays at most (under load), never by another half lease.
      expect(mean).toBeLessThan(800);
    } finally {
      vi.restoreAllMocks();
    }
  });

  it("logs a lane whose scan fails, reports it, and scans the other lanes", async () => {
    const { log, lines } = recordingLogger();
    const b = new WatchedBroker(redis, keys);
    const refused = new Error("scan of rl's high lane refused");
    b.failScan = (lane) => (lane.queue === "rl" && lane.priority === "high" ? refused : undefined);
    await orphan("rl", ["x"]);
    await pause(400);
    const h = await scheduler({ queues: ["rl"], leaseMs: 300 }, true, b, log);
    await waitFor(async () => h.claimed.length === 1, { what: "the reclaim from the normal lane" });
    expect(h.claimed[0]).toMatchObject({ reclaimed: true, reply: { taskId: "rl/x" } });
    expect(warned(lines, "reclaim scan of a lane failed; scanning the others")[0]).toEqual({ queue: "rl", priority: "high", err: refused });
    expect(h.errors).toContain(refused);
  });

  it("scans no further lane once its slots are full", async () => {
    const b = new WatchedBroker(redis, keys);
    await orphan("rs", ["x"], "high");
    await pause(400);
    const h = await scheduler({ queues: ["rs"], concurrency: 1, leaseMs: 300 }, true, b);
    await waitFor(async () => h.claimed.length === 1, { what: "the reclaim" });
    await pause(300);
    // The normal and low lanes wait for a free slot (the scan is due again as soon as one frees).
    expect(b.scans.map((s) => [s.priority, s.count])).toEqual([["high", 1]]);
  });

  it("scans again before claiming new work when a scan filled every free slot (more may have lapsed)", async () => {
    await orphan("rd", ["l1", "l2"], "low");
    await store.createMany("rd", [task("rd", "new")]);
    await pause(1100);
    // A lease of 1 s: the next scan by the clock is at least 375 ms away, far after a slot frees here.
    const h = await scheduler({ queues: ["rd"], concurrency: 1, leaseMs: 1000 });
    for (let i = 0; i < 3; i++) {
      await waitFor(async () => h.claimed.length === i + 1, { what: `claim ${i + 1}` });
      h.finish(h.ids()[i]!);
    }
    expect(h.claimed.map((c) => [c.reply.kind === "run" && c.reply.taskId, c.reclaimed])).toEqual([
      ["rd/l1", true],
      ["rd/l2", true],
      ["rd/new", false],
    ]);
  });

  it("reclaims past entries whose holder's longer lease has not lapsed: the next scan goes on after them", async () => {
    // Ten entries held by a live worker with a long lease (idle longer than this worker's lease, not
    // its own), then a dead worker's. A scan with one free slot looks at ten entries: the held ten.
    await broker.ensureGroup("ll");
    await store.createMany(
      "ll",
      Array.from({ length: 10 }, (_, i) => task("ll", `held-${i}`)),
    );
    await broker.claim(redis, "long-lease-worker", ["ll"], 10, 100);
    await redis.hset(keys.leases("ll"), "long-lease-worker", 60_000);
    await orphan("ll", ["orphan"]);
    await pause(400);
    const h = await scheduler({ queues: ["ll"], concurrency: 1, leaseMs: 300 });
    await waitFor(async () => h.claimed.length === 1, { what: "the orphan reclaimed", timeoutMs: 5_000 });
    expect(h.claimed[0]).toMatchObject({ reclaimed: true, reply: { taskId: "ll/orphan" } });
  });
});

describe("ClaimScheduler: forgetting the consumers of workers that are gone", () => {
  it("forgets a silent consumer that holds nothing, and says so", async () => {
    const { log, lines } = recordingLogger();
    await broker.ensureGroup("prune");
    await redis.xgroup("CREATECONSUMER", keys.lane("prune", "normal"), CONSUMER_GROUP, "gone-worker");
    // Forgotten once silent for ten leases: 300 ms with this lease.
    await pause(350);
    await scheduler({ queues: ["prune"], leaseMs: 30 }, true, broker, log);
    const forgot = () => lines.filter((l) => l.level === "info" && l.message === "forgot consumers of workers that are gone");
    await waitFor(async () => forgot().length > 0, { what: "the consumer forgotten" });
    expect(forgot().map((l) => l.fields)).toEqual([{ queue: "prune", forgotten: 1 }]);
    const consumers = (await redis.xinfo("CONSUMERS", keys.lane("prune", "normal"), CONSUMER_GROUP)) as string[][];
    expect(consumers.map((c) => c[1])).not.toContain("gone-worker");
  });

  it("logs a failure to forget them and goes on claiming", async () => {
    const { log, lines } = recordingLogger();
    const b = new WatchedBroker(redis, keys);
    const refused = new Error("prune refused");
    b.failPrune = refused;
    await store.createMany("prune-fail", [task("prune-fail", "a")]);
    const h = await scheduler({ queues: ["prune-fail"] }, true, b, log);
    await waitFor(async () => h.claimed.length === 1, { what: "the claim" });
    expect(warned(lines, "could not forget idle consumers; will retry")).toEqual([{ err: refused }]);
    expect(h.errors).toEqual([]);
  });

  it("looks for them every five leases (half of the ten a consumer must be silent), not at every scan", async () => {
    const b = new WatchedBroker(redis, keys);
    // Scans every 37 to 63 ms; looks every 500 ms.
    await scheduler({ queues: ["prune-cadence"], leaseMs: 100 }, true, b);
    await waitFor(async () => b.prunes.length >= 3, { what: "three looks", timeoutMs: 8_000 });
    expect(Math.min(...gaps(b.prunes))).toBeGreaterThanOrEqual(450);
    expect(b.prunes[2]! - b.prunes[0]!).toBeLessThan(1800);
  });
});

describe("ClaimScheduler: stopping a blocked read", () => {
  it.skipIf(onCluster())("unblocks the read (CLIENT UNBLOCK) rather than closing the connection under it", async () => {
    const h = await scheduler({ queues: ["unblock"], blockMs: 60_000 });
    await pause(150);
    await h.s.stop();
    // Closing it is the fallback after a second: the connection would be ended.
    expect(h.blocking.redis.status).toBe("ready");
  });

  it.skipIf(onCluster())(
    "unblocks the new connection after the blocking one reconnected",
    async () => {
      const h = await scheduler({ queues: ["reunblock"], blockMs: 3000 }, false);
      const firstId = String(await h.blocking.redis.client("ID"));
      await h.s.start();
      schedulers.push(h.s);
      await pause(100);
      await redis.client("KILL", "ID", firstId);
      await waitFor(async () => h.blocking.redis.status !== "ready", { what: "the blocking connection lost" });
      await waitFor(async () => h.blocking.redis.status === "ready", { what: "the blocking connection back" });
      // The read resent after the reconnect returns (its new client id is learnt), and the next one blocks.
      await pause(3400);
      await h.s.stop();
      expect(h.blocking.redis.status).toBe("ready");
    },
    30_000,
  );
});

describe("ClaimScheduler: waiting for a free slot", () => {
  it("sleeps while every slot is busy, though a reclaim scan is due (it needs a slot, not a timer)", async () => {
    await store.createMany("spin", [task("spin", "a")]);
    const h = await scheduler({ queues: ["spin"], concurrency: 1, leaseMs: 300 });
    await waitFor(async () => h.claimed.length === 1, { what: "the claim" });
    await pause(400); // the next scan fell due meanwhile
    const before = h.slotCounts();
    h.s.wake(); // a wake that frees nothing: it sleeps again
    await pause(500);
    expect(h.slotCounts() - before).toBeLessThan(20);
  });

  it("looks at its slots again when reclaiming falls due, and finds one freed without a wake", async () => {
    await store.createMany("due-wake", [task("due-wake", "a"), task("due-wake", "b")]);
    const h = await scheduler({ queues: ["due-wake"], concurrency: 1, leaseMs: 2000 });
    await waitFor(async () => h.claimed.length === 1, { what: "the first claim" });
    h.setSettling(1); // its outcome is with the settler: the slot is free, and nobody said so
    await waitFor(async () => h.claimed.length === 2, { what: "the claim at the reclaim scan (within 1.25 s)", timeoutMs: 5_000 });
  });

  it("leaves no timer behind when woken", async () => {
    const refTimers = () => process.getActiveResourcesInfo().filter((r) => r === "Timeout").length;
    await store.createMany("woken", [task("woken", "a")]);
    const h = await scheduler({ queues: ["woken"], concurrency: 1 });
    await waitFor(async () => h.claimed.length === 1, { what: "the claim" });
    await pause(50);
    const before = refTimers();
    for (let i = 0; i < 10; i++) {
      h.s.wake();
      await pause(10);
    }
    expect(refTimers()).toBeLessThan(before + 3);
  });
});

describe("ClaimScheduler: a blocking read that brings more than the free slots", () => {
  it("runs no more than its slots and gives the rest back to their lanes, for the next claims", async () => {
    // The claim that asks without blocking finds nothing; just then tasks land in all three lanes,
    // so the blocking read that follows returns one entry of each (COUNT holds per lane).
    const queue = "overflow";
    await broker.ensureGroup(queue);
    class EmptyClaimStore extends TestTaskStore {
      landed = false;
      override async claim(...args: Parameters<TaskStore["claim"]>) {
        if (this.landed) return super.claim(...args);
        this.landed = true;
        await store.createMany(queue, [task(queue, "low", { priority: "low" }), task(queue, "normal"), task(queue, "high", { priority: "high" })]);
        return [];
      }
    }
    const h = await scheduler(
      { queues: [queue], concurrency: 1, blockMs: 30_000 },
      true,
      broker,
      silentLogger,
      new EmptyClaimStore(redis, keys, DEFAULT_RETENTION),
    );
    await waitFor(async () => h.claimed.length === 1, { what: "a claim" });
    await new Promise((r) => setTimeout(r, 300));
    expect(h.ids()).toEqual([`${queue}/high`]);
    // Only the started one is delivered to this worker; the others wait unread in their lanes.
    const [normal, low] = [laneKeys(keys, queue)[1]!, laneKeys(keys, queue)[2]!];
    const pending = async (lane: string) => ((await redis.xpending(lane, CONSUMER_GROUP)) as [number])[0];
    expect(await pending(normal)).toBe(0);
    expect(await pending(low)).toBe(0);
    expect(h.errors).toEqual([]);
    // As slots free they are claimed in priority order, each once.
    h.finish(`${queue}/high`);
    await waitFor(async () => h.claimed.length === 2, { what: "the second claim" });
    h.finish(`${queue}/normal`);
    await waitFor(async () => h.claimed.length === 3, { what: "the third claim" });
    await new Promise((r) => setTimeout(r, 300));
    expect(h.ids()).toEqual([`${queue}/high`, `${queue}/normal`, `${queue}/low`]);
  });

  it("gives back only entries still delivered to it, once: a resent call changes nothing", async () => {
    const queue = "giveback";
    await broker.ensureGroup(queue);
    await store.createMany(queue, [task(queue, "a"), task(queue, "b")]);
    const [a, b] = await broker.claim(redis, "w1", [queue], 2, 100);
    const entries = [a!, b!].map((e) => ({ priority: e.priority, entryId: e.entryId, name: e.fields!.task! }));
    // b was reclaimed by another worker in between: it stays with that worker.
    await redis.xclaim(laneKeys(keys, queue)[1]!, CONSUMER_GROUP, "w2", 0, b!.entryId);
    expect(await broker.release(queue, "w1", entries)).toBe(1);
    expect(await broker.release(queue, "w1", entries)).toBe(0);
    const again = await broker.claim(redis, "w3", [queue], 10, 100);
    expect(again.map((e) => e.fields?.task)).toEqual(["a"]);
    expect(again[0]!.entryId).not.toBe(a!.entryId);
    expect((await redis.xpending(laneKeys(keys, queue)[1]!, CONSUMER_GROUP, "-", "+", 10)) as unknown[]).toHaveLength(2);
  });
});

describe("ClaimScheduler: after a settle call that claimed nothing", () => {
  it("blocks at once, without asking the empty lanes again first, and takes what lands next", async () => {
    const queue = "empty-settle";
    const watched = new WatchedStore(redis, keys, DEFAULT_RETENTION);
    await watched.createMany(queue, [task(queue, "a")]);
    const h = await scheduler(
      { queues: [queue], concurrency: 1, blockMs: 30_000, leaseMs: 600_000, promoteIntervalMs: 600_000 },
      true,
      broker,
      silentLogger,
      watched,
    );
    await waitFor(async () => h.claimed.length === 1, { what: "the first claim" });
    h.setSettling(1);
    expect(h.s.settleClaim(queue)).toEqual({ count: 1, order: expect.any(Array) });
    h.setSettling(0);
    h.finish(`${queue}/a`);
    const asked = watched.claims.length;
    // The settle call found the lanes empty: the next round's claim would find nothing too.
    h.s.settleStarted(queue, [], 1, performance.now());
    await pause(200);
    await watched.createMany(queue, [task(queue, "b")]);
    await waitFor(async () => h.claimed.length === 2, { what: "the task that landed while blocked", timeoutMs: 5_000 });
    expect(watched.claims.length).toBe(asked);
  });
});
