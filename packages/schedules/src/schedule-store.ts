import { FlotillaError, type Keys, parseInput, SAFE_ID, ValidationError } from "@flotilla/core";
import type { Redis } from "ioredis";
import { infoOf, notAHash, readRecords, recordFromHash, type ScheduleInfo, type ScheduleRecord } from "./record.ts";
import { ScheduleIdSchema, type ScheduleSpec, ScheduleSpecSchema, type TaskTemplate, TaskTemplateSchema } from "./schemas.ts";
import { scripts } from "./scripts.ts";
import { type Cadence, tickClock } from "./ticks.ts";

/** What `create` did. */
export interface CreateResult {
  id: string;
  /** true: a new schedule; false: the one with that id was replaced (its counters and last fired tick kept). */
  created: boolean;
  /** When it fires first (ms, on Redis's clock); undefined when created paused. */
  nextTickAt: number | undefined;
}

/** A read-then-write that lost to concurrent changes this many times in a row gives up. */
const MAX_TRIES = 10;

/** Script replies meaning "the schedule changed since you read it". */
const CHANGED = -1;

/**
 * Schedules in Redis: one hash per schedule and the due set ordering them by next tick, both in
 * the `{schedules}` slot, written only by this package's scripts. Firing them is the Scheduler's job.
 */
export class ScheduleStore {
  private readonly redis: Redis;
  private readonly keys: Keys;

  constructor(redis: Redis, keys: Keys) {
    this.redis = redis;
    this.keys = keys;
  }

  /**
   * Creates a schedule, or replaces the one with the same id (an upsert): its definition and template
   * change, its counters, last fired tick and creation time (an interval's anchor) stay. The next tick
   * is computed afresh from now on Redis's clock. A bad spec or template is a ValidationError naming
   * the field.
   */
  async create(spec: ScheduleSpec, template: TaskTemplate): Promise<CreateResult> {
    const { paused, ...definition } = parseInput(ScheduleSpecSchema, spec, "schedule");
    const task = parseInput(TaskTemplateSchema, template, "schedule template");
    const key = this.keys.schedule(definition.id);
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      // The stored hash is not parsed: create replaces a schedule that cannot be read.
      const [now, { rev, createdAt }] = await this.readWithClock(key, definition.id);
      // A new schedule is anchored now; a replaced one keeps its anchor (as the script keeps an integer createdAt).
      const anchor = createdAt !== undefined && /^-?\d+$/.test(createdAt) ? Number(createdAt) : now;
      const next = this.nextAfter(definition, anchor, now);
      const reply = await scripts.upsert
        .run(
          this.redis,
          [key, this.keys.schedulesDue()],
          [definition.id, JSON.stringify(definition), JSON.stringify(task), paused ? "1" : "0", next, now, rev ?? ""],
        )
        .catch(notAHash(definition.id));
      if (reply !== CHANGED) return { id: definition.id, created: reply === 1, nextTickAt: paused ? undefined : next };
    }
    throw contended(definition.id);
  }

  /** The schedule, or undefined when there is none. A record that cannot be read is a CorruptRecordError. */
  async get(id: string): Promise<ScheduleInfo | undefined> {
    const record = await this.record(id);
    return record && infoOf(record);
  }

  /** The schedule as stored, template included. */
  private async record(id: string): Promise<ScheduleRecord | undefined> {
    const key = this.keys.schedule(parseInput(ScheduleIdSchema, id, "schedule id"));
    return recordFromHash(id, await this.redis.hgetall(key).catch(notAHash(id)));
  }

  /**
   * Every schedule, the next to fire first and the paused ones last: the due set lists them all (a
   * paused one at +inf), so no key scan is needed. A record that cannot be read is a CorruptRecordError.
   */
  async list(): Promise<ScheduleInfo[]> {
    // An id no schedule can have (written there by something else) is not listed.
    const ids = (await this.redis.zrange(this.keys.schedulesDue(), "0", "-1")).filter((id) => SAFE_ID.test(id));
    return (await readRecords(this.redis, this.keys, ids)).flatMap((record) => {
      if (record instanceof Error) throw record;
      return record ? [infoOf(record)] : [];
    });
  }

  /** Pauses a schedule: it fires nothing until resumed. false when there is no such schedule. */
  async pause(id: string): Promise<boolean> {
    const key = this.keys.schedule(parseInput(ScheduleIdSchema, id, "schedule id"));
    return (await scripts.pause.run(this.redis, [key, this.keys.schedulesDue()], [id, ""]).catch(notAHash(id))) === 1;
  }

  /**
   * Resumes a paused schedule at its next tick after now: the ticks that passed while it was paused
   * are not fired (no burst). A schedule that is not paused is left as it is. false when there is no
   * such schedule.
   */
  async resume(id: string): Promise<boolean> {
    const key = this.keys.schedule(parseInput(ScheduleIdSchema, id, "schedule id"));
    for (let tries = 0; tries < MAX_TRIES; tries++) {
      const [now, hash] = await this.readWithClock(key, id);
      const record = recordFromHash(id, hash);
      if (!record) return false;
      if (!record.paused) return true;
      const next = this.nextAfter(record.spec, record.createdAt, now);
      const reply = await scripts.resume.run(this.redis, [key, this.keys.schedulesDue()], [id, record.stored.rev, next, now]).catch(notAHash(id));
      if (reply !== CHANGED) return reply === 1;
    }
    throw contended(id);
  }

  /** Deletes a schedule (tasks it fired are left alone). false when there is no such schedule. */
  async delete(id: string): Promise<boolean> {
    const key = this.keys.schedule(parseInput(ScheduleIdSchema, id, "schedule id"));
    return (await scripts.remove.run(this.redis, [key, this.keys.schedulesDue()], [id]).catch(notAHash(id))) === 1;
  }

  /** Redis's clock (ms) and a schedule's hash (empty when there is none), read together. */
  private async readWithClock(key: string, id: string): Promise<[number, Record<string, string>]> {
    const replies = (await this.redis.pipeline().time().hgetall(key).exec()) ?? [];
    const [[timeErr, time] = [], [readErr, hash] = []] = replies;
    if (timeErr) throw timeErr;
    if (readErr) notAHash(id)(readErr);
    const [seconds, micros] = time as [string, string];
    return [Number(seconds) * 1000 + Math.floor(Number(micros) / 1000), hash as Record<string, string>];
  }

  private nextAfter(cadence: Cadence, anchor: number, now: number): number {
    const next = tickClock(cadence, anchor).after(now);
    // Checked at create; only a pattern running out (croner stops at the year 3000) gets here.
    if (next === undefined) throw ValidationError.of("schedule", "cron", `no tick after ${new Date(now).toISOString()}`);
    return next;
  }
}

/** The error code of a write that lost to concurrent changes of the same schedule MAX_TRIES times in a row. */
export const SCHEDULE_CONTENDED = "SCHEDULE_CONTENDED";

function contended(id: string): FlotillaError {
  return new FlotillaError(SCHEDULE_CONTENDED, `schedule ${id} kept changing while being written (${MAX_TRIES} tries): try again`, { retryable: true });
}
