#!/usr/bin/env node
// The `flotilla-gateway` command. The bin is this committed file rather than dist/main.js itself, so
// that installing the workspace before its first build can link it (pnpm warns about a bin whose
// file does not exist yet); it runs the built gateway.
import { existsSync } from "node:fs";

const main = new URL("../dist/main.js", import.meta.url);
if (!existsSync(main)) {
  process.stderr.write("flotilla-gateway is not built yet: run `bash tooling/scripts/flotilla.sh build` (or `pnpm build`) at the repository root first.\n");
  process.exit(1);
}
await import(main.href);
