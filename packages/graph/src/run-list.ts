import type { Keys } from "@flotilla/core";
import type { Redis } from "ioredis";
import { z } from "zod";
import type { RunStatus, RunStore, RunSummary } from "./run-store.ts";

export const ListRunsOptionsSchema = z
  .object({
    status: z.enum(["RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]).optional(),
    /** Only runs of this graph (its name). */
    graph: z.string().optional(),
    /** @default 50 */
    limit: z.number().int().min(1).max(1000).default(50),
    /** Where the previous page ended. */
    cursor: z
      .string()
      .regex(/^\d+\.\d+$/)
      .optional(),
  })
  .strict();
export type ListRunsOptions = z.input<typeof ListRunsOptionsSchema>;

export interface RunPage {
  runs: RunSummary[];
  /** Pass it back for the next page; absent on the last one. */
  cursor?: string;
}

/** Runs read per page at most while filtering, before a page is returned short (its cursor goes on). */
const SCAN_PAGES = 10;

/**
 * Runs newest first, from the runs index (start time), filtered by status and graph. A run whose
 * record expired is dropped from the index as it is met. The cursor is the start time of the last
 * run seen and how many runs of that same millisecond were seen, so runs started meanwhile never
 * shift a page.
 */
export async function listRuns(redis: Redis, keys: Keys, runs: RunStore, options: z.output<typeof ListRunsOptionsSchema>): Promise<RunPage> {
  const index = keys.graphRuns();
  let [max, same] = options.cursor ? options.cursor.split(".").map(Number) : [Number.POSITIVE_INFINITY, 0];
  const out: RunSummary[] = [];
  const matches = (r: RunSummary) =>
    (options.status === undefined || r.status === (options.status as RunStatus)) && (options.graph === undefined || r.graph === options.graph);
  for (let pages = 0; pages < SCAN_PAGES && out.length < options.limit; pages++) {
    const flat = await redis.zrevrangebyscore(index, max === Number.POSITIVE_INFINITY ? "+inf" : max!, "-inf", "WITHSCORES", "LIMIT", same!, options.limit);
    if (flat.length === 0) return { runs: out };
    const ids: string[] = [];
    const scores: number[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      ids.push(flat[i]!);
      scores.push(Number(flat[i + 1]));
    }
    const summaries = await runs.summaries(ids);
    const gone = ids.filter((_, i) => summaries[i] === undefined);
    if (gone.length > 0) await redis.zrem(index, ...gone);
    for (const [i, summary] of summaries.entries()) {
      // Runs dropped from the index above are not counted: the next page's offset skips only what is still there.
      if (summary === undefined && scores[i] === max) continue;
      same = scores[i] === max ? same! + 1 : summary === undefined ? 0 : 1;
      max = scores[i]!;
      if (summary && matches(summary)) out.push(summary);
      if (out.length === options.limit) return { runs: out, cursor: `${max}.${same}` };
    }
    if (ids.length < options.limit) return { runs: out };
  }
  return { runs: out, cursor: `${max}.${same}` };
}
