// What a command runs with: where it writes, its global options, and one client made on first use.
import type { Bus } from "@flotilla/bus";
import { FlotillaClient } from "@flotilla/client";
import { type Colors, colors, type OutputStream, useColor } from "./format.ts";
import { type GlobalFlags, type GlobalOptions, resolveGlobals } from "./options.ts";

/** Where the command reads its settings from and writes to: the process's, or a test's. */
export interface CliIo {
  stdout: OutputStream;
  stderr: OutputStream;
  /** Read for REDIS_URL, REDIS_CLUSTER_NODES, FLOTILLA_PREFIX, NO_COLOR and TERM. */
  env: Readonly<Record<string, string | undefined>>;
  /** Aborted on Ctrl-C: `--watch` stops (exit 0), `stream` stops following (exit 130). */
  signal?: AbortSignal | undefined;
}

export class Context {
  readonly io: CliIo;
  /** Colours for stdout and for stderr: each only on a terminal, never under NO_COLOR. */
  readonly c: Colors;
  readonly ce: Colors;
  /** What the command exits with when it throws nothing. */
  exitCode = 0;
  private readonly flags: () => GlobalFlags;
  private resolved: GlobalOptions | undefined;
  private made: FlotillaClient | undefined;
  private madeBus: Bus | undefined;

  /** @param flags the global flags as parsed, read when a command first needs them */
  constructor(io: CliIo, flags: () => GlobalFlags) {
    this.io = io;
    this.flags = flags;
    this.c = colors(useColor(io.stdout, io.env));
    this.ce = colors(useColor(io.stderr, io.env));
  }

  get globals(): GlobalOptions {
    this.resolved ??= resolveGlobals(this.flags(), this.io.env);
    return this.resolved;
  }

  /** A commander action that runs `fn` and keeps the exit code it returns (0 when it returns none). */
  action<A extends unknown[]>(fn: (...args: A) => Promise<unknown>): (...args: A) => Promise<void> {
    return async (...args: A) => {
      const code = await fn(...args);
      if (typeof code === "number") this.exitCode = code;
    };
  }

  /** `--json`: machine output. Colour is off for it whatever the terminal. */
  get json(): boolean {
    return this.globals.json;
  }

  /** The colours of human output (none under `--json`). */
  get colors(): Colors {
    return this.json ? colors(false) : this.c;
  }

  get signal(): AbortSignal | undefined {
    return this.io.signal;
  }

  /** The client, connected on first use to `--redis` under `--prefix`. */
  client(): FlotillaClient {
    this.made ??= new FlotillaClient({ ...this.connection(), prefix: this.globals.prefix });
    return this.made;
  }

  /** `--redis`, else the cluster REDIS_CLUSTER_NODES names (in the environment given to `run`), else the default. */
  private connection(): { redis?: string | { cluster: Array<{ host: string; port: number }> } } {
    const { redis, cluster } = this.globals;
    if (redis !== undefined) return { redis };
    return cluster ? { redis: { cluster } } : {};
  }

  /** The event bus on the same Redis and prefix, made on first use (loaded only by the bus commands). */
  async bus(): Promise<Bus> {
    if (!this.madeBus) {
      const { Bus } = await import("@flotilla/bus");
      this.madeBus = new Bus({ ...this.connection(), prefix: this.globals.prefix });
    }
    return this.madeBus;
  }

  /** Writes `text` to stdout as it is. */
  print(text: string): void {
    this.io.stdout.write(text);
  }

  /** What a command did: `json` as a line under `--json`, else `text` (a line). */
  done(json: unknown, text: string): void {
    if (this.json) this.printJson(json);
    else this.print(`${text}\n`);
  }

  /** Writes `value` to stdout as one line of JSON. */
  printJson(value: unknown): void {
    this.io.stdout.write(`${JSON.stringify(value)}\n`);
  }

  /** A line for the person watching (progress, what was done), on stderr so stdout stays the output. */
  note(text: string): void {
    this.io.stderr.write(`${text}\n`);
  }

  async close(): Promise<void> {
    const client = this.made;
    const bus = this.madeBus;
    this.made = undefined;
    this.madeBus = undefined;
    await Promise.all([client?.close().catch(() => {}), bus?.close().catch(() => {})]);
  }
}
