// The Lua build refuses scripts and includes that break the layout every script follows.
import { describe, expect, it } from "vitest";
import { buildScripts, checkHeader, checkInclude, checkShebang, LuaBuildError, luaPackages, SHEBANGS } from "../lua/build.mjs";

const header = (keys: string[], more = "    ARGV[1] x\n\n  Returns:\n    1\n") =>
  `--[[\n  Does a thing.\n\n  Input:\n${keys.map((k) => `    ${k}\n`).join("")}${more}]]\n`;

describe("the Lua build", () => {
  it("takes an include with one function named after its file, and UPPER_CASE constants", () => {
    expect(() => checkInclude("/x/flushAcks.lua", "-- why\nlocal LIMIT = 3\nlocal function flushAcks(batch)\n  return LIMIT\nend\n")).not.toThrow();
  });

  it("refuses an include with module-level state, a second function, or a misnamed function", () => {
    expect(() => checkInclude("/x/count.lua", "local stats = {}\nlocal function count(f)\n  stats[f] = 1\nend\n")).toThrow(LuaBuildError);
    expect(() => checkInclude("/x/count.lua", "local function count()\nend\nlocal function other()\nend\n")).toThrow(/exactly one top-level function/);
    expect(() => checkInclude("/x/count.lua", "local function tally()\nend\n")).toThrow(/named after its file \(count\)/);
  });

  it("takes a header that numbers every key its name counts, and says what it returns", () => {
    expect(() => checkHeader("/x/a-2.lua", header(["KEYS[1] one", "KEYS[2] two"]), 2)).not.toThrow();
    expect(() => checkHeader("/x/a-4.lua", header(["KEYS[1..3] the lanes", "KEYS[4] four"]), 4)).not.toThrow();
  });

  it("refuses a header whose keys do not match the count in the name, or that says nothing of the return", () => {
    expect(() => checkHeader("/x/a-3.lua", header(["KEYS[1] one", "KEYS[2] two"]), 3)).toThrow(/KEYS\[1\] to KEYS\[3\]/);
    expect(() => checkHeader("/x/a-2.lua", header(["KEYS[1] one", "KEYS[3] three"]), 2)).toThrow(LuaBuildError);
    expect(() => checkHeader("/x/a-4.lua", header(["KEYS[1..2] two", "KEYS[4] four"]), 4)).toThrow(LuaBuildError);
    expect(() => checkHeader("/x/a-1.lua", header(["KEYS[1] one"], "    ARGV[1] x\n"), 1)).toThrow(/returns/);
    expect(() => checkHeader("/x/a-1.lua", "local x = KEYS[1]\n", 1)).toThrow(/header/);
  });

  it("takes a script that opens with what Redis does with it when full, and refuses one that does not say", () => {
    for (const line of SHEBANGS) expect(() => checkShebang("/x/a-1.lua", `${line}\n${header(["KEYS[1] one"])}`)).not.toThrow();
    expect(() => checkHeader("/x/a-1.lua", `#!lua\n${header(["KEYS[1] one"])}`, 1)).not.toThrow();
    expect(() => checkShebang("/x/a-1.lua", header(["KEYS[1] one"]))).toThrow(/when Redis is full/);
    expect(() => checkShebang("/x/a-1.lua", `#!lua flags=no-writes\n${header(["KEYS[1] one"])}`)).toThrow(LuaBuildError);
  });

  it("builds every package's scripts, each opening with its shebang, each include once, with no include directive left", () => {
    const scripts = luaPackages().flatMap((dir) => buildScripts(dir));
    expect(scripts.length).toBeGreaterThanOrEqual(10);
    for (const s of scripts) {
      expect(SHEBANGS, s.name).toContain(s.lua.split("\n")[0]);
      expect(s.lua, s.name).not.toMatch(/^---?\s*@include/m);
      const defined = [...s.lua.matchAll(/^local function (\w+)/gm)].map((m) => m[1]);
      expect(new Set(defined).size, `${s.name} defines a function twice`).toBe(defined.length);
    }
  });
});
