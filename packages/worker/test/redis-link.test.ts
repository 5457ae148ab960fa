// @single: one connection behind the fault proxy
import { type FaultProxy, onCluster, recordingLogger, redisUrl, startFaultProxy, testRedis, waitFor } from "@flotilla/testing";
import { Redis } from "ioredis";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Readiness } from "../src/readiness.ts";
import { RedisLink } from "../src/redis-link.ts";

// The link on its own: a real Redis behind the fault proxy, which can cut the network without
// closing anything (a partition) or have the connection killed.
const admin = testRedis();
let proxy: FaultProxy | undefined;
let conn: Redis | undefined;
let link: RedisLink | undefined;
afterAll(() => admin.quit());
afterEach(async () => {
  link?.stop();
  proxy?.heal();
  conn?.disconnect();
  await proxy?.close();
});

async function setup(probe = { probeIntervalMs: 50, probeTimeoutMs: 200 }) {
  proxy = await startFaultProxy({ host: "127.0.0.1", port: Number(new URL(redisUrl()).port || 6379) });
  conn = new Redis(proxy.url, { maxRetriesPerRequest: null });
  await new Promise((resolve) => conn!.once("ready", resolve));
  const { log, lines } = recordingLogger();
  const readiness = new Readiness(log);
  link = new RedisLink(conn, readiness, { ...probe, where: "redis-under-test" });
  link.start();
  return { readiness, lines, link };
}

describe.skipIf(onCluster())("RedisLink", () => {
  it("goes down when Redis stops answering with the connection open (a partition), and up at the next answer", async () => {
    const { readiness, link } = await setup();
    expect(link.up).toBe(true);
    await expect(link.whenUp()).resolves.toBeUndefined();
    const cutAt = performance.now();
    proxy!.partition();
    await waitFor(async () => !link.up, { what: "the link to go down" });
    // Not before a probe went unanswered for probeTimeoutMs.
    expect(performance.now() - cutAt).toBeGreaterThanOrEqual(200);
    expect(readiness.state.reasons).toEqual([
      { reason: "redis", detail: expect.stringMatching(/^Redis at redis-under-test has not answered for \d+ ms$/), since: expect.any(Number) },
    ]);
    let back = false;
    void link.whenUp().then(() => (back = true));
    await new Promise((r) => setTimeout(r, 300));
    expect(back).toBe(false);
    expect(link.up).toBe(false);
    proxy!.heal();
    await waitFor(async () => back, { what: "whenUp to resolve" });
    expect(link.up).toBe(true);
    expect(readiness.ready).toBe(true);
  });

  it("asks again after a probe whose answer is lost for good, and comes back up at the next answer", async () => {
    const { readiness, link } = await setup({ probeIntervalMs: 50, probeTimeoutMs: 200 });
    // The next probe's answer never comes, as ioredis loses a command it wrote during its ready check.
    const pipeline = conn!.pipeline.bind(conn!);
    let lost = 0;
    conn!.pipeline = ((...args: Parameters<typeof pipeline>) => {
      const p = pipeline(...args);
      if (lost++ === 0) p.exec = () => new Promise(() => {});
      return p;
    }) as Redis["pipeline"];
    await waitFor(async () => !link.up, { what: "the link to go down" });
    expect(readiness.state.reasons[0]?.detail).toMatch(/has not answered/);
    await waitFor(async () => link.up, { what: "the link to come back with the next probe" });
    expect(lost).toBeGreaterThan(1);
  });

  it("goes down while the connection is closed and up once it is ready again", async () => {
    const { readiness, link } = await setup({ probeIntervalMs: 60_000, probeTimeoutMs: 120_000 });
    const id = Number(await conn!.client("ID"));
    const sawDown = new Promise<void>((resolve) => conn!.once("close", () => resolve()));
    await admin.client("KILL", "ID", String(id));
    await sawDown;
    expect(link.up).toBe(false);
    expect(readiness.state.reasons).toEqual([{ reason: "redis", detail: "the connection to Redis at redis-under-test is down", since: expect.any(Number) }]);
    await link.whenUp();
    expect(link.up).toBe(true);
    expect(readiness.ready).toBe(true);
  });

  it("stays up while a slow answer is still within the timeout", async () => {
    const { link } = await setup({ probeIntervalMs: 30, probeTimeoutMs: 2_000 });
    proxy!.partition();
    await new Promise((r) => setTimeout(r, 400));
    expect(link.up).toBe(true);
    proxy!.heal();
  });

  it("wakes whoever waits when stopped, and listens no more", async () => {
    const { link } = await setup();
    proxy!.partition();
    await waitFor(async () => !link.up, { what: "the link to go down" });
    const waiting = link.whenUp();
    link.stop();
    await waiting;
    expect(conn!.listenerCount("close")).toBe(0);
    expect(conn!.listenerCount("ready")).toBe(0);
  });
});

describe("RedisLink: a full Redis", () => {
  const oom = () => Object.assign(new Error("OOM command not allowed when used memory > 'maxmemory'."), { name: "ReplyError" });

  it("goes down (redis-full) at a write refused with OOM, at once; the next probe, memory below the limit, brings it up", async () => {
    const { readiness } = await setup({ probeIntervalMs: 200, probeTimeoutMs: 1000 });
    await waitFor(() => link!.memory !== undefined, { what: "a first probe" });
    expect(link!.observe(oom())).toBe("full");
    expect(link!.up).toBe(false);
    expect(readiness.state.reasons).toEqual([
      { reason: "redis-full", detail: expect.stringMatching(/^Redis at redis-under-test is full: it refused a write/), since: expect.any(Number) },
    ]);
    // The shared Redis has no maxmemory: the next probe finds it below any limit.
    await link!.whenUp();
    expect(readiness.state).toEqual({ ready: true, reasons: [] });
  });

  it("tells NOGROUP and anything else apart, and goes down for neither", async () => {
    await setup();
    expect(link!.observe(new Error("NOGROUP No such key 'q' or consumer group 'g'"))).toBe("nogroup");
    expect(link!.observe(new Error("ERR wrong number of arguments"))).toBe("other");
    expect(link!.up).toBe(true);
  });

  it("reads Redis's memory at each probe", async () => {
    await setup();
    await waitFor(() => link!.memory !== undefined, { what: "a first probe" });
    expect(link!.memory!.usedBytes).toBeGreaterThan(0);
    expect(link!.memory!.maxBytes).toBe(Number((await admin.config("GET", "maxmemory"))[1]));
  });
});
