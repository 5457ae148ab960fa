// The footprint benchmark's measure of what users pay: memory per finished real agent task, run by
// the flotilla-worker app itself (the other rows use a custom executor that writes no agent events).
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Agent } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { type newAdmin, redisFigures, waitUntil } from "./harness.ts";

const noop = new Agent({ name: "noop", model: "scripted:noop" });

/**
 * Memory per finished real agent task: `tasks` no-op agent tasks (`scripted:noop`) run by the
 * flotilla-worker app, INFO used_memory before and after (records and streams kept, as by default),
 * and again once their event streams are gone (deleted here, as their expiry would after eventTtlMs).
 */
export async function agentTaskBytes(
  url: string,
  prefix: string,
  admin: ReturnType<typeof newAdmin>,
  tasks: number,
): Promise<{ bytes: number; onceStreamsExpire: number }> {
  const main = fileURLToPath(new URL("../../worker/src/main.ts", import.meta.url));
  const child = spawn(process.execPath, ["--conditions=@flotilla/source", main], {
    env: { ...process.env, REDIS_URL: url, FLOTILLA_PREFIX: prefix, FLOTILLA_QUEUES: "bench", FLOTILLA_CONCURRENCY: "50", FLOTILLA_LOG_LEVEL: "warn" },
    stdio: ["ignore", "pipe", "inherit"],
  });
  const client = new FlotillaClient({ redis: url, prefix });
  try {
    // The app logs nothing below warn here: ready is when its heartbeat is in Redis.
    await waitUntil(async () => (await client.fleet.status()).workers.length > 0, 30_000, "the worker app to join the fleet");
    await (await client.submit(noop, "warm", { queue: "bench" })).result();
    const before = await redisFigures(admin);
    for (let i = 0; i < tasks; i += 500) {
      const handles = await client.submitMany(
        Array.from({ length: Math.min(500, tasks - i) }, (_, j) => ({ agent: noop, input: `hello ${i + j}`, options: { queue: "bench" } })),
      );
      await Promise.all(handles.map((h) => h.result()));
    }
    const after = await redisFigures(admin);
    // Then what is left once their event streams expire (eventTtlMs, 1 h by default; the records stay 24 h).
    for await (const found of admin.scanStream({ match: `${prefix}:stream:*`, count: 1000 })) {
      const keys = found as string[];
      if (keys.length > 0) await admin.del(...keys);
    }
    const streamsGone = await redisFigures(admin);
    return {
      bytes: Math.round((after.memory - before.memory) / tasks),
      onceStreamsExpire: Math.round((streamsGone.memory - before.memory) / tasks),
    };
  } finally {
    await client.close();
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  }
}
