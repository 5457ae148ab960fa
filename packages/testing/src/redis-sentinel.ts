import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sleep } from "@flotilla/core";
import { TestServerError } from "./errors.ts";
import { freePort } from "./ports.ts";
import { askRedis, cleanUpOnExit, type Leftovers, LOOPBACK, launchRedis, type RedisProcess } from "./redis-process.ts";

export interface RedisSentinelOptions {
  /** The name the sentinels monitor the master under. @default "mymaster" */
  name?: string;
  /** The redis-server executable (also run as a sentinel with `--sentinel`). @default "redis-server" (from PATH) */
  binary?: string;
  /** More `--name value` arguments for the master and the replica. */
  args?: string[];
  /**
   * `down-after-milliseconds`: how long a master may not answer before a sentinel deems it down. Short
   * for fast tests, not so short that a loaded machine's pause starts a failover nobody asked for.
   * @default 3_000
   */
  downAfterMs?: number;
  /** `failover-timeout` (ms). @default 10_000 */
  failoverTimeoutMs?: number;
  /** How long starting may take in all: both servers up and synced, every sentinel knowing the others and the replica. @default 30_000 */
  startTimeoutMs?: number;
}

export interface SentinelAddress {
  /** Always "127.0.0.1": everything listens on loopback only. */
  host: string;
  port: number;
}

export interface TestRedisSentinel {
  /** The monitored master's name. */
  name: string;
  /** The three sentinels. */
  sentinels: SentinelAddress[];
  /** The two data servers as started: the first master, then its replica. */
  servers: SentinelAddress[];
  /** What a Flotilla connection (ioredis options) takes: `{ sentinels, name }`. */
  connection(): { sentinels: SentinelAddress[]; name: string };
  /** The master every sentinel reports now (a TestServerError while they disagree). */
  master(): Promise<SentinelAddress>;
  /**
   * `SENTINEL FAILOVER`, then waits until every sentinel reports the replica as the new master and
   * the old master has been turned into its replica, synced (by the sentinels: that takes about ten
   * seconds, their INFO period). Returns the old and the new master.
   */
  failover(timeoutMs?: number): Promise<{ from: SentinelAddress; to: SentinelAddress }>;
  /** Stops the three sentinels (SIGTERM), the servers staying up: no client can learn the master meanwhile. */
  stopSentinels(): Promise<void>;
  /** Starts the sentinels again, on the same ports and configuration, and waits until they name the master. */
  startSentinels(): Promise<void>;
  /** Stops the sentinels, then the servers, and removes the data directories. Idempotent. */
  stop(): Promise<void>;
}

/** A flat `[field, value, …]` reply (RESP2, or RESP3 mapped the legacy way) as an object. */
function fields(reply: unknown): Record<string, string> {
  const flat = Array.isArray(reply) ? reply : [];
  const out: Record<string, string> = {};
  for (let i = 0; i + 1 < flat.length; i += 2) out[String(flat[i])] = String(flat[i + 1]);
  return out;
}

const address = (port: number): SentinelAddress => ({ host: LOOPBACK, port });
const infoField = (info: unknown, name: string) => new RegExp(`^${name}:(.*)\\r?$`, "m").exec(String(info))?.[1]?.trim();

/**
 * A master, its replica and three sentinels (quorum 2), all private redis-server processes on free
 * loopback ports with their data in a temporary directory: for tests that connect through Sentinel
 * and fail the master over. Returns once every sentinel knows the other two and the replica.
 */
