import { type JsonValue, type Message, MessageSchema, parseStored, SAFE_ID, ValidationError } from "@flotilla/core";
import { z } from "zod";

/** One stored message, with the task attempt that said it. */
export interface MemoryEntry {
  taskId: string;
  attempt: number;
  message: Message;
  /** Names the entry within its task: a writer that may repeat itself (a retried Temporal activity) is read once. */
  key?: string | undefined;
}

export const MemoryEntrySchema = z.object({
  taskId: z.string(),
  attempt: z.number().int().min(0),
  message: MessageSchema,
  key: z.string().optional(),
});

/**
 * Where conversations are kept. Entries are appended as a run goes, so a crash mid-run keeps what
 * was said. A retried task's earlier attempts are superseded: reads keep, per task, only the
 * entries of its latest attempt (see `latestAttempts`).
 */
export interface MemoryStore {
  /** Every entry of the conversation, oldest first. */
  entries(conversationId: string): Promise<MemoryEntry[]>;
  append(conversationId: string, entries: readonly MemoryEntry[]): Promise<void>;
  clear(conversationId: string): Promise<void>;
  close?(): Promise<void>;
}

/** Validates a conversation id at a boundary. */
export function checkConversationId(id: string): string {
  if (typeof id !== "string" || id.length === 0 || id.length > 200 || !SAFE_ID.test(id)) {
    throw new ValidationError("conversation id", [
      { path: "conversationId", message: `invalid conversation id "${String(id)}": use letters, digits and _ . : - only (at most 200)` },
    ]);
  }
  return id;
}

/**
 * Keeps, for each task, only the entries of its latest attempt (earlier attempts were retried), and
 * of entries with the same key in one task, the first.
 */
export function latestAttempts(entries: readonly MemoryEntry[]): MemoryEntry[] {
  const latest = new Map<string, number>();
  for (const e of entries) latest.set(e.taskId, Math.max(latest.get(e.taskId) ?? 0, e.attempt));
  const seen = new Set<string>();
  return entries.filter((e) => {
    if (e.attempt !== latest.get(e.taskId)) return false;
    if (e.key === undefined) return true;
    const id = `${e.taskId}\u0000${e.key}`;
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
}

/** The conversation as a run replays it: latest attempts only, without the given task's own (it redoes them). */
export async function loadHistory(store: MemoryStore, conversationId: string, exceptTaskId?: string): Promise<Message[]> {
  const entries = latestAttempts(await store.entries(conversationId));
  return entries.filter((e) => e.taskId !== exceptTaskId).map((e) => e.message);
}

/** Parses a stored entry; a corrupt one is a CorruptRecordError naming the conversation. */
export function parseEntry(raw: unknown, conversationId: string): MemoryEntry {
  return parseStored(MemoryEntrySchema, raw, `memory entry of conversation ${conversationId}`) as MemoryEntry;
}

export const asJson = (entry: MemoryEntry): string => JSON.stringify(entry satisfies { message: Message } as unknown as JsonValue);
