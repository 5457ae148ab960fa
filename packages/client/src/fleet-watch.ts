import { DropOldestBuffer, type Keys, parseInput, QueueNameSchema, splitTaskId, type TaskError, type TaskStatus } from "@flotilla/core";
import { redisTime, type SubscriberHub, type Unsubscribe } from "@flotilla/core/redis";
import { FlotillaEventSchema } from "@flotilla/events";
import type { GraphClient, RunStatus, RunSummary } from "@flotilla/graph";
import { getFleetStatus, type NotReady, type WorkerState, type WorkerStatus } from "@flotilla/health";
import { listQueues, readCreatedSince, subscribeStatus, type TaskResult } from "@flotilla/store";
import type { Redis } from "ioredis";
import { z } from "zod";

/** One thing that happened in the fleet, as `client.watch()` reports it. `at` is ms since the epoch. */
export type WatchEvent =
  | { type: "task.submitted"; queue: string; taskId: string; at: number }
  | { type: "task.started"; queue: string; taskId: string; attempt: number; workerId?: string; at: number }
  | { type: "task.finished"; queue: string; taskId: string; status: "COMPLETED" | "FAILED" | "CANCELLED"; attempt: number; error?: TaskError; at: number }
  /** Any other status change: RETRYING (waits for its next attempt), WAITING (for a signal), PENDING (a signal resumed it). */
  | { type: "task.status"; queue: string; taskId: string; status: TaskStatus; attempt: number; at: number }
  | { type: "worker.joined"; workerId: string; hostname?: string; queues: string[]; state?: WorkerState; at: number }
  /** `stopped`: it left the fleet on purpose; `dead`: it stopped beating. */
  | { type: "worker.left"; workerId: string; reason: "stopped" | "dead"; at: number }
  | { type: "worker.state"; workerId: string; state: WorkerState; reasons: NotReady[]; at: number }
  | { type: "run.started"; runId: string; graph: string; at: number }
  | { type: "run.finished"; runId: string; graph: string; status: Exclude<RunStatus, "RUNNING">; at: number }
  /** The reader fell behind by more than `maxBuffered` events: this many of the oldest were dropped. */
  | { type: "watch.lagged"; dropped: number; at: number };

export const WatchOptionsSchema = z
  .object({
    /**
     * Only this queue: its tasks, and the workers that serve it; runs are left out.
     * @default every queue (those that appear later too), every worker, every graph run
     */
    queue: QueueNameSchema.optional(),
    /** How often submissions, workers and runs are read (task status changes arrive as they happen). @default 1000 */
    pollMs: z.number().int().min(50).max(60_000).default(1000),
    /** Events held for a reader that does not keep up, before the oldest are dropped. @default 10_000 */
    maxBuffered: z.number().int().min(1).default(10_000),
  })
  .strict();
export type WatchOptions = z.input<typeof WatchOptionsSchema> & {
  /** Told about a round that failed (Redis out of reach, say); the next round tries again. @default none */
  onError?: (err: unknown) => void;
};

/** What a watch needs of its client. */
export interface WatchSources {
  redis: Redis;
  keys: Keys;
  hub(): Promise<SubscriberHub>;
  graphs: GraphClient;
  /** Task records, for the status of tasks that moved before their queue's channel was subscribed. */
  records(taskIds: readonly string[]): Promise<Array<TaskResult | undefined>>;
}

interface QueueWatch {
  name: string;
  unsubscribe: Promise<Unsubscribe>;
  /** Submissions are read from this creation time on (ms), skipping the names already seen at it. */
  from: number;
  seenAtFrom: Set<string>;
  /**
   * Until its first round of submissions is read, the channel's events are held here: what the
   * round's tasks did before the channel was live is told from their records, before and after
   * what the channel said of them (see catchUp). Undefined once caught up.
   */
  held: Array<{ event: TaskWatchEvent; seq: number }> | undefined;
  /** For one round after: the round's tasks' record numbers, so a message that arrives late is not told twice. */
  late: Map<string, number>;
  /**
   * Tasks the channel spoke of before their submission was told: their events, held until a read of
   * submissions that began after the first of them (`after`: the reads begun by then) tells it, or
   * finds none (the task predates the watch). See route.
   */
  waiting: Map<string, { events: TaskWatchEvent[]; after: number }>;
  /** Reads of submissions begun so far. */
  reads: number;
  /** The read asked for and not yet begun (asking again joins it), and the last one in the chain. */
  queued: Promise<void> | undefined;
  tail: Promise<void>;
}

