// A follower process of the tokens scenario: follows its share of the tasks (task i when
// i % BENCH_OF === BENCH_INDEX; ids in the JSON array BENCH_TASKS_FILE) with `handle.stream()`, as
// an application serving the answers live would. Prints "ready" once Redis counts a subscriber on
// every one of its tasks' channels (before the tasks start). Then records per token when its
// message reached the subscriber connection and when stream() yielded it, and checks every task's
// seqs run 1, 2, … with no gap and its tokens in order. When all streams ended (or on SIGTERM: the
// scenario's deadline) it writes its samples (BENCH_SAMPLES_DIR) and prints "done"; it exits on
// SIGTERM.
import { readFileSync } from "node:fs";
import { FlotillaClient } from "@flotilla/client";
import { createKeys } from "@flotilla/core";
import { Redis } from "ioredis";
import { DELTAS, FOLLOWER_COLUMNS, loopDelay, now, TokenSamples, tokenOf } from "../tokens-samples.ts";

const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
const prefix = process.env.BENCH_PREFIX ?? "flotilla";
const ids = JSON.parse(readFileSync(process.env.BENCH_TASKS_FILE!, "utf8")) as string[];
const index = Number(process.env.BENCH_INDEX ?? 0);
const of = Number(process.env.BENCH_OF ?? 1);
const perTask = Number(process.env.BENCH_TOKENS ?? 500);
const samples = new TokenSamples(FOLLOWER_COLUMNS, perTask, ids.length);
const loop = loopDelay();
const keys = createKeys(prefix);
const mine = ids.map((id, task) => ({ id, task })).filter(({ task }) => task % of === index);
const taskOfChannel = new Map(mine.map(({ id, task }) => [keys.eventsChannel(id), task]));

// The client is lent this connection, so its subscriber is a duplicate of it: a listener put on
// that before the client's own sees each message as it comes off the socket, undecoded.
const conn = new Redis(url, { maxRetriesPerRequest: 2, connectionName: "flotilla:command" });
const duplicate = conn.duplicate.bind(conn);
conn.duplicate = (...args: Parameters<typeof duplicate>) => {
  const sub = duplicate(...args);
  sub.on("smessage", (channel: string, message: string) => {
    const task = taskOfChannel.get(channel);
    if (task === undefined) return;
    const at = now();
    for (const m of message.matchAll(DELTAS)) samples.set("arrivedAt", task, Number(m[1]), at);
  });
  return sub;
};
const client = new FlotillaClient({ redis: conn, prefix });

const tally = { tasks: mine.length, events: 0, texts: 0, outOfOrder: 0, incompleteTasks: 0 };
let finished = false;
/** Writes the samples and says "done"; the process stays (its CPU time readable) until SIGTERM. */
function finish(): void {
  if (finished) return;
  finished = true;
  samples.write(process.env.BENCH_SAMPLES_DIR ?? ".", process.env.BENCH_NAME ?? `follower-${process.pid}`, { ...tally, loopDelayMs: loop.summary() });
  process.stdout.write("done\n");
}

process.on("SIGTERM", () => {
  // Before done: the deadline passed, and what was delivered so far is the result (the rest is lost).
  finish();
  void client.close().finally(() => {
    conn.disconnect();
    process.exit(0);
  });
});

// Each stream subscribes when first asked for an event; a task's first event is its "running"
// status, so whether every follower is subscribed is asked of Redis instead.
const following = Promise.all(
  mine.map(async ({ task, id }) => {
    let last = 0;
    let next = 0;
    for await (const e of client.handle(id).stream()) {
      const at = now();
      tally.events++;
      if (e.seq !== last + 1) tally.outOfOrder++;
      last = e.seq;
      if (e.type !== "text") continue;
      // The loop's delay is watched from the first token on: the wait for the tasks to start left out.
      if (tally.texts++ === 0) loop.reset();
      const k = tokenOf(e.delta);
      if (k !== next++) tally.outOfOrder++;
      samples.set("deliveredAt", task, k, at);
      samples.set("ts", task, k, e.ts);
    }
    if (next !== perTask) tally.incompleteTasks++;
  }),
);
for (;;) {
  const counts = (await conn.call("PUBSUB", "SHARDNUMSUB", ...taskOfChannel.keys())) as Array<string | number>;
  if (counts.every((v, i) => i % 2 === 0 || Number(v) > 0)) break;
  await new Promise((r) => setTimeout(r, 20));
}
process.stdout.write("ready\n");
await following;
finish();
