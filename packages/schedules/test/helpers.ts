import { createKeys, DEFAULT_RETENTION, type Keys } from "@flotilla/core";
import { TestTaskStore } from "@flotilla/store/testing";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import type { Redis } from "ioredis";
import { afterEach, beforeEach } from "vitest";
import { ScheduleStore, type TaskTemplate } from "../src/index.ts";

export interface SchedulesTest {
  redis: Redis;
  prefix: string;
  keys: Keys;
  schedules: ScheduleStore;
  tasks: GatedTaskStore;
  /** Redis's clock (ms). */
  now(): Promise<number>;
  /**
   * Moves a schedule's next tick and its creation time back by `ms` (a whole number of its intervals
   * keeps it on its ticks), as if it had been created that much earlier and no worker had run since:
   * the hash and the due set, as the scripts keep them. Returns the new next tick.
   */
  rewind(id: string, ms: number): Promise<number>;
  /** The names of the tasks created in `queue`, in creation order. */
  taskNames(queue: string): Promise<string[]>;
}

/** A task template as the client would prepare it. */
export function template(queue = "sched", over: Partial<TaskTemplate> = {}): TaskTemplate {
  return {
    queue,
    agent: "echo",
    payload: JSON.stringify({ agent: "echo", input: "tick" }),
    detailed: false,
    maxRetries: 0,
    metadata: { team: "ops" },
    ...over,
  };
}

/** A fresh prefix, stores and connection per test, removed after it. */
export function useSchedules(name: string): SchedulesTest {
  const t = {} as SchedulesTest;
  beforeEach(() => {
    t.redis = testRedis();
    t.prefix = testPrefix(name);
    t.keys = createKeys(t.prefix);
    t.schedules = new ScheduleStore(t.redis, t.keys);
    t.tasks = new GatedTaskStore(t.redis, t.keys, DEFAULT_RETENTION);
  });
  afterEach(async () => {
    await purgePrefix(t.redis, t.prefix);
    await t.redis.quit();
  });
  t.now = async () => {
    const [s, us] = await t.redis.time();
    return Number(s) * 1000 + Math.floor(Number(us) / 1000);
  };
  t.rewind = async (id, ms) => {
    const [nextTickAt, createdAt] = await t.redis.hmget(t.keys.schedule(id), "nextTickAt", "createdAt");
    const next = Number(nextTickAt) - ms;
    await t.redis.hset(t.keys.schedule(id), { nextTickAt: next, createdAt: Number(createdAt) - ms });
    await t.redis.zadd(t.keys.schedulesDue(), next, id);
    return next;
  };
  t.taskNames = (queue) => t.redis.zrange(t.keys.taskIndex(queue), "0", "-1");
  return t;
}

/**
 * The real task store, with a gate a test can close: a round that reaches createMany while it is
 * closed waits there (a worker stalled mid-round, holding its lease) until the test opens it.
 * It notes every task name it was asked to create, and can fail its next calls.
 */
export class GatedTaskStore extends TestTaskStore {
  readonly attempted: string[] = [];
  private closed: { entered: () => void; opened: Promise<void> } | undefined;
  private failures = 0;

  /** Closes the gate; `entered` resolves when a round reaches it, `open()` lets it through. */
  close(): { entered: Promise<void>; open: () => void } {
    let entered!: () => void;
    let open!: () => void;
    const enteredP = new Promise<void>((r) => {
      entered = r;
    });
    const opened = new Promise<void>((r) => {
      open = r;
    });
    this.closed = { entered, opened };
    return { entered: enteredP, open };
  }

  /** The next `n` createMany calls throw (as a Redis that refuses them would). */
  failNext(n: number): void {
    this.failures = n;
  }

  override async createMany(...args: Parameters<TestTaskStore["createMany"]>): ReturnType<TestTaskStore["createMany"]> {
    this.attempted.push(...args[1].map((task) => task.taskId));
    if (this.failures > 0) {
      this.failures--;
      throw new Error("createMany refused (test)");
    }
    const gate = this.closed;
    if (gate) {
      this.closed = undefined;
      gate.entered();
      await gate.opened;
    }
    return super.createMany(...args);
  }
}