type TaskWatchEvent = Extract<WatchEvent, { taskId: string }>;
const ENDED = new Set(["COMPLETED", "FAILED", "CANCELLED"]);

const RUNS_PER_ROUND = 100;
const SUBMITS_PER_ROUND = 1000;
/** Tasks remembered as told (or older than the watch) at most; one forgotten costs a read when it speaks again. */
const KNOWN_TASKS = 100_000;

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
  private readonly queues = new Map<string, QueueWatch>();
  /** Tasks whose submission was told, or that were submitted before the watch: their changes are told as they come. */
  private readonly known = new Map<string, true>();
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
    await this.syncQueues();
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
      await this.syncQueues();
      for (const [queue, cursor] of this.queues) {
        // What came late from the channel after a first round is dropped for one round only.
        if (!cursor.held) cursor.late.clear();
        await this.readSoon(queue);
      }
      this.diffWorkers(await this.readWorkers());
      if (this.options.queue === undefined) await this.diffRuns();
    } catch (err) {
      this.onError?.(err);
    }
  }

  /** Subscribes the status channel of each queue watched (new queues as they appear). */
  private async syncQueues(): Promise<void> {
    const names = this.options.queue === undefined ? await listQueues(this.src.redis, this.src.keys) : [this.options.queue];
    const hub = await this.src.hub();
    for (const queue of names) {
      if (this.queues.has(queue) || this.closed) continue;
      const watch: QueueWatch = {
        name: queue,
        unsubscribe: Promise.resolve(async () => {}),
        from: this.since,
        seenAtFrom: new Set(),
        held: [],
        late: new Map(),
        waiting: new Map(),
        reads: 0,
        queued: undefined,
        tail: Promise.resolve(),
      };
      watch.unsubscribe = subscribeStatus(hub, this.src.keys, queue, (message) => this.onStatus(watch, message));
      this.queues.set(queue, watch);
      await watch.unsubscribe;
    }
  }

  private onStatus(queue: QueueWatch, message: string): void {
    let batch: unknown;
    try {
      batch = JSON.parse(message);
    } catch {
      return;
    }
    if (!Array.isArray(batch)) return;
    for (const raw of batch) {
      const parsed = FlotillaEventSchema.safeParse(raw);
      if (!parsed.success || parsed.data.type !== "status") continue;
      const e = parsed.data;
      const base = { queue: splitTaskId(e.taskId).queue, taskId: e.taskId, attempt: e.attempt, at: e.ts };
      const status = e.status.toUpperCase() as TaskStatus;
      const event: TaskWatchEvent =
        status === "RUNNING"
          ? { type: "task.started", ...base, ...(e.workerId && { workerId: e.workerId }) }
          : status === "COMPLETED" || status === "FAILED" || status === "CANCELLED"
            ? { type: "task.finished", ...base, status, ...(e.error && { error: e.error }) }
            : { type: "task.status", ...base, status };
      if (queue.held) queue.held.push({ event, seq: e.seq });
      else if (e.seq > (queue.late.get(e.taskId) ?? 0)) this.route(queue, event);
    }
  }

  /**
   * Tells a task's change now when its submission was told (or it predates the watch); else holds
   * it, with any that follow, and asks for a read of the queue's submissions, which tells the
   * submission first. The task's status was published after it was created, so a read that begins
   * after the change arrived finds it, or it was created before the watch.
   */
  private route(queue: QueueWatch, event: TaskWatchEvent): void {
    const waiting = queue.waiting.get(event.taskId);
    if (waiting) waiting.events.push(event);
    else if (this.known.has(event.taskId)) this.tell(event);
    else {
      queue.waiting.set(event.taskId, { events: [event], after: queue.reads });
      this.readSoon(queue.name).catch((err: unknown) => this.onError?.(err));
    }
  }

  /** Emits a task's event; a task that ended is forgotten (a retry of it from its dead letter is told after a read). */
  private tell(event: TaskWatchEvent): void {
    this.emit(event);
    if (event.type === "task.finished") this.known.delete(event.taskId);
  }

  private remember(taskId: string): void {
    this.known.set(taskId, true);
    if (this.known.size > KNOWN_TASKS) this.known.delete(this.known.keys().next().value!);
  }

  /** A read of the queue's submissions, one at a time per queue: a read asked for while one runs follows it; asking again before it begins joins it. */
  private readSoon(queue: string): Promise<void> {
    const cursor = this.queues.get(queue);
    if (!cursor || this.closed) return Promise.resolve();
    if (cursor.queued) return cursor.queued;
    const read = cursor.tail.then(() => {
      cursor.queued = undefined;
      return this.readSubmitted(queue);
    });
    cursor.queued = read;
    cursor.tail = read.catch(() => {});
    return read;
  }

  /**
   * Tasks created since the last round: the index read forward from the newest time seen. Then the
   * changes held for a submission to be told (see route): those that arrived before this read began
   * are told, after their submission, or as they are when the read found none (an older task).
   */
  private async readSubmitted(queue: string): Promise<void> {
    const cursor = this.queues.get(queue)!;
    const read = ++cursor.reads;
    const fresh: string[] = [];
    // Tasks of the same millisecond as the last one seen are read again and skipped by name.
    const limit = cursor.seenAtFrom.size + SUBMITS_PER_ROUND;
    const created = await readCreatedSince(this.src.redis, this.src.keys, queue, cursor.from, limit);
    for (const { taskId, createdAt } of created) {
      if (createdAt === cursor.from && cursor.seenAtFrom.has(taskId)) continue;
      if (createdAt > cursor.from) {
        cursor.from = createdAt;
        cursor.seenAtFrom = new Set();
      }
      cursor.seenAtFrom.add(taskId);
      this.remember(taskId);
      this.emit({ type: "task.submitted", queue, taskId, at: createdAt });
      fresh.push(taskId);
    }
    if (cursor.held) await this.catchUp(queue, cursor, fresh);
    // A full page may have left the rest of the new tasks for the next read.
    const complete = created.length < limit;
    let unresolved = false;
    for (const [taskId, held] of cursor.waiting) {
      if (!this.known.has(taskId) && (held.after >= read || !complete)) {
        unresolved = true;
        continue;
      }
      cursor.waiting.delete(taskId);
      this.remember(taskId);
      for (const event of held.events) this.tell(event);
    }
    if (unresolved && !this.closed) this.readSoon(queue).catch((err: unknown) => this.onError?.(err));
  }

  /**
   * The first round of a queue: its channel went live after the watch began (a queue that appeared
   * later, or the moment between the start and the subscription), so its new tasks may have moved
   * before. For each, in order: its start from the record if the channel did not say it, what the
   * channel said (held until now), then where the record stands if that is further on. Then the
   * channel's events flow as they come.
   */
  private async catchUp(queue: string, cursor: QueueWatch, taskIds: string[]): Promise<void> {
    const records = await this.src.records(taskIds);
    const held = cursor.held ?? [];
    cursor.held = undefined;
    const round = new Set(taskIds);
    for (const [i, r] of records.entries()) {
      const taskId = taskIds[i]!;
      const mine = held.filter((h) => h.event.taskId === taskId);
      if (!r) {
        for (const h of mine) this.tell(h.event);
        continue;
      }
      const heard = mine.reduce((n, h) => Math.max(n, h.seq), 0);
      const base = { queue, taskId, attempt: r.attempt };
      if (r.startedAt !== undefined && !mine.some((h) => h.event.type === "task.started")) {
        this.emit({ type: "task.started", ...base, ...(r.workerId && { workerId: r.workerId }), at: r.startedAt });
      }
      for (const h of mine) this.tell(h.event);
      if (r.seq > heard) {
        if (ENDED.has(r.status)) {
          const status = r.status as "COMPLETED" | "FAILED" | "CANCELLED";
          this.tell({ type: "task.finished", ...base, status, ...(r.error && { error: r.error }), at: r.completedAt ?? Date.now() });
        } else if (r.status !== "RUNNING" && r.status !== "PENDING") this.emit({ type: "task.status", ...base, status: r.status, at: Date.now() });
      }
      cursor.late.set(taskId, r.seq);
    }
    // Tasks from before the watch: what the channel said of them, as it said it.
    for (const h of held) {
      if (round.has(h.event.taskId)) continue;
      this.remember(h.event.taskId);
      this.tell(h.event);
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
    for (const { unsubscribe, tail } of this.queues.values()) {
      await tail;
      await unsubscribe.then((u) => u()).catch(() => {});
    }
    this.queues.clear();
  }
}
