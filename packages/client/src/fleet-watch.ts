import { DropOldestBuffer, parseInput } from "@flotilla/core";
import { redisTime } from "@flotilla/core/redis";
import type { RunStatus, RunSummary } from "@flotilla/graph";
import { getFleetStatus, type WorkerStatus } from "@flotilla/health";
import type { z } from "zod";
import { TaskFeed } from "./task-feed.ts";
import { type WatchEvent, type WatchOptions, WatchOptionsSchema, type WatchSources } from "./watch-types.ts";

export { type WatchEvent, type WatchOptions, WatchOptionsSchema, type WatchSources } from "./watch-types.ts";

const RUNS_PER_ROUND = 100;

/**
 * A live feed of the fleet's lifecycle: tasks submitted, started and finished, workers joining,
 * leaving and changing state, graph runs starting and finishing — from now on (no replay: list
 * tasks or runs for what came before). Status changes come from the queues' status channels as
 * they happen; submissions (from the queues' task index), workers (their heartbeats) and runs are
 * read every `pollMs`, so they are up to that late. A task's events come in the order they
 * happened: a status change of a task whose submission was not told yet waits for a read of the
 * submissions made at once, which tells it first. Read it with `for await` (one reader); `close()` ends it.
 */
export class FleetWatch implements AsyncIterable<WatchEvent> {
  /** Resolves once the feed is live: channels subscribed and the fleet's present state read. */
  readonly ready: Promise<void>;
  private readonly src: WatchSources;
  private readonly options: z.output<typeof WatchOptionsSchema>;
  private readonly onError: ((err: unknown) => void) | undefined;
  private readonly buffer: DropOldestBuffer<WatchEvent>;
  private closed = false;
  private timer: NodeJS.Timeout | undefined;
  private round: Promise<void> | undefined;
  /** From when submissions are reported (Redis's clock at the start). */
  private since = 0;
  /** Tasks submitted and changing status, per queue; made once Redis's clock is read. */
  private tasks: TaskFeed | undefined;
  /** The live workers at the last round. */
  private workers = new Map<string, WorkerStatus>();
  /** Runs seen and their status; finished ones are forgotten once they leave the newest page. */
  private runs = new Map<string, RunStatus>();

  constructor(src: WatchSources, options: WatchOptions = {}) {
    this.src = src;
    const { onError, ...rest } = options;
    this.options = parseInput(WatchOptionsSchema, rest, "watch options");
    this.onError = onError;
    this.buffer = new DropOldestBuffer<WatchEvent>(this.options.maxBuffered, (dropped) => ({ type: "watch.lagged", dropped, at: Date.now() }));
    this.ready = this.start();
    this.ready.catch(() => {});
  }

  private async start(): Promise<void> {
    this.since = await redisTime(this.src.redis);
    const emit = (event: WatchEvent) => this.emit(event);
    this.tasks = new TaskFeed(this.src, { queue: this.options.queue, since: this.since, emit, onError: this.onError });
    await this.tasks.syncQueues();
    this.workers = (await this.readWorkers()).live;
    if (this.options.queue === undefined) for (const run of await this.latestRuns()) this.runs.set(run.runId, run.status);
    if (this.closed) return;
    this.timer = setInterval(() => {
      this.round ??= this.poll().finally(() => {
        this.round = undefined;
      });
    }, this.options.pollMs);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      await this.tasks?.poll();
      this.diffWorkers(await this.readWorkers());
      if (this.options.queue === undefined) await this.diffRuns();
    } catch (err) {
      this.onError?.(err);
    }
  }

  /** The live workers (of the queue watched), and every worker the fleet still lists (live or dead). */
  private async readWorkers(): Promise<{ live: Map<string, WorkerStatus>; listed: Set<string> }> {
    const fleet = await getFleetStatus(this.src.redis, this.src.keys);
    const q = this.options.queue;
    const live = fleet.workers.filter((w) => w.alive && (q === undefined || (w.queues ?? []).includes(q)));
    return { live: new Map(live.map((w) => [w.workerId, w])), listed: new Set(fleet.workers.map((w) => w.workerId)) };
  }

  private diffWorkers({ live: now, listed }: { live: Map<string, WorkerStatus>; listed: Set<string> }): void {
    const at = Date.now();
    for (const [id, w] of now) {
      const before = this.workers.get(id);
      if (!before) {
        this.emit({
          type: "worker.joined",
          workerId: id,
          ...(w.hostname && { hostname: w.hostname }),
          queues: w.queues ?? [],
          ...(w.state && { state: w.state }),
          at,
        });
      } else if (w.state && w.state !== before.state) {
        this.emit({ type: "worker.state", workerId: id, state: w.state, reasons: w.reasons ?? [], at });
      }
    }
    for (const id of this.workers.keys()) {
      if (now.has(id)) continue;
      // A clean stop takes the worker off the fleet's list at once; a dead one stays listed, its beat getting old.
      this.emit({ type: "worker.left", workerId: id, reason: listed.has(id) ? "dead" : "stopped", at });
    }
    this.workers = now;
  }

  private async latestRuns(): Promise<RunSummary[]> {
    return (await this.src.graphs.listRuns({ limit: RUNS_PER_ROUND })).runs;
  }

  private async diffRuns(): Promise<void> {
    const latest = await this.latestRuns();
    const inPage = new Set(latest.map((r) => r.runId));
    // Runs still open that left the newest page are asked for directly.
    const open = [...this.runs].filter(([id, status]) => status === "RUNNING" && !inPage.has(id)).map(([id]) => id);
    const older = open.length > 0 ? await this.src.graphs.summaries(open) : [];
    for (const run of [...latest, ...older]) {
      if (run === undefined) continue;
      const known = this.runs.get(run.runId);
      if (known === undefined && run.createdAt >= this.since) this.emit({ type: "run.started", runId: run.runId, graph: run.graph, at: run.createdAt });
      if (known === undefined && run.createdAt < this.since) {
        // Started before the watch: only its end is news.
        this.runs.set(run.runId, run.status);
        continue;
      }
      if (run.status !== "RUNNING" && known !== run.status) {
        this.emit({ type: "run.finished", runId: run.runId, graph: run.graph, status: run.status, at: run.endedAt ?? Date.now() });
      }
      this.runs.set(run.runId, run.status);
    }
    for (const [id, status] of this.runs) if (status !== "RUNNING" && !inPage.has(id)) this.runs.delete(id);
    for (const [i, id] of open.entries()) if (older[i] === undefined) this.runs.delete(id);
  }

  private emit(event: WatchEvent): void {
    if (!this.closed) this.buffer.push(event);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<WatchEvent> {
    await this.ready;
    yield* this.buffer;
  }

  /** Ends the feed: unsubscribes, stops reading; a `for await` over it ends once it has read what came before. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.timer);
    this.buffer.close();
    await this.ready.catch(() => {});
    await this.round;
    await this.tasks?.close();
  }
}
