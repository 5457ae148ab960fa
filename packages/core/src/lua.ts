import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { ChainableCommander, Redis } from "ioredis";

type ScriptCaller = Record<string, (...args: Array<string | number | Buffer>) => Promise<unknown>>;
type ScriptQueuer = Record<string, (...args: Array<string | number | Buffer>) => ChainableCommander>;

const CORE_INCLUDES = fileURLToPath(new URL("../lua/includes/", import.meta.url));
const installed = new WeakMap<Redis, Set<string>>();

/** `dir`: the folder of the including file; `nested`: that file is itself an include. */
function expandIncludes(source: string, dir: string, seen: Set<string>, nested = false): string {
  return source.replace(/^--\s*@include\s+"([\w-]+)"\s*$/gm, (_, name: string) => {
    if (seen.has(name)) return "";
    seen.add(name);
    // A script's includes sit in includes/ beside it; an include's own includes, beside it.
    for (const base of [nested ? dir : join(dir, "includes"), CORE_INCLUDES]) {
      try {
        const text = readFileSync(join(base, `${name}.lua`), "utf8");
        return expandIncludes(text, base, seen, true);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
      }
    }
    throw new Error(`Lua include "${name}" not found`);
  });
}

/**
 * A Lua script kept in a `.lua` file. `--@include "name"` lines pull in `includes/name.lua`
 * from the script's folder or from @flotilla/core's shared includes.
 * Runs through EVALSHA with ioredis's automatic fallback to EVAL after a Redis restart.
 */
export class LuaScript {
  readonly name: string;
  readonly numberOfKeys: number;
  readonly lua: string;

  constructor(name: string, lua: string, numberOfKeys: number) {
    // Scripts are registered on a connection by name: the source hash keeps two packages'
    // scripts of the same name (or two versions of one) from shadowing each other.
    this.name = `flotilla_${name.replace(/\W/g, "_")}_${createHash("sha1").update(lua).digest("hex").slice(0, 10)}`;
    this.lua = lua;
    this.numberOfKeys = numberOfKeys;
  }

  /** Loads `file` (a URL relative to the caller, e.g. `new URL("../lua/x.lua", import.meta.url)`). */
  static fromFile(file: URL, numberOfKeys: number): LuaScript {
    const path = fileURLToPath(file);
    const name = path.replace(/^.*[\\/]/, "").replace(/\.lua$/, "");
    const lua = expandIncludes(readFileSync(path, "utf8"), dirname(path), new Set());
    return new LuaScript(name, lua, numberOfKeys);
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
    return (redis as unknown as ScriptCaller)[this.name]!(...keys, ...args);
  }

  /** Queues the script on a pipeline (its Redis must have had `install` called before `pipeline()`). */
  queue(pipeline: ChainableCommander, keys: readonly string[], args: ReadonlyArray<string | number>): void {
    this.check(keys);
    (pipeline as unknown as ScriptQueuer)[this.name]!(...keys, ...args);
  }

  private check(keys: readonly string[]): void {
    if (keys.length !== this.numberOfKeys) {
      throw new Error(`${this.name} takes ${this.numberOfKeys} keys, got ${keys.length}`);
    }
  }
}
