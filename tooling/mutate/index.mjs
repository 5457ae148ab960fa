// `pnpm mutate [target]`: mutation testing. Stryker for the TypeScript packages (stryker.mjs); the
// Lua side is dispatched here under `lua` on another branch.
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";

const args = process.argv.slice(2);
if (args[0] === "lua") {
  console.error("mutate: the Lua breakages are not on this branch");
  process.exit(2);
}
const stryker = fileURLToPath(new URL("./stryker.mjs", import.meta.url));
const { status } = spawnSync(process.execPath, [stryker, ...args], { stdio: "inherit" });
process.exit(status ?? 1);
