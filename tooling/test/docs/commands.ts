// Checks that a command a README gives exists as written, from a fresh clone: npm scripts of the
// root (and the flotilla.sh commands they run), the scripts a `--filter` names, files and bins.
// `pnpm` itself is refused: it is not on the PATH of a fresh machine (`npm run …` is).
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

interface Manifest {
  name?: string;
  scripts?: Record<string, string>;
  bin?: string | Record<string, string>;
}

export class CommandChecker {
  private readonly manifests: Map<string, Manifest>;
  private readonly flotillaSh: string;
  private readonly root: string;

  constructor(root: string) {
    this.root = root;
    const dirs = [".", "examples", "tooling", ...["packages", "apps"].flatMap((d) => readdirSync(join(root, d)).map((n) => join(d, n)))];
    this.manifests = new Map(
      dirs
        .filter((d) => existsSync(join(root, d, "package.json")))
        .map((d) => {
          const m = JSON.parse(readFileSync(join(root, d, "package.json"), "utf8")) as Manifest;
          return [d === "." ? "<root>" : (m.name ?? d), m] as const;
        }),
    );
    this.flotillaSh = readFileSync(join(root, "tooling/scripts/flotilla.sh"), "utf8");
  }

  /** The problem with one line of a shell block, or undefined when it is fine. */
  check(line: string): string | undefined {
    const command = line.replace(/\s+#.*$/, "").trim();
    if (command === "" || command.startsWith("#")) return undefined;
    const words = command.split(/\s+/);
    const [head, ...args] = words;
    if (head === "npm") return this.npm(args);
    if (head === "npx" || head === "flotilla-worker") return this.bin(head === "npx" ? args[0]! : head);
    if (head === "node") return this.node(args);
    if (head === "bash" && args[0] === "tooling/scripts/flotilla.sh") return this.flotilla(args.slice(1));
    if (head === "docker") return this.docker(args);
    if (head === "pnpm") return `"${command}": pnpm is not on the PATH of a fresh clone; give the npm script (npm run …)`;
    return `"${command}": the docs test does not know this command (teach tooling/test/docs/commands.ts)`;
  }

  private script(pkg: string, name: string): string | undefined {
    const manifest = this.manifests.get(pkg);
    if (!manifest) return `no workspace package ${pkg}`;
    return manifest.scripts?.[name] === undefined ? `${pkg} has no script "${name}"` : undefined;
  }

  private npm(args: string[]): string | undefined {
    const [verb, name, ...rest] = args;
    const script = verb === "test" ? "test" : verb === "run" ? name : undefined;
    if (!script) return `npm ${args.join(" ")}: only npm run <script> and npm test are checked`;
    const missing = this.script("<root>", script);
    if (missing) return missing;
    const extra = verb === "test" ? [name, ...rest].filter((a): a is string => a !== undefined) : rest;
    return this.runs(this.manifests.get("<root>")!.scripts![script]!, extra[0] === "--" ? extra.slice(1) : extra);
  }

  /** What an npm script runs, followed through flotilla.sh and `pnpm --filter`. */
  private runs(body: string, extra: string[]): string | undefined {
    const words = body.split(/\s+/);
    if (words[0] === "bash" && words[1] === "tooling/scripts/flotilla.sh") return this.flotilla([...words.slice(2), ...extra]);
    return this.pnpm([...words, ...extra]);
  }

  private pnpm(words: string[]): string | undefined {
    if (words[0] !== "pnpm") return undefined; // node, turbo, changeset, …: run as they are
    const filter = words.indexOf("--filter");
    if (filter >= 0) return this.script(words[filter + 1]!, words.slice(filter + 2).find((w) => !w.startsWith("-"))!);
    return undefined;
  }

  private flotilla([command, ...args]: string[]): string | undefined {
    if (!command) return "flotilla.sh needs a command";
    const cases = [...this.flotillaSh.matchAll(/^ {2}([a-z|-]+)\)([\s\S]*?);;/gm)];
    const found = cases.find((c) => c[1]!.split("|").includes(command));
    if (!found) {
      // Any other command runs as it is, with the toolchain on the PATH (flotilla.sh's last case).
      if (command === "pnpm") return this.pnpm([command, ...args]);
      if (command === "node") return this.node(args);
      if (command === "bash") return existsSync(join(this.root, args[0] ?? "")) ? undefined : `${args[0]} does not exist`;
      return `flotilla.sh has no command "${command}"`;
    }
    // A command that hands its arguments to a package's scripts: the first must be one of them.
    const handsOver = /--filter (\S+) "\$@"/.exec(found[2]!);
    if (handsOver) return args[0] ? this.script(handsOver[1]!, args[0]) : `flotilla.sh ${command} needs a script of ${handsOver[1]}`;
    return undefined;
  }

  private bin(name: string): string | undefined {
    const has = [...this.manifests.values()].some((m) => typeof m.bin === "object" && m.bin[name] !== undefined);
    return has ? undefined : `no workspace package has a bin "${name}"`;
  }

  /** `node <file> [args]`: the file, and any repository path among the args, exist (a build output: its source). */
  private node(args: string[]): string | undefined {
    for (const arg of args.filter((a) => /^(apps|packages|examples|tooling)\/.*\.[cm]?[jt]s$/.test(a))) {
      const source = arg.replace("/dist/", "/src/").replace(/\.js$/, ".ts");
      if (!existsSync(join(this.root, arg)) && !existsSync(join(this.root, source))) return `${arg} does not exist (nor its source ${source})`;
    }
    return undefined;
  }

  private docker(args: string[]): string | undefined {
    if (args[0] === "compose") return existsSync(join(this.root, "docker-compose.yml")) ? undefined : "no docker-compose.yml";
    const file = args[args.indexOf("-f") + 1];
    if (args[0] !== "build" || !file) return `docker ${args.join(" ")}: only docker build -f <file> and docker compose are checked`;
    if (!existsSync(join(this.root, file))) return `${file} does not exist`;
    const target = args.includes("--target") ? args[args.indexOf("--target") + 1] : undefined;
    const stages = [...readFileSync(join(this.root, file), "utf8").matchAll(/^FROM\s+\S+\s+AS\s+(\S+)/gim)].map((m) => m[1]);
    return target && !stages.includes(target) ? `${file} has no stage ${target}` : undefined;
  }
}
