import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sleep } from "@flotilla/core";
import { Redis } from "ioredis";
import { TestServerError } from "./errors.ts";
import { freePort } from "./ports.ts";

export interface RedisClusterOptions {
  /** How many masters share the 16384 slots; redis-cli will not create a cluster with fewer than 3. @default 3 */
  masters?: number;
  /** Replicas per master. @default 1 */
  replicasPerMaster?: number;
  /** The redis-server executable. @default "redis-server" (from PATH) */
  binary?: string;
  /** The redis-cli executable, which creates the cluster. @default "redis-cli" (from PATH) */
  cli?: string;
  /** More `--name value` arguments for every redis-server. */
  args?: string[];
  /** How long starting may take in all: every node up, the cluster created, every replica synced. @default 20_000 */
  startTimeoutMs?: number;
  /** cluster-node-timeout (ms): how soon replicas take over a dead master. @default 2_000 */
  nodeTimeoutMs?: number;
}

export interface ClusterNodeAddress {
  /** Always "127.0.0.1": the nodes listen on loopback only. */
  host: string;
  /** The port clients connect to (the cluster bus uses another one). */
  port: number;
}

export interface TestRedisCluster {
  /** Every node, masters first, as started. */
  nodes: ClusterNodeAddress[];
  /** "127.0.0.1:p1,127.0.0.1:p2,…" (the form REDIS_CLUSTER_NODES takes). */
  nodeList: string;
  /** The node addresses that are masters now (CLUSTER NODES asked of a live node); a killed master stays in until the cluster marks it failed. */
  masters(): Promise<ClusterNodeAddress[]>;
  /** SIGKILLs the node on `port` (a crash: nothing flushed). */
  kill(port: number): Promise<void>;
  /** Starts a killed node again on the same port and data dir (it rejoins as it can: with no persistence it comes back empty). */
  revive(port: number): Promise<void>;
  /**
   * Waits until every live node reports cluster_state:ok, all 16384 slots are served by live masters (the same ones
   * in every live node's view) and every live replica is synced (master_link_status:up). Throws a TestServerError
   * naming what was still wrong after `timeoutMs` (default: the cluster's `startTimeoutMs`).
   */
  waitHealthy(timeoutMs?: number): Promise<void>;
  /** Stops every node (SIGTERM) and removes the data dirs. Idempotent. */
  stop(): Promise<void>;
}

const SLOTS = 16384;
const HOST = "127.0.0.1";

interface Node {
  port: number;
  /** cluster-port: chosen free too, as the default (port + 10000) may be taken or above 65535. */
  busPort: number;
  dir: string;
  child?: ChildProcess;
  /** The tail of redis-server's stdout and stderr: bind errors are logged to stdout, config errors to stderr. */
  output: string;
}

/** One line of CLUSTER NODES. */
interface NodeEntry {
  port: number;
  flags: string[];
  /** [first, last] slot ranges; "[slot->-id]" migration entries are left out. */
  slots: [number, number][];
}

const tail = (text: string) => text.slice(-2000);
const alive = (n: Node) => n.child?.pid !== undefined && n.child.exitCode === null && n.child.signalCode === null;

/** Clusters not stopped yet: a test process that crashes or forgets stop() kills their nodes and removes their dirs on exit. */
const unstopped = new Set<Node[]>();
let exitHooked = false;
function removeOnExit(nodes: Node[]): void {
  if (!exitHooked) {
    exitHooked = true;
    // "exit" allows only synchronous work; kill() and rmSync() are. A process killed by a signal never gets here.
    process.on("exit", () => {
      for (const nodes of unstopped) {
        for (const n of nodes) {
          if (alive(n)) n.child!.kill("SIGKILL");
          rmSync(n.dir, { recursive: true, force: true });
        }
      }
    });
  }
  unstopped.add(nodes);
}

/** Sends one command over a connection of its own (a plain one: CLUSTER INFO/NODES are about that node). */
async function ask(port: number, ...command: string[]): Promise<string> {
  const r = new Redis({
    host: HOST,
    port,
    lazyConnect: true,
    enableReadyCheck: false,
    connectTimeout: 1000,
    commandTimeout: 1000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  r.on("error", () => {}); // the rejected command carries it
  try {
    await r.connect();
    return String(await r.call(command[0]!, ...command.slice(1)));
  } finally {
    r.disconnect();
  }
}

function parseNodes(text: string): NodeEntry[] {
  return text
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line) => {
      const [, address = "", flags = "", , , , , , ...slots] = line.trim().split(" ");
      const hostPort = address.split(/[@,]/)[0]!;
      return {
        port: Number(hostPort.slice(hostPort.lastIndexOf(":") + 1)),
        flags: flags.split(","),
        slots: slots
          .filter((s) => !s.startsWith("["))
          .map((s) => {
            const [first, last = first] = s.split("-").map(Number);
            return [first!, last!];
          }),
      };
    });
}

/** Distinct free ports: two freePort() calls may hand out the same one, as each closes its socket. */
async function freePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

