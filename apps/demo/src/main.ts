#!/usr/bin/env node
// The Flotilla demo: two worker processes, several agent runs with the scripted model, one streamed
// to the terminal as it types, one cancelled mid-run; then the fleet and the final statuses.
// Ctrl-C (SIGINT) or SIGTERM at any point stops the workers and removes the demo's keys first.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { Agent } from "@flotilla/agent";
import { FlotillaClient, type TaskHandle } from "@flotilla/client";
import { purgePrefix, startRedisServer } from "@flotilla/testing";
import { Redis } from "ioredis";
import { answers } from "./redis-server.ts";
import { stopChild, Teardown } from "./teardown.ts";
import { CANCEL_OUTCOME, clip } from "./words.ts";
import { spawnWorker } from "./worker-process.ts";

const tty = process.stdout.isTTY;
const dim = (s: string) => (tty ? `\x1b[2m${s}\x1b[0m` : s);
const bold = (s: string) => (tty ? `\x1b[1m${s}\x1b[0m` : s);
const say = (s = "") => process.stdout.write(`${s}\n`);

const teardown = new Teardown();
const workers: ChildProcess[] = [];
/** The signal that interrupted the demo, once one has. */
let interrupted: NodeJS.Signals | undefined;

function startWorker(url: string, prefix: string, name: string): Promise<ChildProcess> {
  const { child, started } = spawnWorker(url, prefix, name);
  workers.push(child);
  return started;
}

