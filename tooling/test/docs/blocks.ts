// The code blocks of the repository's READMEs, and the markers that say what the docs test does with
// each. A marker is an HTML comment (invisible where the README is rendered) on the line before the
// block's opening fence:
//
//   <!-- docs-test: run -->            a program: run it (Node, types stripped) against a Redis of its own; it must exit 0
//   <!-- docs-test: run worker -->     the same, with a flotilla-worker running (as the README tells the reader to)
//   <!-- docs-test: run service -->    a long-running process: run it, send SIGTERM once it handles it; it must exit 0
//   <!-- docs-test: vitest -->         a test file: run it with vitest; it must pass
//   <!-- docs-test: commands -->       shell commands: each must exist (npm scripts, flotilla.sh commands, files, bins)
//   <!-- docs-test: skip <reason> -->  shown, not run: the reason says what it needs (an API key, a Temporal server, …)
//
// Blocks of TypeScript or JavaScript that import something are programs and must carry a marker, as
// must every shell block; fragments (no import) and signatures need none.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";

export type Marker = { kind: "run"; worker: boolean; service: boolean } | { kind: "vitest" } | { kind: "commands" } | { kind: "skip"; reason: string };

export interface DocBlock {
  /** The README, relative to the repository root. */
  file: string;
  /** Line of the opening fence (1-based). */
  line: number;
  lang: string;
  code: string;
  /** The marker, an error saying what is wrong with it, or undefined when there is none. */
  marker: Marker | Error | undefined;
}

const MARKER = /^<!--\s*docs-test:\s*(.*?)\s*-->$/;

export function parseMarker(text: string): Marker | Error {
  const [kind, ...rest] = text.split(/\s+/);
  if (kind === "run") {
    const unknown = rest.filter((w) => w !== "worker" && w !== "service");
    if (unknown.length > 0) return new Error(`unknown run option(s) ${unknown.join(", ")}: worker, service`);
    return { kind: "run", worker: rest.includes("worker"), service: rest.includes("service") };
  }
  if ((kind === "vitest" || kind === "commands") && rest.length === 0) return { kind };
  if (kind === "skip") {
    const reason = rest.join(" ");
    return reason ? { kind: "skip", reason } : new Error("a skip says why: <!-- docs-test: skip needs OPENAI_API_KEY -->");
  }
  return new Error(`unknown marker "${text}": run [worker] [service] | vitest | commands | skip <reason>`);
}

/** Every fenced block of a markdown file, with the marker before it. */
export function parseBlocks(markdown: string, file: string): DocBlock[] {
  const lines = markdown.split("\n");
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^```(\S*)/.exec(lines[i]!);
    if (!open) continue;
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && !/^```\s*$/.test(lines[i]!); i++) body.push(lines[i]!);
    let before = start - 1;
    while (before >= 0 && lines[before]!.trim() === "") before--;
    const comment = before >= 0 ? MARKER.exec(lines[before]!.trim()) : null;
    blocks.push({ file, line: start + 1, lang: open[1]!.toLowerCase(), code: `${body.join("\n")}\n`, marker: comment ? parseMarker(comment[1]!) : undefined });
  }
  return blocks;
}

/** A block that must carry a marker: a program (it imports something) or shell commands. */
export function needsMarker(block: DocBlock): boolean {
  if (["sh", "bash", "shell", "console"].includes(block.lang)) return true;
  if (!["ts", "typescript", "js", "javascript", "mjs"].includes(block.lang)) return false;
  return /^import\s.*\sfrom\s+["'][^"']+["'];?\s*$/m.test(block.code);
}

/** The READMEs a user reads: the root's, each package's and app's, the examples', and docs/. */
export function readmeFiles(root: string): string[] {
  const files = ["README.md", "examples/README.md"];
  for (const dir of ["packages", "apps"]) {
    for (const name of readdirSync(join(root, dir))) files.push(join(dir, name, "README.md"));
  }
  if (existsSync(join(root, "docs"))) {
    for (const name of readdirSync(join(root, "docs"))) if (name.endsWith(".md")) files.push(join("docs", name));
  }
  return files.filter((f) => existsSync(join(root, f))).map((f) => relative(root, join(root, f)));
}

export function readBlocks(root: string): DocBlock[] {
  return readmeFiles(root).flatMap((file) => parseBlocks(readFileSync(join(root, file), "utf8"), file));
}
