import { createHash } from "node:crypto";
import type { ChainableCommander, Redis } from "ioredis";
import { CorruptRecordError, isRedisFull, RedisFullError, ValidationError } from "../errors.ts";

/** The error reply a script gives when a record it read cannot be trusted: `CORRUPT_RECORD <what>: <why>`, nothing written. */
const CORRUPT_REPLY = /^CORRUPT_RECORD ([^:]+): (.*)$/s;

/**
 * A script's CORRUPT_RECORD error reply, or Redis refusing it at maxmemory (a script without
 * allow-oom is refused whole, before it runs), as the typed error; anything else as it was.
 */
function typedScriptError(name: string, err: unknown): never {
  const m = err instanceof Error ? CORRUPT_REPLY.exec(err.message) : null;
  if (m) throw new CorruptRecordError(m[1]!, m[2]!);
  if (isRedisFull(err)) throw new RedisFullError(`script ${name}`, err);
  throw err;
}

type ScriptCaller = Record<string, (...args: Array<string | number | Buffer>) => Promise<unknown>>;
type ScriptQueuer = Record<string, (...args: Array<string | number | Buffer>) => ChainableCommander>;

/**
 * A script as the Lua build (tooling/lua) emits it into a package's `src/generated/lua.ts`: its
 * includes expanded, its key count taken from its file name (`settle-12.lua`).
 */
export interface ScriptSource {
  readonly name: string;
  readonly numberOfKeys: number;
  readonly lua: string;
}

const installed = new WeakMap<Redis, Set<string>>();

/**
 * A Lua script, run through EVALSHA with ioredis's automatic fallback to EVAL after a Redis
 * restart flushed the script cache. Made from a generated ScriptSource: nothing is read from disk
 * at run time, so a published package always runs the includes it was built with.
 */
export class LuaScript {
  /** Registered on a connection under this name (see the constructor). */
  readonly name: string;
  readonly numberOfKeys: number;
  readonly lua: string;
  /** SHA1 of the source: what EVALSHA sends. */
  readonly sha: string;
  /** The script's own name (`settle`), for errors. */
  private readonly source: string;

  constructor(source: ScriptSource) {
    this.sha = createHash("sha1").update(source.lua).digest("hex");
    // Scripts are registered on a connection by name: the source hash keeps two packages'
    // scripts of the same name (or two versions of one) from shadowing each other.
    this.name = `flotilla_${source.name.replace(/\W/g, "_")}_${this.sha.slice(0, 10)}`;
    this.lua = source.lua;
    this.source = source.name;
    this.numberOfKeys = source.numberOfKeys;
  }

  /** Defines the script on a connection; pipelines made afterwards can queue it too. */
  install(redis: Redis): void {
    let names = installed.get(redis);
    if (!names) {
      names = new Set();
      installed.set(redis, names);
    }
    if (names.has(this.name)) return;
    redis.defineCommand(this.name, { numberOfKeys: this.numberOfKeys, lua: this.lua });
    names.add(this.name);
  }

  run(redis: Redis, keys: readonly string[], args: ReadonlyArray<string | number>): Promise<unknown> {
    this.install(redis);
    this.check(keys);
    return (redis as unknown as ScriptCaller)[this.name]!(...keys, ...args).catch((err: unknown) => typedScriptError(this.source, err));
  }

  /** An error reply this script gave in a pipeline, as `run` would have thrown it (typed, see typedScriptError). */
  typed(err: unknown): unknown {
    try {
      typedScriptError(this.source, err);
    } catch (typed) {
      return typed;
    }
  }

  /** Queues the script on a pipeline (its Redis must have had `install` called before `pipeline()`). */
  queue(pipeline: ChainableCommander, keys: readonly string[], args: ReadonlyArray<string | number>): void {
    this.check(keys);
    (pipeline as unknown as ScriptQueuer)[this.name]!(...keys, ...args);
  }

  private check(keys: readonly string[]): void {
    if (keys.length !== this.numberOfKeys) {
      throw ValidationError.of(`${this.name} call`, "keys", `takes ${this.numberOfKeys} keys, got ${keys.length}`);
    }
  }
}
