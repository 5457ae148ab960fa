// @ts-check
// `pnpm mutate <what> [args]`: mutation testing, one command per kind of code.
//   pnpm mutate lua [id …]   deliberate breakages of the Lua scripts (lua.mjs), which Stryker cannot mutate
//   pnpm mutate <package>    Stryker on a TypeScript package: not set up yet (see strykerCommand below)
import { BreakageError } from "./breakages.mjs";

/** @type {Record<string, { about: string, run: (args: string[]) => Promise<number> }>} */
const COMMANDS = {
  lua: {
    about: "break each guard of the Lua scripts in turn and see which tests notice (tooling/mutate/lua-breakages.json)",
    run: async (args) => (await import("./lua.mjs")).main(args),
  },
};

/**
 * Extension point: `pnpm mutate <package>` (a workspace package, e.g. `core` or `@flotilla/store`) is
 * meant to run Stryker on that package's TypeScript. Whoever adds Stryker returns a command here
 * (e.g. run `stryker run` with the package's config); undefined means "not set up".
 * @param {string} _target @returns {((args: string[]) => Promise<number>) | undefined}
 */
function strykerCommand(_target) {
  return undefined;
}

const usage = () =>
  [
    "pnpm mutate <what> [args]",
    "",
    ...Object.entries(COMMANDS).map(([name, c]) => `  ${name.padEnd(10)} ${c.about}`),
    `  ${"<package>".padEnd(10)} Stryker mutation testing of a TypeScript package (not set up yet)`,
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
  const stryker = strykerCommand(what);
  if (stryker) return stryker(args);
  process.stderr.write(
    `pnpm mutate ${what}: Stryker mutation testing of TypeScript packages is not set up yet; it will run as \`pnpm mutate <package>\` ` +
      "(tooling/mutate/index.mjs, strykerCommand). The Lua scripts, which Stryker cannot mutate: `pnpm mutate lua`.\n\n" +
      `${usage()}\n`,
  );
  return 2;
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
