import { type Keys, splitTaskId, type TaskStatus, taskIdOf } from "@flotilla/core";
import type { Redis } from "ioredis";
import { decodeCursor, encodeCursor, type Position } from "./cursor.ts";
import { listQueues } from "./readers.ts";
import type { TaskResult } from "./record.ts";

export interface ListTasksOptions {
  status?: TaskStatus | undefined;
  queue?: string | undefined;
  /** @default 50 */
  limit?: number | undefined;
  /** From the previous page's `nextCursor`. */
  cursor?: string | undefined;
}

export interface TaskPage {
  tasks: TaskResult[];
  /** Undefined on the last page. */
  nextCursor: string | undefined;
}

interface IndexRow extends Position {
  queue: string;
}

const newer = (a: Position, b: Position) => a.score > b.score || (a.score === b.score && a.id > b.id);

/** Reads one queue's index newest first, in pages, after a cursor position. */
class IndexReader {
  private readonly redis: Redis;
  private readonly key: string;
  private readonly queue: string;
  private readonly after: Position | undefined;
  private readonly page: number;
  private offset = 0;
  private buffer: IndexRow[] = [];
  private done = false;

  constructor(redis: Redis, key: string, queue: string, after: Position | undefined, page: number) {
    this.redis = redis;
    this.key = key;
    this.queue = queue;
    this.after = after;
    this.page = page;
  }

  async peek(): Promise<IndexRow | undefined> {
    while (this.buffer.length === 0 && !this.done) {
      const max = this.after ? String(this.after.score) : "+inf";
      const rows = await this.redis.zrange(this.key, max, "-inf", "BYSCORE", "REV", "LIMIT", this.offset, this.page, "WITHSCORES");
      this.offset += rows.length / 2;
      if (rows.length / 2 < this.page) this.done = true;
      for (let i = 0; i < rows.length; i += 2) {
        const row = { queue: this.queue, id: taskIdOf(this.queue, rows[i]!), score: Number(rows[i + 1]) };
        if (this.after && row.score === this.after.score && row.id >= this.after.id) continue;
        this.buffer.push(row);
      }
    }
    return this.buffer[0];
  }

  take(): IndexRow {
    return this.buffer.shift()!;
  }
}

/**
 * Tasks newest first across the queues' indexes (merged), filtered by status and queue. Records
 * that expired are dropped from their index as they are met.
 */
export async function listTasks(
  redis: Redis,
  keys: Keys,
  getMany: (ids: readonly string[]) => Promise<Array<TaskResult | undefined>>,
  options: ListTasksOptions,
): Promise<TaskPage> {
  const limit = Math.max(1, Math.min(options.limit ?? 50, 1000));
  const queues = options.queue ? [options.queue] : await listQueues(redis, keys);
  const after = decodeCursor(options.cursor);
  const batch = Math.max(limit * 2, 100);
  const budget = Math.max(limit * 20, 2000); // entries scanned per call when filters reject most
  const sources = queues.map((queue) => new IndexReader(redis, keys.taskIndex(queue), queue, after, batch));
  const tasks: TaskResult[] = [];
  let scanned = 0;
  let last: Position | undefined;
  for (;;) {
    // The newest `batch` rows across every queue's index, merged.
    const rows: IndexRow[] = [];
    while (rows.length < batch) {
      const heads = await Promise.all(sources.map((s) => s.peek()));
      let best = -1;
      for (let i = 0; i < heads.length; i++) {
        const h = heads[i];
        if (h && (best < 0 || newer(h, heads[best]!))) best = i;
      }
      if (best < 0) break;
      rows.push(sources[best]!.take());
    }
    if (rows.length === 0) return { tasks, nextCursor: undefined };
    const records = await getMany(rows.map((r) => r.id));
    const gone = new Map<string, string[]>();
    for (let i = 0; i < rows.length; i++) {
      const record = records[i];
      const row = rows[i]!;
      last = { score: row.score, id: row.id };
      scanned++;
      if (!record) {
        gone.set(row.queue, [...(gone.get(row.queue) ?? []), splitTaskId(row.id).name]);
      } else if ((!options.status || record.status === options.status) && (!options.queue || record.queue === options.queue)) {
        tasks.push(record);
        if (tasks.length === limit) break;
      }
    }
    for (const [queue, names] of gone) await redis.zrem(keys.taskIndex(queue), ...names);
    if (tasks.length === limit || scanned >= budget) return { tasks, nextCursor: last && encodeCursor(last) };
  }
}
