// One owner per Redis key and per hash field (a store test: the store owns the record), checked
// over the source. The owners: broker — lanes, delayed sets, dead letters, claim markers; store —
// task records (every field in RECORD_FIELDS), event streams, the task index, statistics buckets,
// submit markers, the kept sets; cancel — the cancel channel; health — the heartbeat records and
// registry; graph — a run's keys (its record, nodes, outputs and joins hashes, its events stream);
// bus — a topic's keys (its stream and consumer groups, its groups' retries, errors and dead
// letters, its counters, leases and metrics stream); ratelimit — a rate limit's buckets hash; schedules — a schedule's hash and the due set.
// (packages/core/README.md lists every key.)
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { PACKED_JSON, PACKED_NAMES, RECORD_FIELDS } from "../src/record.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "../../..");

function files(dir: string, ending: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (name === "node_modules" || name === "dist" || name === "generated") continue;
      if (statSync(p).isDirectory()) walk(p);
      else if (name.endsWith(ending)) out.push(p);
    }
  };
  walk(dir);
  return out;
}

const packagesWith = (sub: string) =>
  readdirSync(join(ROOT, "packages")).flatMap((p) => {
    try {
      return statSync(join(ROOT, "packages", p, sub)).isDirectory() ? [p] : [];
    } catch {
      return [];
    }
  });

/** Code without comment lines. */
const code = (text: string) =>
  text
    .split("\n")
    .filter((l) => !/^\s*--/.test(l))
    .join("\n");

interface Call {
  file: string;
  pkg: string;
  cmd: string;
  key: string;
}

const luaCalls: Call[] = packagesWith("lua").flatMap((pkg) =>
  files(join(ROOT, "packages", pkg, "lua"), ".lua").flatMap((file) =>
    [...code(readFileSync(file, "utf8")).matchAll(/redis\.call\('(\w+)',\s*([^,)]+)/g)].map((m) => ({
      file: relative(ROOT, file),
      pkg,
      cmd: m[1]!.toUpperCase(),
      key: m[2]!.trim(),
    })),
  ),
);

