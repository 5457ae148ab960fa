// The store's scripts and the TS that calls them agree field by field: what the header lists, what
// the Lua unpacks, what the reply carries, and the field lists the TS encodes and decodes with.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CREATE_TASK_FIELDS, RUN_REPLY_FIELDS, RUN_REPLY_OPTIONAL, SETTLE_OUTCOME_FIELDS, START_ENTRY_FIELDS } from "../src/script-fields.ts";

const lua = (file: string) => readFileSync(new URL(`../lua/${file}`, import.meta.url), "utf8");

/** The names a header lists for each repeated item: `ARGV[n..] per <item> (<count>): a, b, c` (wrapped lines included). */
function headerList(text: string, item: string): { count: number; names: string[] } {
  const header = /^(?:#!.*\n)?--\[\[([\s\S]*?)\]\]/.exec(text)![1]!;
  const m = new RegExp(`per ${item} \\((\\d+)\\):([\\s\\S]*?)\\n\\s*(?:\\(|ARGV|KEYS|Returns|\\n)`).exec(header);
  if (!m) throw new Error(`no "per ${item}" list in the header`);
  return {
    count: Number(m[1]),
    names: m[2]!
      .split(",")
      .map((s) => s.trim())
      .filter(Boolean),
  };
}

/** The names the script unpacks each item into: `local a, b, c = unpack(ARGV, i, i + WIDTH - 1)`, and WIDTH. */
function unpacked(text: string): { width: number; names: string[] } {
  const width = Number(/^local WIDTH = (\d+)$/m.exec(text)?.[1]);
  const m = /local ([\w,\s]+?) = unpack\(ARGV, i, i \+ WIDTH - 1\)/.exec(text);
  if (!m) throw new Error("no per-item unpack of ARGV");
  return { width, names: m[1]!.split(",").map((s) => s.trim()) };
}

describe("script contracts", () => {
  const cases: Array<[file: string, item: string, fields: readonly string[]]> = [
    ["create-8.lua", "task", CREATE_TASK_FIELDS],
    ["start-5.lua", "entry", START_ENTRY_FIELDS],
    ["settle-12.lua", "outcome", SETTLE_OUTCOME_FIELDS],
  ];
  for (const [file, item, fields] of cases) {
    it(`${file}: the header, the Lua and the TS agree on the ${fields.length} fields of each ${item}`, () => {
      const text = lua(file);
      expect(headerList(text, item)).toEqual({ count: fields.length, names: [...fields] });
      expect(unpacked(text)).toEqual({ width: fields.length, names: [...fields] });
    });
  }

  it("the run reply startEntry builds carries the fields the TS decodes, in order, then the optional ones by name", () => {
    const text = lua("includes/startEntry.lua");
    const built = /\{ 'run', ([\s\S]+?) \}\n/.exec(text.slice(text.indexOf("local function")))![1]!;
    const names = built.split(",").map((s) =>
      s
        .trim()
        .replace(/ or .*$/, "")
        .replace(/^record\./, ""),
    );
    expect(names).toEqual([...RUN_REPLY_FIELDS]);
    const documented = /\{ 'run', ([^}]+)\}/.exec(text.slice(0, text.indexOf("local function")))![1]!;
    expect(documented.split(",").map((s) => s.replace(/\n\s*--/g, "").trim())).toEqual([...RUN_REPLY_FIELDS]);
    const optional = /local RUN_OPTIONAL = \{([^}]+)\}/.exec(text)![1]!;
    expect([...optional.matchAll(/'(\w+)'/g)].map((m) => m[1])).toEqual([...RUN_REPLY_OPTIONAL]);
  });
});
