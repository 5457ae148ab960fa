import { ValidationError } from "@flotilla/core";
import { asJson, checkConversationId, type MemoryEntry, type MemoryStore, parseEntry } from "./store.ts";

// `pg` is an optional peer dependency: these types say what the store needs of it in our own words,
// so the published .d.ts compile for applications that never install pg (`skipLibCheck: false`).

/** What the store uses of a `pg` Pool (a `pg.Pool` is one). */
export interface PgPool {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
  end(): Promise<void>;
}

/** What `new pg.Pool(config)` takes (pg's `PoolConfig`), handed to it as it is. */
export interface PgPoolConfig {
  connectionString?: string;
  host?: string;
  port?: number;
  user?: string;
  database?: string;
  /** Any other `PoolConfig` option: `password`, `ssl`, `max`, `idleTimeoutMillis`, … */
  [pgOption: string]: unknown;
}

export interface PostgresMemoryOptions {
  /** An existing pool (never closed by us), or how to open one. */
  pool?: PgPool;
  connection?: string | PgPoolConfig;
  /** @default "flotilla_messages" */
  table?: string;
}

/** Conversations in PostgreSQL, through `pg` (an optional peer dependency: install it to use this store). */
export class PostgresMemoryStore implements MemoryStore {
  private readonly options: PostgresMemoryOptions;
  private readonly table: string;
  private pool: Promise<PgPool> | undefined;
  private owned = false;
  private ready: Promise<void> | undefined;

  constructor(options: PostgresMemoryOptions) {
    this.options = options;
    this.table = options.table ?? "flotilla_messages";
    if (!/^[a-z_][a-z0-9_]{0,62}$/.test(this.table))
      throw ValidationError.of("postgres memory options", "table", `invalid table name "${this.table}": lower-case letters, digits and _ only`);
  }

  private async db(): Promise<PgPool> {
    this.pool ??= (async () => {
      if (this.options.pool) return this.options.pool;
      const { default: pg } = (await import("pg")) as unknown as { default: { Pool: new (c: PgPoolConfig) => PgPool } };
      const c = this.options.connection;
      this.owned = true;
      return new pg.Pool(typeof c === "string" ? { connectionString: c } : (c ?? {}));
    })();
    const pool = await this.pool;
    this.ready ??= pool
      .query(
        `CREATE TABLE IF NOT EXISTS ${this.table} (
          seq BIGSERIAL PRIMARY KEY,
          conversation_id TEXT NOT NULL,
          entry JSONB NOT NULL
        );
        CREATE INDEX IF NOT EXISTS ${this.table}_conversation ON ${this.table} (conversation_id, seq);`,
      )
      .then(() => {});
    await this.ready;
    return pool;
  }

  async entries(conversationId: string): Promise<MemoryEntry[]> {
    const db = await this.db();
    const { rows } = await db.query(`SELECT entry FROM ${this.table} WHERE conversation_id = $1 ORDER BY seq`, [checkConversationId(conversationId)]);
    return (rows as Array<{ entry: unknown }>).map((r) => parseEntry(r.entry, conversationId));
  }

  async append(conversationId: string, entries: readonly MemoryEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const db = await this.db();
    const id = checkConversationId(conversationId);
    // One statement: the entries land together, in order.
    const values = entries.map((_, i) => `($1, $${i + 2}::jsonb)`).join(", ");
    await db.query(`INSERT INTO ${this.table} (conversation_id, entry) VALUES ${values}`, [id, ...entries.map(asJson)]);
  }

  async clear(conversationId: string): Promise<void> {
    const db = await this.db();
    await db.query(`DELETE FROM ${this.table} WHERE conversation_id = $1`, [checkConversationId(conversationId)]);
  }

  async close(): Promise<void> {
    if (this.owned && this.pool) await (await this.pool).end();
  }
}
