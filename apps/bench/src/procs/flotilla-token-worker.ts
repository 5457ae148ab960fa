// A Flotilla worker process of the tokens scenario: the real agent executor running scripted agents
// that stream their reply token by token (the model sleeps tokenDelayMs before each), at
// BENCH_CONCURRENCY. To see where a token's time goes before it leaves the worker, it records per
// token when the agent emitted it, when the publish script carrying it was written to Redis's
// socket and when its reply came back: the executor's `emit` is wrapped, and the worker is lent a
// command connection (with the options the worker gives its own) whose `sendCommand` is watched.
// On SIGTERM it stops, writes its samples (BENCH_SAMPLES_DIR) and exits.
import { createKeys } from "@flotilla/core";
import { agentExecutor, Worker } from "@flotilla/worker";
import { type Command, Redis } from "ioredis";
import { DELTAS, loopDelay, now, TokenSamples, tokenOf, WORKER_COLUMNS } from "../tokens-samples.ts";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = process.env.BENCH_PREFIX ?? "flotilla";
const tasks = Number(process.env.BENCH_TASKS ?? 1000);
const samples = new TokenSamples(WORKER_COLUMNS, Number(process.env.BENCH_TOKENS ?? 500), tasks);
const loop = loopDelay();
const keys = createKeys(prefix);
/** Task record key → the task's number (its input): a publish call names each task by its record. */
const taskOfKey = new Map<string, number>();

const conn = new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true, connectionName: "flotilla:command" });
const send = conn.sendCommand.bind(conn);
conn.sendCommand = (command: Command, stream?: Parameters<typeof send>[1]) => {
  // A publish call: EVALSHA (or EVAL) sha, 1, record, taskBase, streamBase, channelBase, then per task
  // name, attempt, maxLen, ttl, batchId, count and `count` events (see @flotilla/store's publish-1.lua).
  if ((command.name === "evalsha" || command.name === "eval") && taskOfKey.has(String(command.args[2]))) {
    const args = command.args;
    const taskBase = String(args[3]);
    const at = now();
    const sent: Array<[task: number, token: number]> = [];
    for (let i = 6; i < args.length; ) {
      const task = taskOfKey.get(taskBase + String(args[i]));
      const count = Number(args[i + 5]);
      for (let j = i + 6; j < i + 6 + count; j++) {
        if (task === undefined) continue;
        for (const m of String(args[j]).matchAll(DELTAS)) sent.push([task, Number(m[1])]);
      }
      i += 6 + count;
    }
    for (const [task, k] of sent) samples.set("sentAt", task, k, at);
    command.promise.then(
      () => {
        const replied = now();
        for (const [task, k] of sent) samples.set("repliedAt", task, k, replied);
      },
      () => {},
    );
  }
  return send(command, stream);
};

const inner = agentExecutor();
let started = false;
let running = 0;
/** The event loop's delay while tasks ran (taken when the last one ended: the idle wait for SIGTERM left out). */
let loopWhileRunning: ReturnType<typeof loop.summary> | undefined;
const worker = new Worker({
  redis: conn,
  prefix,
  queues: [process.env.BENCH_QUEUE ?? "tokens"],
  concurrency: Number(process.env.BENCH_CONCURRENCY ?? 500),
  executor: {
    execute(ctx) {
      if (!started) {
        started = true;
        loop.reset();
      }
      const task = Number(ctx.input);
      taskOfKey.set(keys.task(ctx.taskId), task);
      running++;
      return inner
        .execute({
          ...ctx,
          emit(event) {
            if (event.type === "text") samples.set("emitAt", task, tokenOf(event.delta), now());
            ctx.emit(event);
          },
        })
        .finally(() => {
          if (--running === 0) loopWhileRunning = loop.summary();
        });
    },
  },
  blockMs: 1000,
});
await worker.start();
process.stdout.write("ready\n");
process.on(
  "SIGTERM",
  () =>
    void worker.stop({ drainTimeoutMs: 2000 }).then(() => {
      samples.write(process.env.BENCH_SAMPLES_DIR ?? ".", process.env.BENCH_NAME ?? `worker-${process.pid}`, {
        loopDelayMs: loopWhileRunning ?? loop.summary(),
      });
      conn.disconnect();
      process.exit(0);
    }),
);