async function main(): Promise<void> {
  let url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  if (!(await answers(url))) {
    say(dim(`No Redis answers at ${url}; starting a throwaway redis-server…`));
    const server = await startRedisServer({ aof: false });
    url = server.url;
    teardown.add(() => server.stop());
  }
  const prefix = `flotilla-demo-${randomBytes(3).toString("hex")}`;
  say(bold("Flotilla demo") + dim(`  redis ${url}  prefix ${prefix}`));
  const admin = new Redis(url);
  teardown.add(async () => {
    await purgePrefix(admin, prefix);
    admin.disconnect();
  });
  const client = new FlotillaClient({ redis: url, prefix });
  teardown.add(() => client.close());
  teardown.add(async () => {
    await Promise.all(workers.map((w) => stopChild(w, 10_000)));
  });

  await Promise.all([startWorker(url, prefix, "worker-1"), startWorker(url, prefix, "worker-2")]);
  try {
    for (let i = 0; ; i++) {
      if ((await client.fleet.status()).live === 2) break;
      if (i > 200) throw new Error("the workers did not join the fleet");
      await new Promise((r) => setTimeout(r, 50));
    }
    say(dim("Two worker processes joined the fleet.\n"));

    const writer = new Agent({
      name: "writer",
      model: "scripted:writer",
      instructions: "Explain Flotilla in one paragraph.",
      options: {
        scripted: {
          reply:
            "Flotilla runs your agents on a fleet of workers over Redis. You submit a run, any worker claims it, " +
            "and you watch every token arrive live, from any process, replaying what you missed without a gap.",
          tokenDelayMs: 25,
        },
      },
    });
    const researcher = new Agent({
      name: "researcher",
      model: "scripted:researcher",
      tools: ["weather"],
      options: {
        scripted: {
          toolCalls: [
            { name: "weather", args: { city: "Lisbon" } },
            { name: "weather", args: { city: "Oslo" } },
          ],
        },
      },
    });
    const quick = new Agent({ name: "echo", model: "scripted:echo" });
    const marathon = new Agent({ name: "marathon", model: "scripted:slow", options: { scripted: { tokenDelayMs: 200 } } });
    const flaky = new Agent({ name: "flaky", model: "scripted:flaky", options: { scripted: { failWith: "the model gave up" } } });

    const streamed = await client.submit(writer, "What is Flotilla?");
    const handles: Array<[string, TaskHandle]> = [
      ["writer", streamed],
      ["researcher", await client.submit(researcher, "Weather for my trip?", { detailed: true })],
      ...(await Promise.all([1, 2, 3, 4].map(async (i) => [`echo #${i}`, await client.submit(quick, `hello ${i}`)] as [string, TaskHandle]))),
      ["flaky", await client.submit(flaky, "try anyway")],
    ];
    const doomed = await client.submit(marathon, "a very long story ".repeat(50));
    handles.push(["marathon", doomed]);
    say(`Submitted ${handles.length} runs. Streaming ${bold("writer")} as it types:\n`);

    process.stdout.write("  ");
    for await (const event of streamed.stream()) {
      if (event.type === "text") process.stdout.write(event.delta);
    }
    say("\n");

    for await (const event of doomed.stream()) {
      if (event.type === "text") {
        const outcome = await doomed.cancel("the demo cancels the marathon");
        say(`Cancelled ${bold("marathon")} while it ran: ${CANCEL_OUTCOME[outcome.outcome]}`);
        break;
      }
    }
    const settled = await Promise.allSettled(handles.map(([, h]) => h.result({ timeoutMs: 30_000 })));
    const researchEvents = [];
    for await (const e of handles[1]![1].stream()) researchEvents.push(e);
    const toolResults = researchEvents.flatMap((e) => (e.type === "tool_result" ? [`${e.name} → ${JSON.stringify(e.result)}`] : []));
    say(`The researcher called its tools: ${toolResults.join(", ")}\n`);

    await new Promise((r) => setTimeout(r, 400)); // one more beat
    const fleet = await client.fleet.status();
    say(bold("Fleet"));
    for (const w of fleet.workers) {
      say(`  ${w.workerId.padEnd(10)} pid ${String(w.pid).padEnd(7)} ${w.alive ? "live" : "dead"}  completed ${w.completed}  failed ${w.failed}`);
    }
    say();
    say(bold("Final statuses"));
    for (const [i, [label, handle]] of handles.entries()) {
      const s = await handle.status();
      const outcome = settled[i]!;
      // What it answered, or why it did not: the task's own error (its code and message), not the exception's long message.
      const detail =
        outcome.status === "fulfilled"
          ? `"${clip((outcome.value as { text?: string }).text ?? JSON.stringify(outcome.value), 58)}"`
          : clip(s.error ? `${s.error.code}: ${s.error.message}` : (outcome.reason as Error).message, 60);
      say(
        `  ${label.padEnd(11)} ${s.status.padEnd(10)} ${String(s.workerId ?? "-").padEnd(9)} wait ${String(s.waitMs ?? "-").padStart(4)} ms  run ${String(s.durationMs ?? "-").padStart(5)} ms  ${dim(detail)}`,
      );
    }
    const counts = new Map<string, number>();
    for (const [, h] of handles) {
      const { status } = await h.status();
      counts.set(status, (counts.get(status) ?? 0) + 1);
    }
    say(`\n${[...counts].map(([s, n]) => `${n} ${s}`).join(", ")}`);
  } finally {
    await teardown.run();
  }
}

function interrupt(signal: NodeJS.Signals): void {
  if (interrupted) {
    // A second Ctrl-C: no more waiting for the workers to drain.
    for (const w of workers) w.kill("SIGKILL");
    return;
  }
  interrupted = signal;
  say(dim(`\n${signal}: stopping the workers and removing the demo's keys…`));
  void teardown.run().finally(() => process.exit(128 + (signal === "SIGINT" ? 2 : 15)));
}
process.on("SIGINT", interrupt);
process.on("SIGTERM", interrupt);

main().then(
  () => {
    if (!interrupted) process.exit(0);
  },
  (err) => {
    // Interrupted: what failed did so because the teardown closed it; the handler exits.
    if (interrupted) return;
    process.stderr.write(`demo failed: ${err?.stack ?? err}\n`);
    void teardown.run().finally(() => process.exit(1));
  },
);
