// @ts-check
// `pnpm mutate <what> [args]`: mutation testing, one command per kind of code.
//   pnpm mutate lua [id …]   deliberate breakages of the Lua scripts (lua.mjs), which Stryker cannot mutate
//   pnpm mutate <target|all> Stryker on a package's TypeScript (stryker.mjs; targets in targets.mjs)
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { BreakageError } from "./breakages.mjs";

/** @type {Record<string, { about: string, run: (args: string[]) => Promise<number> }>} */
const COMMANDS = {
  lua: {
    about: "break each guard of the Lua scripts in turn and see which tests notice (tooling/mutate/lua-breakages.json)",
    run: async (args) => (await import("./lua.mjs")).main(args),
  },
};

/**
 * `pnpm mutate <target|all> [options]`: Stryker on a TypeScript target (stryker.mjs, which knows the
 * targets and says so for an unknown one).
 * @param {string} target @returns {(args: string[]) => Promise<number>}
 */
function strykerCommand(target) {
  const stryker = fileURLToPath(new URL("./stryker.mjs", import.meta.url));
  return async (args) => spawnSync(process.execPath, [stryker, target, ...args], { stdio: "inherit" }).status ?? 1;
}

const usage = () =>
  [
    "pnpm mutate <what> [args]",
    "",
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.about}`),
    `  ${"<target>".padEnd(10)} Stryker mutation testing of a package's TypeScript (\`pnpm mutate all\`, \`pnpm mutate cancel --help\`)`,
    "",
    "`pnpm mutate lua --help` for the Lua breakages' options.",
  ].join("\n");

async function main() {
  const [what, ...args] = process.argv.slice(2);
  if (!what || what === "--help" || what === "-h") {
    process.stdout.write(`${usage()}\n`);
    return what ? 0 : 2;
  }
  const command = COMMANDS[what];
  if (command) return command.run(args);
  return strykerCommand(what)(args);
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (err) => {
    if (!(err instanceof BreakageError)) throw err;
    process.stderr.write(`pnpm mutate: ${err.message}\n`);
    process.exitCode = 2;
  },
);
