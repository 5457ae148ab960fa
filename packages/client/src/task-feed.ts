import { type Keys, splitTaskId, type TaskStatus } from "@flotilla/core";
import type { Unsubscribe } from "@flotilla/core/redis";
import { FlotillaEventSchema } from "@flotilla/events";
import { listQueues, readCreatedSince, subscribeStatus } from "@flotilla/store";
import type { TaskWatchEvent, WatchEvent, WatchSources } from "./watch-types.ts";

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

const ENDED = new Set(["COMPLETED", "FAILED", "CANCELLED"]);
const SUBMITS_PER_ROUND = 1000;
/** Tasks remembered as told (or older than the watch) at most; one forgotten costs a read when it speaks again. */
const KNOWN_TASKS = 100_000;

/**
 * The task side of a FleetWatch: each queue's submissions (read from its task index) and status
 * changes (from its status channel, as they happen), told in the order they happened. A status
 * change of a task whose submission was not told yet waits for a read of the submissions made at
 * once, which tells it first; a queue's first round tells what its new tasks did before its channel
 * was live from their records.
 */
export class TaskFeed {
  private readonly src: WatchSources;
  private readonly keys: Keys;
  /** Only this queue; every queue (those that appear later too) when undefined. */
  private readonly only: string | undefined;
  /** From when submissions are reported (Redis's clock at the watch's start). */
  private readonly since: number;
  private readonly emit: (event: WatchEvent) => void;
  private readonly onError: ((err: unknown) => void) | undefined;
  private closed = false;
  private readonly queues = new Map<string, QueueWatch>();
  /** Tasks whose submission was told, or that were submitted before the watch: their changes are told as they come. */
  private readonly known = new Map<string, true>();

  constructor(
    src: WatchSources,
    options: { queue: string | undefined; since: number; emit: (event: WatchEvent) => void; onError: ((err: unknown) => void) | undefined },
  ) {
    this.src = src;
    this.keys = src.keys;
    this.only = options.queue;
    this.since = options.since;
    this.emit = options.emit;
    this.onError = options.onError;
  }

  /** One polling round: new queues subscribed, then each queue's submissions read. */
  async poll(): Promise<void> {
    await this.syncQueues();
    for (const [queue, cursor] of this.queues) {
      // What came late from the channel after a first round is dropped for one round only.
      if (!cursor.held) cursor.late.clear();
      await this.readSoon(queue);
    }
  }

  /** Subscribes the status channel of each queue watched (new queues as they appear). */
  async syncQueues(): Promise<void> {
    const names = this.only === undefined ? await listQueues(this.src.redis, this.keys) : [this.only];
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
      watch.unsubscribe = subscribeStatus(hub, this.keys, queue, (message) => this.onStatus(watch, message));
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
    const created = await readCreatedSince(this.src.redis, this.keys, queue, cursor.from, limit);
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

  /** Stops telling; waits for the reads under way, then unsubscribes every queue's channel. */
  async close(): Promise<void> {
    this.closed = true;
    for (const { unsubscribe, tail } of this.queues.values()) {
      await tail;
      await unsubscribe.then((u) => u()).catch(() => {});
    }
    this.queues.clear();
  }
}
