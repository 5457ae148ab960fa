// @cluster: conversation memory in Redis: a conversation's keys in one slot
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CorruptRecordError, createKeys, ValidationError } from "@flotilla/core";
import { purgePrefix, testPrefix, testRedis } from "@flotilla/testing";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { PostgresMemoryStore } from "../src/postgres-store.ts";
import { RedisMemoryStore } from "../src/redis-store.ts";
import { SqliteMemoryStore } from "../src/sqlite-store.ts";
import { loadHistory, type MemoryEntry, type MemoryStore } from "../src/store.ts";

const redis = testRedis();
const prefix = testPrefix("memory");
const dir = mkdtempSync(join(tmpdir(), "flotilla-memory-"));
// The machine's PostgreSQL (trust auth, database "test"); a table of this run's own.
const table = `flotilla_test_${prefix.replace(/\W/g, "_").toLowerCase()}`.slice(0, 60);
const pool = new pg.Pool({ host: "127.0.0.1", port: 5432, user: process.env.PGUSER ?? "postgres", database: "test" });

const stores: Array<[string, MemoryStore]> = [
  ["redis", new RedisMemoryStore(redis, { prefix })],
  ["sqlite", new SqliteMemoryStore(join(dir, "memory.db"))],
  ["postgres", new PostgresMemoryStore({ pool, table })],
];

afterAll(async () => {
  for (const [, s] of stores) await s.close?.();
  await pool.query(`DROP TABLE IF EXISTS ${table}`);
  await pool.end();
  rmSync(dir, { recursive: true, force: true });
  await purgePrefix(redis, prefix);
  await redis.quit();
});

const entry = (taskId: string, attempt: number, content: string, role: "user" | "assistant" = "user"): MemoryEntry => ({
  taskId,
  attempt,
  message: { role, content },
});

describe.each(stores)("%s memory store", (name, store) => {
  it("keeps a conversation in order, reads it back and clears it", async () => {
    const id = `conv-${name}-1`;
    await store.append(id, [entry("q/t1", 1, "hello"), entry("q/t1", 1, "hi there", "assistant")]);
    await store.append(id, [
      entry("q/t2", 1, "and again"),
      { taskId: "q/t2", attempt: 1, message: { role: "tool", toolCallId: "c1", name: "search", content: { hits: 2 }, isError: false } },
    ]);
    expect((await store.entries(id)).map((e) => e.message)).toEqual([
      { role: "user", content: "hello" },
      { role: "assistant", content: "hi there" },
      { role: "user", content: "and again" },
      { role: "tool", toolCallId: "c1", name: "search", content: { hits: 2 }, isError: false },
    ]);
    expect(await store.entries(`conv-${name}-other`)).toEqual([]);
    await store.clear(id);
    expect(await store.entries(id)).toEqual([]);
  });

  it("replays only a task's latest attempt, and leaves out the task that is loading", async () => {
    const id = `conv-${name}-2`;
    await store.append(id, [entry("q/a", 1, "first question"), entry("q/a", 1, "first answer", "assistant")]);
    // Task b's first attempt crashed half-way; its second attempt said it all again.
    await store.append(id, [entry("q/b", 1, "second question")]);
    await store.append(id, [entry("q/b", 2, "second question"), entry("q/b", 2, "second answer", "assistant")]);
    expect((await loadHistory(store, id)).map((m) => m.content)).toEqual(["first question", "first answer", "second question", "second answer"]);
    // Task b running a third attempt: it redoes its own part.
    expect((await loadHistory(store, id, "q/b")).map((m) => m.content)).toEqual(["first question", "first answer"]);
  });

  it("refuses a conversation id that is not safe", async () => {
    await expect(store.entries("no spaces please")).rejects.toBeInstanceOf(ValidationError);
  });
});

describe("corrupt memory", () => {
  it("reports an entry that is not a message as a CorruptRecordError", async () => {
    await redis.rpush(createKeys(prefix).memory("conv-bad"), JSON.stringify({ taskId: "q/x", attempt: 1, message: { role: "robot" } }));
    await expect(new RedisMemoryStore(redis, { prefix }).entries("conv-bad")).rejects.toBeInstanceOf(CorruptRecordError);
  });
});
