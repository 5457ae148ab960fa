import { PRIORITIES, type Priority, parseJsonOr } from "@flotilla/core";
import { pairsToObject } from "./entry.ts";

/** An entry of a queue that could not be run, as its dead-letter stream keeps it. */
export interface DeadLetter {
  id: string;
  queue: string;
  /** The lane the entry came from, and goes back to when re-queued. */
  priority: Priority;
  entryId: string;
  taskId: string | undefined;
  reason: string;
  /** The entry's fields as they were in the queue. */
  fields: Record<string, string> | null;
  at: number;
  extra: Record<string, unknown>;
}

export interface DeadLetterInput {
  reason: string;
  fields: Record<string, string> | null;
  taskId?: string | undefined;
  extra?: Record<string, unknown>;
}

/** Reads one dead-letter stream entry (XRANGE row). */
export function parseDeadLetter(queue: string, [id, pairs]: [string, string[]]): DeadLetter {
  const f = pairsToObject(pairs) ?? {};
  const { priority, ...extra } = parseJsonOr(f.extra, {}) as Record<string, unknown>;
  return {
    id,
    queue,
    priority: PRIORITIES.includes(priority as Priority) ? (priority as Priority) : "normal",
    entryId: f.entryId ?? "",
    taskId: f.taskId || undefined,
    reason: f.reason ?? "",
    fields: parseJsonOr(f.fields, f.fields ?? null) as Record<string, string> | null,
    at: Number(f.at ?? 0),
    extra,
  };
}
