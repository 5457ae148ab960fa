import { type Keys, parseStored, type TaskStatus } from "@flotilla/core";
import type { Redis } from "ioredis";
import { z } from "zod";
import { optStatus } from "./replies.ts";
import { scripts } from "./scripts.ts";

/**
 * A task's inbox (`keys.inbox`, in its slot): messages sent to it while it has not ended
 * (`handle.send`), waiting for its worker's next turn boundary. The record counts them (`inbox`),
 * each publish reply says how many wait, and the run takes them all at once, so a turn with none
 * waiting costs no command.
 */

/** A message as the inbox keeps it. */
export const InboxMessageSchema = z
  .object({
    /** Its id: a resend of the same message is not added twice. */
    id: z.string().min(1).max(64),
    content: z.string(),
    /** When it was sent (ms, the sender's clock). */
    at: z.number().int(),
  })
  .strict();
export type InboxMessage = z.infer<typeof InboxMessageSchema>;

export interface SendReply {
  /** `queued`: it waits for the run; `missing`: no such task; `finished`: the task has ended (nothing written). */
  outcome: "queued" | "missing" | "finished";
  /** Messages waiting now, this one included. */
  waiting: number;
  /** How the task ended, when `finished`. */
  status: TaskStatus | undefined;
}

/** Sends `message` to the task (sendMessage-2.lua); the inbox expires `ttlMs` after its last message. */
export async function sendMessage(redis: Redis, keys: Keys, taskId: string, message: InboxMessage, ttlMs: number): Promise<SendReply> {
  const reply = (await scripts.sendMessage.run(redis, [keys.task(taskId), keys.inbox(taskId)], [JSON.stringify(message), ttlMs])) as [
    string,
    number | string | undefined,
  ];
  const [outcome, second] = reply;
  if (outcome === "queued") return { outcome, waiting: Number(second), status: undefined };
  return { outcome: outcome as "missing" | "finished", waiting: 0, status: optStatus(second) };
}

export interface TakeReply {
  messages: InboxMessage[];
  /** Entries that were not messages (written by something other than sendMessage): taken and dropped. */
  malformed: number;
}

/**
 * The attempt takes every message waiting in the task's inbox, oldest first (takeMessages-2.lua);
 * undefined when the task no longer runs as `attempt`. `takeId` (`<attempt>:<n>`, increasing) makes
 * a resend return the same messages.
 */
export async function takeMessages(redis: Redis, keys: Keys, taskId: string, attempt: number, takeId: string): Promise<TakeReply | undefined> {
  const reply = (await scripts.takeMessages.run(redis, [keys.task(taskId), keys.inbox(taskId)], [attempt, takeId])) as string[] | number;
  if (typeof reply === "number") return undefined;
  const messages: InboxMessage[] = [];
  let malformed = 0;
  for (const text of reply) {
    try {
      messages.push(parseStored(InboxMessageSchema, JSON.parse(text), `message of task ${taskId}`));
    } catch {
      malformed++;
    }
  }
  return { messages, malformed };
}
