import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { FlotillaClient } from "@flotilla/client";
import { type OpenAIServer, purgePrefix, startOpenAIServer, testConnection, testPrefix, testRedis, testRedisEnv, waitFor } from "@flotilla/testing";
import { afterAll, beforeAll } from "vitest";

const main = fileURLToPath(new URL("../src/main.ts", import.meta.url));

/**
 * A flotilla-worker process on the test Redis (or cluster) with a module of its own (a fixture
 * under ./fixtures), logging errors only; `env` adds or overrides settings.
 */
export function spawnApp(options: { prefix: string; fixture: string; workerId: string; env?: Record<string, string> }): ChildProcess {
  return spawn(process.execPath, ["--conditions=@flotilla/source", main], {
    env: {
      ...process.env,
      ...testRedisEnv(),
      FLOTILLA_PREFIX: options.prefix,
      FLOTILLA_MODULE: fileURLToPath(new URL(`./fixtures/${options.fixture}`, import.meta.url)),
      FLOTILLA_WORKER_ID: options.workerId,
      FLOTILLA_LOG_LEVEL: "error",
      ...options.env,
    },
    stdio: "ignore",
  });
}

/**
 * Three flotilla-worker processes (10 slots each) of one fixture on a prefix of their own, with a
 * local OpenAI-compatible server they call (`FLOTILLA_PROVIDER_LOCAL_BASE_URL`: models `local:…`).
 * `start(fixture, idPrefix, envOf?)` spawns them and waits until the fleet lists all three; `spawned`
 * takes any other process to kill. Everything is killed and cleaned up after the file.
 */
export function useModelFleet(name: string) {
  const prefix = testPrefix(name);
  const redis = testRedis();
  const client = new FlotillaClient({ redis: testConnection(), prefix });
  const children: ChildProcess[] = [];
  let server: OpenAIServer | undefined;
  beforeAll(async () => {
    server = await startOpenAIServer();
  });
  afterAll(async () => {
    for (const c of children) c.kill("SIGKILL");
    await client.close();
    await server?.close();
    await purgePrefix(redis, prefix);
    await redis.quit();
  });
  return {
    client,
    get server(): OpenAIServer {
      return server!;
    },
    spawned(child: ChildProcess): ChildProcess {
      children.push(child);
      return child;
    },
    async start(fixture: string, idPrefix: string, envOf: (i: number) => Record<string, string> = () => ({})): Promise<void> {
      for (let i = 0; i < 3; i++) {
        const env = { FLOTILLA_CONCURRENCY: "10", FLOTILLA_PROVIDER_LOCAL_BASE_URL: server!.baseURL, ...envOf(i) };
        children.push(spawnApp({ prefix, fixture, workerId: `${idPrefix}-${i}`, env }));
      }
      await waitFor(async () => (await client.fleet.status()).workers.filter((w) => w.workerId.startsWith(`${idPrefix}-`)).length === 3, {
        timeoutMs: 20_000,
      });
    },
  };
}
