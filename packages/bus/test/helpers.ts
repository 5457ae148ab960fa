import { createTestEnv, type TestEnv } from "@flotilla/testing";
import type { Worker } from "@flotilla/worker";
import { afterEach, beforeEach } from "vitest";
import { Bus, type BusWorkerOptions, busWorker, type Handler } from "../src/index.ts";

export interface BusTest {
  env: TestEnv;
  bus: Bus;
  /** A worker serving these subscriptions (webhooks off unless given). */
  serve(options: BusWorkerOptions, workerId?: string): Promise<Worker>;
  /** A handler counting each event it handles in a Redis hash (`<payload.n>` → times): a side effect outside the process. */
  counting(hash: string): Handler;
  /** The counts of such a hash, by field. */
  counts(hash: string): Promise<Record<string, number>>;
}

/** A fresh env and bus per test, closed after it. */
export function useBus(name: string): BusTest {
  const t = {} as BusTest;
  beforeEach(() => {
    t.env = createTestEnv(name);
    t.bus = new Bus({ redis: t.env.connection, prefix: t.env.prefix });
  });
  afterEach(async () => {
    await t.bus.close();
    await t.env.close();
  });
  t.serve = (options, workerId) => t.env.worker({ bus: busWorker({ webhooks: false, ...options }), ...(workerId && { workerId }) });
  t.counting = (hash) => async (event) => {
    const n = (event.payload as { n: number }).n;
    await t.env.redis.hincrby(`${t.env.prefix}:${hash}`, String(n), 1);
    return { seen: n };
  };
  t.counts = async (hash) => Object.fromEntries(Object.entries(await t.env.redis.hgetall(`${t.env.prefix}:${hash}`)).map(([k, v]) => [k, Number(v)]));
  return t;
}
