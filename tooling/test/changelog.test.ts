// The changelog lines `changeset version` writes: a first release reads as a first release, with no
// "Updated dependencies" naming dependencies that were never released before; later releases list
// their updated dependencies as the default generator does.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import changelog, { UNRELEASED } from "../changesets/changelog.mjs";

const changeset = (id: string, commit: string) => ({ id, commit, summary: `${id} summary`, releases: [] });
const release = (name: string, oldVersion: string, newVersion: string, changesets: string[]) => ({ name, type: "minor", oldVersion, newVersion, changesets });

describe("tooling/changesets/changelog.mjs", () => {
  it("is the changelog .changeset/config.json uses", () => {
    const config = JSON.parse(readFileSync(new URL("../../.changeset/config.json", import.meta.url), "utf8"));
    expect(config.changelog).toBe("../tooling/changesets/changelog.mjs");
  });

  it("lists no dependency whose previous version was never released", async () => {
    const sets = [changeset("first-release-core", "abc1234def"), changeset("first-release-store", "abc1234def")];
    const deps = [
      release("@flotilla/core", UNRELEASED, "0.1.0", ["first-release-core"]),
      release("@flotilla/store", UNRELEASED, "0.1.0", ["first-release-store"]),
    ];
    expect(await changelog.getDependencyReleaseLine(sets, deps, null)).toBe("");
  });

  it("lists updated dependencies that had been released, once per commit", async () => {
    const sets = [changeset("fix-core", "abc1234def"), changeset("fix-store", "abc1234def"), changeset("first-release-new", "fed4321cba")];
    const deps = [
      release("@flotilla/core", "0.1.0", "0.1.1", ["fix-core"]),
      release("@flotilla/store", "0.1.0", "0.2.0", ["fix-store"]),
      release("@flotilla/new", UNRELEASED, "0.1.0", ["first-release-new"]),
    ];
    expect(await changelog.getDependencyReleaseLine(sets, deps, null)).toBe(
      ["- Updated dependencies [abc1234]", "  - @flotilla/core@0.1.1", "  - @flotilla/store@0.2.0"].join("\n"),
    );
  });

  it("writes a package's own entries as the default generator does", async () => {
    const line = await changelog.getReleaseLine({ ...changeset("x", "abc1234def"), summary: "First release.\n\nMore." }, "minor", null);
    expect(line).toBe("- abc1234: First release.\n  \n  More.");
  });
});
