import { CorruptRecordError, type Keys, parseStored, TaskIdSchema } from "@flotilla/core";
import type { Redis } from "ioredis";
import { z } from "zod";
import { type ResolvedScheduleSpec, ScheduleIdSchema, ScheduleSpecSchema, type TaskTemplate, TaskTemplateSchema } from "./schemas.ts";

/** A schedule as `get` and `list` report it. */
export interface ScheduleInfo {
  id: string;
  /** Its definition, defaults applied; `paused` is whether it is paused now. */
  spec: ResolvedScheduleSpec;
  /** The queue and agent of the task it fires. */
  queue: string;
  agent: string;
  /** When it fires next (ms); undefined while paused. */
  nextTickAt: number | undefined;
  /** The last tick that fired a task (ms), that task and the worker that fired it. */
  lastTickAt: number | undefined;
  lastTaskId: string | undefined;
  lastFiredBy: string | undefined;
  /** Ticks that fired a task. */
  fired: number;
  /** Ticks skipped because the previous task had not ended (overlap "skip"). */
  skipped: number;
  /** Ticks later than the catch-up window when a worker got to them: not fired. */
  missed: number;
  paused: boolean;
  createdAt: number;
  updatedAt: number;
}

/** A schedule as stored, read back for a round: its info, its template and what its compare-and-set compares. */
export interface ScheduleRecord extends ScheduleInfo {
  template: TaskTemplate;
  /** The next tick and revision exactly as stored, for the advance's compare-and-set. */
  stored: { nextTickAt: string; rev: string };
}

const Int = z
  .string()
  .regex(/^-?\d{1,16}$/, "an integer")
  .transform(Number);

/** A JSON text holding what `schema` accepts. */
function json<S extends z.ZodType>(schema: S) {
  return z
    .string()
    .transform((text, ctx) => {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        ctx.addIssue({ code: "custom", message: "not JSON" });
        return z.NEVER;
      }
    })
    .pipe(schema);
}

/** The schedule hash's fields (see the README's key table); fields it does not know are ignored. */
const StoredScheduleSchema = z.object({
  id: ScheduleIdSchema,
  spec: json(ScheduleSpecSchema),
  template: json(TaskTemplateSchema),
  rev: z.string().regex(/^\d+$/, "an integer"),
  paused: z.enum(["0", "1"]),
  nextTickAt: Int,
  lastTickAt: Int.optional(),
  lastTaskId: TaskIdSchema.optional(),
  lastFiredBy: z.string().optional(),
  fired: Int,
  skipped: Int,
  missed: Int,
  createdAt: Int,
  updatedAt: Int,
});

/**
 * A schedule hash as HGETALL returns it: undefined when there is none (an empty reply); a
 * CorruptRecordError when a field cannot be read.
 */
export function recordFromHash(id: string, hash: Record<string, string>): ScheduleRecord | undefined {
  if (Object.keys(hash).length === 0) return undefined;
  const r = parseStored(StoredScheduleSchema, hash, `schedule ${id}`);
  const paused = r.paused === "1";
  const template: TaskTemplate = r.template;
  return {
    id: r.id,
    spec: { ...r.spec, paused },
    queue: template.queue,
    agent: template.agent,
    nextTickAt: paused ? undefined : r.nextTickAt,
    lastTickAt: r.lastTickAt,
    lastTaskId: r.lastTaskId,
    lastFiredBy: r.lastFiredBy,
    fired: r.fired,
    skipped: r.skipped,
    missed: r.missed,
    paused,
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
    template,
    stored: { nextTickAt: hash.nextTickAt!, rev: r.rev },
  };
}

/** The public part of a record. */
export function infoOf(record: ScheduleRecord): ScheduleInfo {
  const { template, stored, ...info } = record;
  return info;
}

/**
 * A schedule key that holds no hash (written there by something else) is a corrupt record, as
 * Redis's WRONGTYPE reply says; other errors pass unchanged.
 */
export function notAHash(id: string): (err: unknown) => never {
  return (err) => {
    if (err instanceof Error && err.message.includes("WRONGTYPE")) throw new CorruptRecordError(`schedule ${id}`, "the key is not a hash");
    throw err;
  };
}

/**
 * The hashes of several schedules in one pipeline (all in the `{schedules}` slot), each read as
 * recordFromHash reads it: a record, undefined when there is none, or the error reading it gave
 * (a CorruptRecordError for one that cannot be read).
 */
export async function readRecords(redis: Redis, keys: Keys, ids: readonly string[]): Promise<Array<ScheduleRecord | undefined | Error>> {
  if (ids.length === 0) return [];
  const pipeline = redis.pipeline();
  for (const id of ids) pipeline.hgetall(keys.schedule(id));
  const replies = (await pipeline.exec()) ?? [];
  return ids.map((id, i) => {
    try {
      const [err, hash] = replies[i] ?? [new Error("no reply"), undefined];
      if (err) notAHash(id)(err);
      return recordFromHash(id, hash as Record<string, string>);
    } catch (err) {
      return err instanceof Error ? err : new Error(String(err));
    }
  });
}
