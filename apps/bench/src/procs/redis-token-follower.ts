// The tokens scenario's peer follower: one plain ioredis subscriber for its share of the tasks (task
// i when i % BENCH_OF === BENCH_INDEX), `SSUBSCRIBE`d to their channels before they start (then it
// prints "ready"); parses each message (JSON.parse, the least a follower does), checks each task's
// seqs run 1, 2, … with no gap, and records the same per-token times as the Flotilla follower (here
// the parse is all the decoding there is). When every token arrived (or on SIGTERM: the scenario's
// deadline) it writes its samples (BENCH_SAMPLES_DIR) and prints "done"; it exits on SIGTERM.
import { Redis } from "ioredis";
import { plainTaskKeys } from "../tokens-plain-keys.ts";
import { FOLLOWER_COLUMNS, loopDelay, now, TokenSamples, tokenOf } from "../tokens-samples.ts";

const prefix = process.env.BENCH_PREFIX ?? "plain";
const tasks = Number(process.env.BENCH_TASKS ?? 1000);
const perTask = Number(process.env.BENCH_TOKENS ?? 500);
const index = Number(process.env.BENCH_INDEX ?? 0);
const of = Number(process.env.BENCH_OF ?? 1);
const samples = new TokenSamples(FOLLOWER_COLUMNS, perTask, tasks);
const loop = loopDelay();
const mine = Array.from({ length: tasks }, (_, task) => task).filter((task) => task % of === index);
const taskOfChannel = new Map(mine.map((task) => [plainTaskKeys(prefix, task).channel, task]));
const lastSeq = new Map(mine.map((task) => [task, 0]));
const tally = { tasks: mine.length, events: 0, texts: 0, outOfOrder: 0, incompleteTasks: 0 };
const sub = new Redis(process.env.REDIS_URL ?? "redis://127.0.0.1:6379");

let finished = false;
/** Writes the samples and says "done"; the process stays (its CPU time readable) until SIGTERM. */
function finish(): void {
  if (finished) return;
  finished = true;
  tally.incompleteTasks = [...lastSeq.values()].filter((seq) => seq !== perTask).length;
  samples.write(process.env.BENCH_SAMPLES_DIR ?? ".", process.env.BENCH_NAME ?? `follower-${process.pid}`, { ...tally, loopDelayMs: loop.summary() });
  process.stdout.write("done\n");
}
process.on("SIGTERM", () => {
  // Before done: the deadline passed, and what was delivered so far is the result (the rest is lost).
  finish();
  sub.disconnect();
  process.exit(0);
});

sub.on("smessage", (channel: string, message: string) => {
  const arrivedAt = now();
  const task = taskOfChannel.get(channel);
  if (task === undefined) return;
  const e = JSON.parse(message) as { seq: number; delta: string; ts: number };
  const deliveredAt = now();
  // The loop's delay is watched from the first token on: the wait for the tasks to start left out.
  if (tally.texts === 0) loop.reset();
  tally.events++;
  tally.texts++;
  if (e.seq !== lastSeq.get(task)! + 1) tally.outOfOrder++;
  lastSeq.set(task, e.seq);
  const k = tokenOf(e.delta);
  if (k !== e.seq - 1) tally.outOfOrder++;
  samples.set("arrivedAt", task, k, arrivedAt);
  samples.set("deliveredAt", task, k, deliveredAt);
  samples.set("ts", task, k, e.ts);
  if (tally.texts === mine.length * perTask) finish();
});
await sub.ssubscribe(...taskOfChannel.keys());
process.stdout.write("ready\n");