describe("ownership of keys and fields", () => {
  it("finds the scripts it checks", () => {
    expect(new Set(luaCalls.map((c) => c.pkg))).toEqual(new Set(["broker", "bus", "cancel", "graph", "health", "ratelimit", "schedules", "store"]));
  });

  it("only the store's Lua touches hashes (task records, statistics buckets), but for the broker's own leases hash, the graph's run hashes, a topic's hashes, a rate limit's buckets and a schedule's hash", () => {
    const runHashes = ["KEYS[1]", "KEYS[2]", "KEYS[3]", "KEYS[4]", "runKey", "nodesKey", "outputsKey", "joinsKey", "run.key", "key"];
    const topicHashes = ["stats", "k.stats", "errors", "k.errors", "leases"];
    const strays = luaCalls.filter(
      (c) =>
        /^H/.test(c.cmd) &&
        c.pkg !== "store" &&
        !(c.pkg === "broker" && c.key === "leases") &&
        !(c.pkg === "graph" && runHashes.includes(c.key)) &&
        !(c.pkg === "bus" && topicHashes.includes(c.key)) &&
        !(c.pkg === "ratelimit" && c.key === "key") &&
        !(c.pkg === "schedules" && ["key", "KEYS[1]"].includes(c.key)),
    );
    expect(strays).toEqual([]);
    expect(luaCalls.filter((c) => /^H/.test(c.cmd) && c.pkg === "broker").map((c) => c.file)).not.toEqual([]);
  });

  it("only the broker's Lua reads, acknowledges, claims or deletes queue entries (the bus: entries of its topics and dead letters)", () => {
    const groupCommands = ["XREADGROUP", "XACK", "XCLAIM", "XAUTOCLAIM", "XPENDING", "XDEL"];
    const topicStreams = ["stream", "k.stream", "dead"];
    expect(luaCalls.filter((c) => groupCommands.includes(c.cmd) && c.pkg !== "broker" && !(c.pkg === "bus" && topicStreams.includes(c.key)))).toEqual([]);
  });

  it("the store adds to streams and sorted sets only its own: the event stream, the task index and the kept sets", () => {
    const adds = luaCalls.filter((c) => c.pkg === "store" && ["XADD", "ZADD", "ZRANGE", "ZREM"].includes(c.cmd));
    expect(adds.map((c) => `${c.cmd} ${c.key}`).sort()).toEqual([
      "XADD stream",
      "ZADD index",
      "ZADD keep.set",
      "ZADD prefix .. ':queue:' .. tag .. ':handoff'",
      "ZREM batch.keep.index",
    ]);
  });

  it("the health package's Lua writes only the heartbeat: the worker's record and the registry", () => {
    expect(luaCalls.filter((c) => c.pkg === "health").map((c) => `${c.cmd} ${c.key}`)).toEqual(["SET KEYS[1]", "ZADD KEYS[2]", "ZREMRANGEBYSCORE KEYS[2]"]);
  });

  it("the cancel package's Lua only announces, on the cancel channel", () => {
    expect(luaCalls.filter((c) => c.pkg === "cancel").map((c) => c.cmd)).toEqual(["SPUBLISH"]);
  });

  it("every message a script publishes is sharded (SPUBLISH, on a channel in its queue's slot), never broadcast to a whole cluster", () => {
    expect(luaCalls.filter((c) => c.cmd === "PUBLISH")).toEqual([]);
    expect(luaCalls.filter((c) => c.cmd === "SPUBLISH").length).toBeGreaterThanOrEqual(3);
  });

  it("the store's Lua names no record field that RECORD_FIELDS does not list", () => {
    // Quoted words in the store's Lua that are not fields: reply kinds and reasons, outcomes and
    // statistics names, lane names, Lua type names, and the event stream entry's field.
    const notFields = new Set([
      "ok",
      "rejected",
      "refused",
      "gone",
      "run",
      "skip",
      "dead",
      "missing",
      "malformed",
      "corrupt",
      "hash",
      "terminal",
      "running",
      "stale",
      "cancelled",
      "failed",
      "requested",
      "finished",
      // What sendMessage-2.lua answers.
      "queued",
      "high",
      "normal",
      "low",
      "table",
      "number",
      "string",
      "null",
      "e",
      "hw:",
      // Status words of events (statusEvent.lua) and how packRecord.lua writes each member.
      "pending",
      "retrying",
      "completed",
      "s",
      "n",
      "j",
      "l",
    ]);
    const words = new Set<string>();
    for (const file of files(join(ROOT, "packages/store/lua"), ".lua")) {
      for (const m of code(readFileSync(file, "utf8")).matchAll(/'([a-z][A-Za-z:]*)'/g)) words.add(m[1]!);
    }
    // The short names of a packed record's members (inside its 'z' field, not fields of their own).
    for (const short of Object.values(PACKED_NAMES)) notFields.add(short);
    const unknown = [...words].filter((w) => !notFields.has(w) && !Object.hasOwn(RECORD_FIELDS, w));
    expect(unknown).toEqual([]);
    expect(words.has("hw:") && Object.hasOwn(RECORD_FIELDS, "hw:<scope>")).toBe(true);
  });

  /** The names a Lua table constant lists (`local NAME = { ... }`), each the first group of `item`. */
  const luaTable = (lua: string, name: string, item: RegExp) =>
    new Set([...(new RegExp(`local ${name} = \\{([^}]*)\\}`).exec(lua)?.[1] ?? "").matchAll(item)].map((m) => m[1]!));

  it("a packed record's short names are the same in the script that packs and the readers that unpack", () => {
    const lua = readFileSync(join(ROOT, "packages/store/lua/includes/packRecord.lua"), "utf8");
    const table = /local PACK_NAMES = \{([^}]*)\}/.exec(lua)?.[1] ?? "";
    const names = Object.fromEntries([...table.matchAll(/(\w+) = '"(\w+)":'/g)].map((m) => [m[1]!, m[2]!]));
    expect(Object.keys(names).length).toBeGreaterThan(10);
    expect(names).toEqual(PACKED_NAMES);
    // Each short name stands for one field.
    expect(new Set(Object.values(PACKED_NAMES)).size).toBe(Object.keys(PACKED_NAMES).length);
    for (const field of Object.keys(PACKED_NAMES)) expect(Object.hasOwn(RECORD_FIELDS, field)).toBe(true);
    // Every field is packed or left out on purpose, and every packed one is read by the completing settle.
    const skipped = luaTable(lua, "PACK_SKIP", /(\w+) = true/g);
    for (const field of Object.keys(RECORD_FIELDS)) {
      if (field !== "hw:<scope>") expect(Object.hasOwn(PACKED_NAMES, field) || skipped.has(field), field).toBe(true);
    }
    const outcome = readFileSync(join(ROOT, "packages/store/lua/includes/recordOutcome.lua"), "utf8");
    const read = new Set([...luaTable(outcome, "OUTCOME_FIELDS", /'(\w+)'/g), ...luaTable(lua, "PACK_EXTRA_FIELDS", /'(\w+)'/g)]);
    for (const field of Object.keys(PACKED_NAMES)) expect(read.has(field), field).toBe(true);
    expect(luaTable(lua, "PACK_KIND", /(\w+) = 'j'/g)).toEqual(PACKED_JSON);
    // Every member is written, each with a kind.
    expect(luaTable(lua, "PACK_ORDER", /'(\w+)'/g)).toEqual(new Set(Object.keys(PACKED_NAMES)));
    expect(luaTable(lua, "PACK_KIND", /(\w+) = '[snjl]'/g)).toEqual(new Set(Object.keys(PACKED_NAMES)));
  });

  it("every field RECORD_FIELDS lists is used by the store", () => {
    const store = [...files(join(ROOT, "packages/store/lua"), ".lua"), ...files(join(ROOT, "packages/store/src"), ".ts")]
      .filter((f) => !f.endsWith("record.ts"))
      .map((f) => readFileSync(f, "utf8"))
      .join("\n");
    const unused = Object.keys(RECORD_FIELDS).filter((f) => !new RegExp(`['"]${f.replace("<scope>", "")}`).test(store));
    expect(unused).toEqual([]);
  });

  it("no package but the store (task records), the graph's run store and templates and the bus's topic counters (their hashes) reads or writes hash fields from TypeScript", () => {
    const strays: string[] = [];
    for (const dir of ["packages", "apps", "examples"]) {
      for (const file of files(join(ROOT, dir), ".ts")) {
        const rel = relative(ROOT, file);
        if (
          rel.startsWith("packages/store/") ||
          rel === "packages/graph/src/run-store.ts" ||
          rel === "packages/graph/src/templates.ts" ||
          // A topic's counters (its stats hash): the consumer counts deliveries, the readers read them.
          rel === "packages/bus/src/consumer.ts" ||
          rel === "packages/bus/src/readers.ts" ||
          // A schedule's hash: its store and scheduler read it (every write is a script of theirs).
          rel.startsWith("packages/schedules/src/") ||
          rel.includes("/test/")
        )
          continue;
        if (/\.(hmget|hget|hset|hdel|hgetall|hincrby|hexists)\(/i.test(readFileSync(file, "utf8"))) strays.push(rel);
      }
    }
    expect(strays).toEqual([]);
  });
});
