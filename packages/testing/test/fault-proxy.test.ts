import net from "node:net";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type FaultProxy, onCluster, purgePrefix, redisUrl, startFaultProxy, testPrefix, testRedis } from "../src/index.ts";

describe.skipIf(onCluster())("the fault proxy", () => {
  const prefix = testPrefix("fault-proxy");
  const admin = testRedis();
  let proxy: FaultProxy;
  beforeAll(async () => {
    const target = new URL(redisUrl());
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
  });
  afterAll(async () => {
    await proxy.close();
    await purgePrefix(admin, prefix);
    await admin.quit();
  });

  it("passes commands through until armed, then drops exactly one reply after Redis ran the command", async () => {
    const counter = `${prefix}:counter`;
    const client = new Redis(proxy.url, { maxRetriesPerRequest: 5 });
    let reconnects = 0;
    client.on("reconnecting", () => reconnects++);
    try {
      expect(await client.incr(counter)).toBe(1);
      proxy.dropReplyAfter([counter], ":2\r\n");
      // Redis runs INCR (2); its reply is lost with the connection; ioredis reconnects and resends (3).
      expect(await client.incr(counter)).toBe(3);
      expect(proxy.drops).toBe(1);
      expect(reconnects).toBe(1);
      // One-shot: the same request and reply pass now.
      await client.set(counter, "1");
      expect(await client.incr(counter)).toBe(2);
      expect(await client.incr(counter)).toBe(3);
      expect(proxy.drops).toBe(1);
      expect(await admin.get(counter)).toBe("3");
    } finally {
      client.disconnect();
    }
  });

  it("finds a request and a reply split over several reads", async () => {
    const key = `${prefix}:split-request-marker`;
    await admin.set(key, "x".repeat(20));
    const before = proxy.drops;
    proxy.dropReplyAfter([key], "xxxxxxxxxx");
    const socket = net.connect(proxy.port, "127.0.0.1");
    let received = "";
    socket.on("data", (d) => {
      received += d.toString();
    });
    const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
    const command = `*2\r\n$3\r\nGET\r\n$${key.length}\r\n${key}\r\n`;
    const cut = command.indexOf(key) + 8; // inside the key name
    socket.write(command.slice(0, cut));
    await new Promise((r) => setTimeout(r, 100));
    socket.write(command.slice(cut));
    await Promise.race([closed, new Promise((r) => setTimeout(r, 2000))]);
    socket.destroy();
    expect(received).toBe("");
    expect(proxy.drops).toBe(before + 1);
  });

  it("rejects an empty fault", () => {
    expect(() => proxy.dropReplyAfter([], "x")).toThrow();
    expect(() => proxy.dropReplyAfter(["x"], "")).toThrow();
  });
});