/** Starts redis-server for `node` and waits until it answers, as itself: another server could hold the port. */
async function launch(node: Node, binary: string, args: string[], deadline: number): Promise<void> {
  const child = spawn(binary, args, { cwd: node.dir, stdio: ["ignore", "pipe", "pipe"] });
  node.child = child;
  node.output = "";
  const keep = (d: Buffer) => {
    node.output = tail(node.output + d.toString());
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  let failure: Error | undefined;
  child.once("error", (err) => {
    failure = new TestServerError(`could not start ${binary}: ${err.message}`, err);
  });
  // "close", not "exit": by then all of its output has been read.
  child.once("close", (code, signal) => {
    failure ??= new TestServerError(`${binary} on port ${node.port} exited (${code ?? signal}) while starting: ${node.output.trim()}`);
  });
  const own = (info: string) => info.includes(`process_id:${child.pid}\r`);
  while (!(await ask(node.port, "INFO", "server").then(own, () => false))) {
    if (failure) throw failure;
    if (Date.now() > deadline) {
      await halt(node, "SIGKILL");
      throw new TestServerError(`${binary} on port ${node.port} did not answer in time: ${node.output.trim()}`);
    }
    await sleep(50);
  }
}

async function halt(node: Node, signal: NodeJS.Signals): Promise<void> {
  const child = node.child;
  if (!child || !alive(node)) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill(signal);
  // SIGTERM makes redis-server write nodes.conf and exit; SIGKILL if it hangs, so stop() always ends.
  const stuck = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(stuck);
}

/** `redis-cli --cluster create`: assigns the slots and the replicas, and returns once every node agrees on the configuration. */
function create(cli: string, nodes: Node[], replicas: number, deadline: number): Promise<void> {
  const args = ["--cluster", "create", ...nodes.map((n) => `${HOST}:${n.port}`), "--cluster-replicas", String(replicas), "--cluster-yes"];
  return new Promise((resolve, reject) => {
    const child = spawn(cli, args, { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    const keep = (d: Buffer) => {
      output = tail(output + d.toString());
    };
    child.stdout!.on("data", keep);
    child.stderr!.on("data", keep);
    const late = setTimeout(() => child.kill("SIGKILL"), Math.max(0, deadline - Date.now()));
    child.once("error", (err) => {
      clearTimeout(late);
      reject(new TestServerError(`could not start ${cli}: ${err.message}`, err));
    });
    child.once("close", (code, signal) => {
      clearTimeout(late);
      if (code === 0) resolve();
      else reject(new TestServerError(`${cli} --cluster create ${signal ? "did not finish in time" : `failed (${code})`}: ${output.trim()}`));
    });
  });
}

/** What keeps the cluster from being healthy (see `waitHealthy`), or undefined when nothing does. */
async function unhealthy(nodes: Node[]): Promise<string | undefined> {
  const live = nodes.filter(alive);
  if (live.length === 0) return "no node is running";
  const livePorts = new Set(live.map((n) => n.port));
  let agreed: string | undefined;
  for (const n of live) {
    const at = `${HOST}:${n.port}`;
    try {
      const state = /cluster_state:(\w+)/.exec(await ask(n.port, "CLUSTER", "INFO"))?.[1];
      if (state !== "ok") return `${at} reports cluster_state:${state}`;
      const entries = parseNodes(await ask(n.port, "CLUSTER", "NODES"));
      // A killed master keeps its slots in the others' views until a replica takes them over.
      const owners = entries.filter((e) => e.flags.includes("master") && !e.flags.includes("fail") && livePorts.has(e.port));
      const served = owners.reduce((sum, e) => sum + e.slots.reduce((s, [first, last]) => s + last - first + 1, 0), 0);
      if (served !== SLOTS) return `${at} sees ${served} of ${SLOTS} slots served by live masters`;
      // The same view everywhere: a revived master believes it still owns its old slots until the others tell it
      // otherwise, and a new replica is taken for a master until word of it has gone round.
      const view = [
        ...owners.filter((e) => e.slots.length > 0).map((e) => `${e.port}:${e.slots.map(([first, last]) => `${first}-${last}`).join(",")}`),
        ...entries.filter((e) => e.flags.includes("slave") && livePorts.has(e.port)).map((e) => `${e.port}:replica`),
      ]
        .sort()
        .join(" ");
      if (agreed !== undefined && view !== agreed) return `the live nodes disagree on the roles and slots (${at} sees ${view})`;
      agreed = view;
      if (entries.find((e) => e.flags.includes("myself"))?.flags.includes("slave")) {
        const link = /master_link_status:(\w+)/.exec(await ask(n.port, "INFO", "replication"))?.[1];
        if (link !== "up") return `replica ${at} has master_link_status:${link}`;
      }
    } catch (err) {
      return `${at} did not answer: ${(err as Error).message}`;
    }
  }
  return undefined;
}

async function waitUntilHealthy(nodes: Node[], timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const reason = await unhealthy(nodes);
    if (reason === undefined) return;
    if (Date.now() > deadline) throw new TestServerError(`the Redis Cluster was not healthy within ${timeoutMs} ms: ${reason}`);
    await sleep(100);
  }
}

/**
 * A Redis Cluster of private redis-server processes on free loopback ports, each with its data in a
 * temporary directory: for tests that run against a cluster, kill a master and watch a replica take over.
 * Returns once the cluster is healthy (see `waitHealthy`).
 */
export async function startRedisCluster(options: RedisClusterOptions = {}): Promise<TestRedisCluster> {
  const masterCount = options.masters ?? 3;
  const replicas = options.replicasPerMaster ?? 1;
  const binary = options.binary ?? "redis-server";
  const cli = options.cli ?? "redis-cli";
  const startTimeoutMs = options.startTimeoutMs ?? 20_000;
  const nodeTimeoutMs = options.nodeTimeoutMs ?? 2000;
  if (!Number.isInteger(masterCount) || masterCount < 3) throw new TestServerError(`a Redis Cluster needs at least 3 masters, not ${masterCount}`);
  if (!Number.isInteger(replicas) || replicas < 0) throw new TestServerError(`replicasPerMaster must be a whole number >= 0, not ${replicas}`);
  const deadline = Date.now() + startTimeoutMs;

  const argsFor = (n: Node) => [
    "--port",
    String(n.port),
    "--bind",
    HOST,
    "--dir",
    n.dir,
    "--cluster-enabled",
    "yes",
    "--cluster-config-file",
    "nodes.conf",
    "--cluster-port",
    String(n.busPort),
    "--cluster-node-timeout",
    String(nodeTimeoutMs),
    "--save",
    "",
    "--appendonly",
    "no",
    // A replica's first sync would otherwise wait 5 s for other replicas to join the same transfer.
    "--repl-diskless-sync-delay",
    "0",
    ...(options.args ?? []),
  ];

  const nodes: Node[] = [];
  removeOnExit(nodes);
  const removeDirs = () => {
    for (const n of nodes) rmSync(n.dir, { recursive: true, force: true });
    unstopped.delete(nodes);
  };
  try {
    const ports = await freePorts(2 * masterCount * (1 + replicas));
    for (let i = 0; i < ports.length; i += 2) {
      nodes.push({ port: ports[i]!, busPort: ports[i + 1]!, dir: mkdtempSync(join(tmpdir(), "flotilla-redis-cluster-")), output: "" });
    }
    // Settled, not all: cleanup must not kill nodes that are still being launched.
    const launched = await Promise.allSettled(nodes.map((n) => launch(n, binary, argsFor(n), deadline)));
    const failed = launched.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
    await create(cli, nodes, replicas, deadline);
    await waitUntilHealthy(nodes, Math.max(0, deadline - Date.now()));
    // redis-cli picks the masters itself; list them first whatever it picked (sort is stable: start order within each).
    const masterPorts = new Set(
      parseNodes(await ask(nodes[0]!.port, "CLUSTER", "NODES"))
        .filter((e) => e.flags.includes("master"))
        .map((e) => e.port),
    );
    nodes.sort((a, b) => Number(masterPorts.has(b.port)) - Number(masterPorts.has(a.port)));
  } catch (err) {
    await Promise.all(nodes.map((n) => halt(n, "SIGKILL")));
    removeDirs();
    throw err instanceof TestServerError ? err : new TestServerError(`could not start a Redis Cluster: ${(err as Error).message}`, err);
  }

  const node = (port: number) => {
    const n = nodes.find((x) => x.port === port);
    if (!n) throw new RangeError(`no node of this cluster is on port ${port}`);
    return n;
  };
  let stopping: Promise<void> | undefined;
  return {
    nodes: nodes.map((n) => ({ host: HOST, port: n.port })),
    nodeList: nodes.map((n) => `${HOST}:${n.port}`).join(","),
    async masters() {
      for (const n of nodes.filter(alive)) {
        let entries: NodeEntry[];
        try {
          entries = parseNodes(await ask(n.port, "CLUSTER", "NODES"));
        } catch {
          continue; // killed or restarting just now: ask another
        }
        const ports = new Set(entries.filter((e) => e.flags.includes("master") && !e.flags.includes("fail")).map((e) => e.port));
        return nodes.filter((x) => ports.has(x.port)).map((x) => ({ host: HOST, port: x.port }));
      }
      throw new TestServerError("no node of the Redis Cluster answers CLUSTER NODES");
    },
    kill: (port) => halt(node(port), "SIGKILL"),
    async revive(port) {
      const n = node(port);
      if (stopping) throw new TestServerError("the Redis Cluster was stopped");
      if (!alive(n)) await launch(n, binary, argsFor(n), Date.now() + startTimeoutMs);
    },
    waitHealthy: (timeoutMs = startTimeoutMs) => waitUntilHealthy(nodes, timeoutMs),
    stop() {
      stopping ??= Promise.all(nodes.map((n) => halt(n, "SIGTERM"))).then(removeDirs);
      return stopping;
    },
  };
}
