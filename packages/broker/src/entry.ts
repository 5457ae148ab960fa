import { type Priority, TaskNameSchema, taskIdOf } from "@flotilla/core";
import { z } from "zod";

/** A queue entry as workers read it: just the name of the task (within the queue) whose record holds the payload. */
export const QueueEntryFieldsSchema = z.object({ task: TaskNameSchema }).strict();

/** One priority lane of a queue: a stream of its own. */
export interface Lane {
  queue: string;
  priority: Priority;
}

export interface RawEntry extends Lane {
  entryId: string;
  /** Field/value pairs as stored; null when the entry was deleted while pending. */
  fields: Record<string, string> | null;
}

export type ParsedEntry =
  | (Lane & { ok: true; entryId: string; name: string; taskId: string })
  | (Lane & { ok: false; entryId: string; reason: string; fields: Record<string, string> | null });

export function parseEntry(raw: RawEntry): ParsedEntry {
  const { queue, priority, entryId, fields } = raw;
  if (!fields) return { ok: false, queue, priority, entryId, reason: "entry has no fields", fields };
  const parsed = QueueEntryFieldsSchema.safeParse(fields);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.length ? issue.path.join(".") : "entry";
    return { ok: false, queue, priority, entryId, reason: `malformed queue entry: ${where}: ${issue?.message ?? "invalid"}`, fields };
  }
  return { ok: true, queue, priority, entryId, name: parsed.data.task, taskId: taskIdOf(queue, parsed.data.task) };
}

export function pairsToObject(pairs: string[] | null | undefined): Record<string, string> | null {
  if (!pairs) return null;
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < pairs.length; i += 2) out[pairs[i]!] = pairs[i + 1]!;
  return out;
}
