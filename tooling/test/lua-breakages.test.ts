// The Lua breakage list and the machinery of `pnpm mutate lua` (tooling/mutate): every breakage
// still applies to the scripts as they are and changes a built script; a breakage is applied in a
// copy, never the working tree; verdicts follow the rules TESTING.md states. The suite runs of the
// breakages themselves are `pnpm mutate lua`'s job, not this test's.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { applyBreakage, BreakageError, builtScripts, checkBreakages, loadBreakages } from "../mutate/breakages.mjs";
import { judge } from "../mutate/report.mjs";
import { copyRepo, removeCopy } from "../mutate/tree-copy.mjs";

const root = fileURLToPath(new URL("../../", import.meta.url));
const { breakages, levels } = loadBreakages(fileURLToPath(new URL("../mutate/lua-breakages.json", import.meta.url)));
const byId = (id: string) => breakages.find((b) => b.id === id)!;

describe("the Lua breakages", () => {
  let copy: string;
  beforeAll(() => {
    copy = copyRepo(root, "test");
  });
  afterAll(() => removeCopy(copy));

  it("each occurs exactly once in its file and changes at least one built script", async () => {
    const changed = await checkBreakages(copy, breakages);
    expect([...changed.keys()]).toEqual(breakages.map((b) => b.id));
    // An include of the broker changes the store's scripts that include it.
    expect(changed.get("owner-consumer-check")).toEqual(expect.arrayContaining(["store/settle", "broker/renew", "broker/deadLetter"]));
  });

  it("cover every guard the suite must notice, the fences marked", () => {
    const ids = breakages.map((b) => b.id);
    for (const id of ["settle-attempt-fence", "publish-attempt-fence", "renew-owner-check", "start-terminal-guard", "promote-due-time"])
      expect(ids).toContain(id);
    for (const id of ["settle-record-ttl", "settle-dead-letter-write", "start-cancel-at-claim", "start-delivery-limit", "requeue-reset", "create-idempotent"])
      expect(ids).toContain(id);
    expect(byId("settle-attempt-fence").fencing).toBe(true);
    expect(byId("publish-attempt-fence").fencing).toBe(true);
    expect(byId("settle-record-ttl").fencing).toBe(false);
  });

  it("are applied in the copy only, and the copy's packages resolve to the copy", async () => {
    const b = byId("settle-attempt-fence");
    const before = readFileSync(join(root, b.file), "utf8");
    const original = applyBreakage(copy, b);
    try {
      expect(original).toBe(before);
      expect(readFileSync(join(root, b.file), "utf8")).toBe(before);
      expect(readFileSync(join(copy, b.file), "utf8")).toContain(b.replace);
      // The store's settle script is built with the broken include of the copy, not the original's.
      expect((await builtScripts(copy)).get("store/settle")).toContain(b.replace);
    } finally {
      applyBreakage(copy, { ...b, search: b.replace, replace: b.search });
    }
  });

  it("refuse a search string that is missing or occurs twice, saying which", () => {
    const b = byId("settle-attempt-fence");
    expect(() => applyBreakage(copy, { ...b, search: "no such line in this file" })).toThrow(BreakageError);
    expect(() => applyBreakage(copy, { ...b, search: "batch.settled" })).toThrow(/occurs 2 times in packages\/store\/lua\/includes\/recordOutcome\.lua/);
  });
});

describe("the verdict of a breakage run", () => {
  const unit = { file: "packages/store/test/task-store.test.ts", name: "a" };
  const proc = { file: "packages/worker/test/leases.test.ts", name: "b" };
  const other = { file: "packages/core/test/keys.test.ts", name: "c" };
  const ran = { timedOut: false };
  const fence = byId("settle-attempt-fence");
  const plain = byId("settle-record-ttl");

  it("survived when no test failed; caught by one failing test when not a fence", () => {
    expect(judge(plain, [], levels, ran).verdict).toBe("survived");
    expect(judge(plain, [other], levels, ran).verdict).toBe("caught");
  });

  it("a fence needs two failing tests, one unit-level and one process-level", () => {
    expect(judge(fence, [unit, proc], levels, ran)).toMatchObject({ verdict: "caught", why: "2 failed (1 unit, 1 process)" });
    expect(judge(fence, [unit], levels, ran)).toMatchObject({ verdict: "weak", why: "fencing: fewer than 2 tests, no process-level test" });
    expect(judge(fence, [proc, { ...proc, name: "d" }, other], levels, ran)).toMatchObject({ verdict: "weak", why: "fencing: no unit-level test" });
    expect(judge(fence, [], levels, ran).verdict).toBe("survived");
  });

  it("error when the suite wrote no report (it timed out or crashed)", () => {
    expect(judge(plain, undefined, levels, { timedOut: true })).toMatchObject({ verdict: "error", why: "the suite timed out" });
  });
});
