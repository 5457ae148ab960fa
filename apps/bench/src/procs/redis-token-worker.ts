// The tokens scenario's peer producer: plain ioredis, no task runtime. Each of its tasks (task i when
// i % BENCH_OF === BENCH_INDEX) starts at BENCH_START_AT (plus its share of BENCH_SPREAD_MS, the
// spread over which Flotilla's tasks started in the same run), then BENCH_TOKENS times sleeps
// BENCH_TOKEN_DELAY_MS and sends a text event shaped like Flotilla's: `XADD` to the task's stream
// and `SPUBLISH` to its channel, one pipeline (one round trip), not awaited, as the agent's run does
// not wait for its events either. Records the same per-token times as the Flotilla worker; on
// SIGTERM writes them (BENCH_SAMPLES_DIR) and exits.
import { setTimeout as sleep } from "node:timers/promises";
import { Redis } from "ioredis";
import { plainTaskKeys } from "../tokens-plain-keys.ts";
import { loopDelay, now, TokenSamples, WORKER_COLUMNS } from "../tokens-samples.ts";

const prefix = process.env.BENCH_PREFIX ?? "plain";
const tasks = Number(process.env.BENCH_TASKS ?? 1000);
const perTask = Number(process.env.BENCH_TOKENS ?? 500);
const delayMs = Number(process.env.BENCH_TOKEN_DELAY_MS ?? 20);
const index = Number(process.env.BENCH_INDEX ?? 0);
const of = Number(process.env.BENCH_OF ?? 1);
const startAt = Number(process.env.BENCH_START_AT ?? Date.now());
const spreadMs = Number(process.env.BENCH_SPREAD_MS ?? 0);
const samples = new TokenSamples(WORKER_COLUMNS, perTask, tasks);
const loop = loopDelay();
const redis = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");
await redis.ping();

async function run(task: number): Promise<void> {
  const { taskId, stream, channel } = plainTaskKeys(prefix, task);
  await sleep(Math.max(0, startAt + (spreadMs * task) / tasks - Date.now()));
  for (let k = 0; k < perTask; k++) {
    await sleep(delayMs);
    const emitAt = now();
    const json = JSON.stringify({ seq: k + 1, type: "text", delta: k === 0 ? `w${k}` : ` w${k}`, taskId, attempt: 1, agent: "tokens", ts: Date.now() });
    samples.set("emitAt", task, k, emitAt);
    samples.set("sentAt", task, k, now());
    void redis
      .pipeline()
      .xadd(stream, "MAXLEN", "~", String(perTask), "*", "e", json)
      .spublish(channel, json)
      .exec()
      .then(() => samples.set("repliedAt", task, k, now()));
  }
}

const mine = Array.from({ length: tasks }, (_, task) => task).filter((task) => task % of === index);
let loopWhileRunning: ReturnType<typeof loop.summary> | undefined;
let runs: Promise<unknown> = Promise.resolve();
process.on("SIGTERM", () => {
  // Normally every run has ended by now; past the scenario's deadline, what was sent is the result.
  void Promise.race([runs, sleep(2000)]).then(() => {
    samples.write(process.env.BENCH_SAMPLES_DIR ?? ".", process.env.BENCH_NAME ?? `worker-${process.pid}`, { loopDelayMs: loopWhileRunning ?? loop.summary() });
    redis.disconnect();
    process.exit(0);
  });
});
process.stdout.write("ready\n");
await sleep(Math.max(0, startAt - Date.now()));
loop.reset();
runs = Promise.all(mine.map(run)).then(() => {
  loopWhileRunning = loop.summary();
});
