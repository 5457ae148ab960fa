// Shared by the examples: a worker and a client on a prefix of their own, and the model to use.
import type { Tool } from "@flotilla/agent";
import { FlotillaClient } from "@flotilla/client";
import { purgePrefix } from "@flotilla/testing";
import { Worker } from "@flotilla/worker";
import { Redis } from "ioredis";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";

/**
 * The model the examples run: FLOTILLA_EXAMPLE_MODEL if set, else a real provider when its key is
 * set, else the offline scripted model (then each agent's `scripted` option says what it does).
 */
export function exampleModel(): string {
  if (process.env.FLOTILLA_EXAMPLE_MODEL) return process.env.FLOTILLA_EXAMPLE_MODEL;
  if (process.env.OPENAI_API_KEY) return "openai:gpt-4.1-mini";
  if (process.env.ANTHROPIC_API_KEY) return "anthropic:claude-haiku-4-5";
  return "scripted:example";
}

/** Starts a worker with `tools` and a client; `done()` stops both and removes the example's keys. */
export async function startFleet(tools: Record<string, Tool>) {
  const prefix = `flotilla-example-${process.pid}`;
  const worker = new Worker({ redis: url, prefix, tools, concurrency: 4 });
  await worker.start();
  const client = new FlotillaClient({ redis: url, prefix });
  return {
    client,
    async done() {
      await client.close();
      await worker.stop();
      const redis = new Redis(url);
      await purgePrefix(redis, prefix);
      redis.disconnect();
    },
  };
}