export async function startRedisSentinel(options: RedisSentinelOptions = {}): Promise<TestRedisSentinel> {
  const name = options.name ?? "mymaster";
  const binary = options.binary ?? "redis-server";
  const startTimeoutMs = options.startTimeoutMs ?? 30_000;
  const deadline = Date.now() + startTimeoutMs;
  const root = mkdtempSync(join(tmpdir(), "flotilla-redis-sentinel-"));
  const entry: Leftovers = { processes: [], dir: root };
  const cleanup = cleanUpOnExit(entry);
  const dirOf = (label: string) => {
    const dir = join(root, label);
    mkdirSync(dir);
    return dir;
  };
  /** How each process was started, to start a sentinel again. */
  const launches = new Map<RedisProcess, { port: number; dir: string; args: string[] }>();
  const start = async (port: number, label: string, args: (dir: string) => string[]) => {
    const dir = dirOf(label);
    const given = args(dir);
    const proc = await launchRedis({ binary, port, cwd: dir, deadline, args: given });
    entry.processes.push(proc);
    launches.set(proc, { port, dir, args: given });
    return proc;
  };
  const stopAll = async () => {
    // Sentinels first: stopping a server under their watch would start a failover.
    const [servers, sentinels] = [entry.processes.slice(0, 2), entry.processes.slice(2)];
    await Promise.all(sentinels.map((p) => p.halt()));
    await Promise.all(servers.map((p) => p.halt()));
    rmSync(root, { recursive: true, force: true });
    cleanup.forget();
  };

  try {
    const ports = new Set<number>();
    // Distinct: two freePort() calls may hand out the same port, as each closes its socket.
    while (ports.size < 5) ports.add(await freePort());
    const [masterPort, replicaPort, ...sentinelPorts] = [...ports] as [number, number, ...number[]];
    const server = (port: number) => (dir: string) => [
      ...["--port", String(port), "--bind", LOOPBACK, "--dir", dir, "--save", "", "--appendonly", "no"],
      // A replica's first sync would otherwise wait 5 s for other replicas to join the same transfer.
      ...["--repl-diskless-sync-delay", "0"],
      ...(options.args ?? []),
    ];
    await start(masterPort, "master", server(masterPort));
    await start(replicaPort, "replica", (dir) => [...server(replicaPort)(dir), "--replicaof", LOOPBACK, String(masterPort)]);
    // Synced before the sentinels start: they learn of replicas from the master's INFO, which they ask every 10 s.
    await waitUntil(deadline, "the replica to sync", async () => {
      const link = infoField(await askRedis(replicaPort, ["INFO", "replication"]), "master_link_status");
      return link === "up" ? true : `master_link_status:${link}`;
    });
    for (const [i, port] of sentinelPorts.entries()) {
      await start(port, `sentinel-${i}`, (dir) => {
        // A sentinel rewrites its configuration file as it learns: each has its own.
        const conf = join(dir, "sentinel.conf");
        writeFileSync(
          conf,
          [
            `port ${port}`,
            `bind ${LOOPBACK}`,
            `dir ${dir}`,
            `sentinel monitor ${name} ${LOOPBACK} ${masterPort} 2`,
            `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 3000}`,
            `sentinel failover-timeout ${name} ${options.failoverTimeoutMs ?? 10_000}`,
            `sentinel parallel-syncs ${name} 1`,
            "",
          ].join("\n"),
        );
        return [conf, "--sentinel"];
      });
    }
    await waitUntil(deadline, "the sentinels to know each other and the replica", async () => {
      for (const port of sentinelPorts) {
        const m = fields(await askRedis(port, ["SENTINEL", "MASTER", name]));
        if (m.flags !== "master" || Number(m["num-other-sentinels"]) < 2 || Number(m["num-slaves"]) < 1) {
          return `sentinel ${port} sees flags=${m.flags} num-other-sentinels=${m["num-other-sentinels"]} num-slaves=${m["num-slaves"]}`;
        }
      }
      return true;
    });

    const master = async (): Promise<SentinelAddress> => {
      const seen = new Set<string>();
      for (const port of sentinelPorts) {
        const reply = (await askRedis(port, ["SENTINEL", "GET-MASTER-ADDR-BY-NAME", name])) as [string, string] | null;
        seen.add(reply ? `${reply[0]}:${reply[1]}` : "none");
      }
      const [only] = seen;
      if (seen.size !== 1 || only === "none") throw new TestServerError(`the sentinels disagree on the master of ${name}: ${[...seen].join(", ")}`);
      return address(Number(only!.split(":")[1]));
    };

    let stopping: Promise<void> | undefined;
    const sentinelProcesses = () => entry.processes.slice(2);
    return {
      name,
      sentinels: sentinelPorts.map(address),
      servers: [address(masterPort), address(replicaPort)],
      connection: () => ({ sentinels: sentinelPorts.map(address), name }),
      master,
      async failover(timeoutMs = 45_000) {
        const by = Date.now() + timeoutMs;
        const from = await master();
        // A sentinel refuses while a failover is under way or before it has seen a replica fit to promote.
        await waitUntil(by, "a sentinel to accept SENTINEL FAILOVER", async () => {
          try {
            await askRedis(sentinelPorts[0]!, ["SENTINEL", "FAILOVER", name]);
            return true;
          } catch (err) {
            return (err as Error).message;
          }
        });
        let to: SentinelAddress | undefined;
        await waitUntil(by, `the sentinels to fail ${name} over from ${from.port}`, async () => {
          to = await master().catch(() => undefined);
          if (!to || to.port === from.port) return "the sentinels still report the old master, or disagree";
          const info = await askRedis(from.port, ["INFO", "replication"]);
          const [role, masterOf, link] = ["role", "master_port", "master_link_status"].map((f) => infoField(info, f));
          if (role !== "slave" || Number(masterOf) !== to.port || link !== "up") {
            return `the old master ${from.port} reports role:${role} master_port:${masterOf} master_link_status:${link}`;
          }
          for (const port of sentinelPorts) {
            const replicas = (await askRedis(port, ["SENTINEL", "REPLICAS", name])) as unknown[];
            const old = replicas.map(fields).find((r) => Number(r.port) === from.port);
            if (old?.flags !== "slave" || old["role-reported"] !== "slave") return `sentinel ${port} does not list ${from.port} as a healthy replica yet`;
          }
          return true;
        });
        return { from, to: to! };
      },
      async stopSentinels() {
        await Promise.all(sentinelProcesses().map((p) => p.halt()));
      },
      async startSentinels() {
        if (stopping) throw new TestServerError("the Sentinel setup was stopped");
        const by = Date.now() + startTimeoutMs;
        for (const [i, old] of sentinelProcesses().entries()) {
          if (old.alive()) continue;
          const { port, dir, args } = launches.get(old)!;
          const proc = await launchRedis({ binary, port, cwd: dir, deadline: by, args });
          launches.set(proc, { port, dir, args });
          entry.processes[2 + i] = proc;
        }
        await waitUntil(by, "the sentinels to name the master again", async () => {
          await master();
          return true;
        });
      },
      stop() {
        stopping ??= stopAll();
        return stopping;
      },
    };
  } catch (err) {
    await Promise.all(entry.processes.map((p: RedisProcess) => p.halt("SIGKILL")));
    rmSync(root, { recursive: true, force: true });
    cleanup.forget();
    throw err instanceof TestServerError ? err : new TestServerError(`could not start Redis Sentinel: ${(err as Error).message}`, err);
  }
}

/** Polls `check` (true when done, else why not) until it is done; past `deadline` a TestServerError says what was still wrong. */
async function waitUntil(deadline: number, what: string, check: () => Promise<true | string>): Promise<void> {
  for (;;) {
    const result = await check().catch((err: Error) => `${err.message}`);
    if (result === true) return;
    if (Date.now() > deadline) throw new TestServerError(`timed out waiting for ${what}: ${result}`);
    await sleep(100);
  }
}
