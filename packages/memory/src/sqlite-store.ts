import type { DatabaseSync } from "node:sqlite";
import { ErrorCodes, FlotillaError } from "@flotilla/core";
import { asJson, checkConversationId, type MemoryEntry, type MemoryStore, parseEntry } from "./store.ts";

/** Flotilla's supported Node (every package's `engines`); `node:sqlite` is built in, unflagged, from 22.13. */
const SUPPORTED_NODE = "22.15";

/**
 * Node's built-in SQLite. On a Node without it (20, or 22 before 22.13 without a flag) the import
 * fails with a bare ERR_UNKNOWN_BUILTIN_MODULE: said instead as a FlotillaError (UNSUPPORTED_NODE)
 * naming the Node it needs. Not retryable: every attempt on this worker would fail the same way.
 */
async function loadSqlite(): Promise<typeof import("node:sqlite")> {
  try {
    return await import("node:sqlite");
  } catch (err) {
    if ((err as { code?: string })?.code !== "ERR_UNKNOWN_BUILTIN_MODULE") throw err;
    throw new FlotillaError(
      ErrorCodes.UNSUPPORTED_NODE,
      `the SQLite memory store needs node:sqlite, built into Node >= ${SUPPORTED_NODE} (Flotilla's supported Node); this is Node ${process.version}`,
      { cause: err, retryable: false },
    );
  }
}

/** Conversations in a SQLite file, through Node's built-in `node:sqlite`. */
export class SqliteMemoryStore implements MemoryStore {
  private readonly path: string;
  private opened: DatabaseSync | undefined;

  /** @param path a file path (created if missing), or ":memory:" */
  constructor(path: string) {
    this.path = path;
  }

  // Loaded on first use: importing this package must not load node:sqlite for Redis-only users.
  private async db(): Promise<DatabaseSync> {
    if (this.opened) return this.opened;
    const { DatabaseSync } = await loadSqlite();
    const db = new DatabaseSync(this.path);
    db.exec(`PRAGMA journal_mode = WAL;
      CREATE TABLE IF NOT EXISTS flotilla_messages (
        conversation_id TEXT NOT NULL,
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        entry TEXT NOT NULL
      );
      CREATE INDEX IF NOT EXISTS flotilla_messages_conversation ON flotilla_messages (conversation_id, seq);`);
    this.opened = db;
    return db;
  }

  async entries(conversationId: string): Promise<MemoryEntry[]> {
    const rows = (await this.db())
      .prepare("SELECT entry FROM flotilla_messages WHERE conversation_id = ? ORDER BY seq")
      .all(checkConversationId(conversationId)) as Array<{ entry: string }>;
    return rows.map((r) => parseEntry(JSON.parse(r.entry), conversationId));
  }

  async append(conversationId: string, entries: readonly MemoryEntry[]): Promise<void> {
    const id = checkConversationId(conversationId);
    const db = await this.db();
    const insert = db.prepare("INSERT INTO flotilla_messages (conversation_id, entry) VALUES (?, ?)");
    db.exec("BEGIN");
    try {
      for (const e of entries) insert.run(id, asJson(e));
      db.exec("COMMIT");
    } catch (err) {
      db.exec("ROLLBACK");
      throw err;
    }
  }

  async clear(conversationId: string): Promise<void> {
    (await this.db()).prepare("DELETE FROM flotilla_messages WHERE conversation_id = ?").run(checkConversationId(conversationId));
  }

  async close(): Promise<void> {
    if (this.opened?.isOpen) this.opened.close();
    this.opened = undefined;
  }
}
