import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { type NativeConnection, Worker } from "@temporalio/worker";
import { type ActivityOptions, createActivities } from "./activities.ts";
import { connectTemporal } from "./connect.ts";

export interface TemporalWorkerOptions extends ActivityOptions {
  /** A connection to Temporal (stays yours to close), or where to open one (closed with the worker). */
  connection?: NativeConnection;
  /** @default "127.0.0.1:7233" */
  address?: string;
  /** @default "default" */
  namespace?: string;
  /** @default "flotilla" */
  taskQueue?: string;
  /** Activities run at once. @default 100 */
  maxConcurrentActivityTaskExecutions?: number;
  /** A bundle made once with `bundleWorkflowCode({ workflowsPath })`, for processes that start many workers. @default bundled from workflowsPath */
  workflowBundle?: { code: string };
}

/** A Temporal worker serving Flotilla's workflow and activities, that closes what it opened when it stops. */
export interface TemporalWorker {
  /** Polls until `shutdown()` (or a fatal error), then closes the Redis connection and the Temporal connection it opened. */
  run(): Promise<void>;
  /** Starts a graceful shutdown (if running): `run()` resolves once the tasks in flight are done. */
  shutdown(): void;
  /** Shuts down, waits for `run()` to end, and so closes what it opened; also for a worker never run. */
  close(): Promise<void>;
  /** The Temporal worker underneath (state, metrics). Run it through this wrapper, so its resources are closed. */
  readonly worker: Worker;
}

const fromSource = extname(fileURLToPath(import.meta.url)) === ".ts";

/** Where the workflow's code is, for Temporal's bundler (the .ts source in the workspace, .js when built). */
export const workflowsPath = fileURLToPath(new URL(`./workflow${fromSource ? ".ts" : ".js"}`, import.meta.url));

/**
 * Temporal's bundler settings for the workflow: run from source (the workspace), its imports of
 * Flotilla packages resolve to their TypeScript sources, as everywhere else here.
 */
export const webpackConfigHook = (config: { resolve?: { conditionNames?: string[] } }) => {
  if (fromSource) config.resolve = { ...config.resolve, conditionNames: ["@flotilla/source", "import", "module", "webpack", "default"] };
  return config;
};

/**
 * A Temporal worker that runs Flotilla's workflow and activities: what a process needs to serve
 * tasks that Flotilla workers hand to Temporal with `temporalExecutor`. `run()` it; `shutdown()` to stop.
 */
export async function createTemporalWorker(options: TemporalWorkerOptions = {}): Promise<TemporalWorker> {
  const ownConnection = options.connection === undefined;
  const connection = options.connection ?? (await connectTemporal(options.address ?? "127.0.0.1:7233"));
  const activities = createActivities(options);
  const release = async () => {
    await activities.close();
    if (ownConnection) await connection.close();
  };
  let worker: Worker;
  try {
    worker = await Worker.create({
      connection,
      namespace: options.namespace ?? "default",
      taskQueue: options.taskQueue ?? "flotilla",
      ...(options.workflowBundle
        ? { workflowBundle: options.workflowBundle }
        : { workflowsPath, bundlerOptions: { webpackConfigHook: webpackConfigHook as never } }),
      activities: activities.activities,
      maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions ?? 100,
    });
  } catch (err) {
    await release();
    throw err;
  }
  let running: Promise<void> | undefined;
  const run = () =>
    (running ??= (async () => {
      try {
        await worker.run();
      } finally {
        await release();
      }
    })());
  const shutdown = () => {
    if (worker.getState() === "RUNNING") worker.shutdown();
  };
  return {
    worker,
    run,
    shutdown,
    async close() {
      // A worker never run still holds its connection: run it and stop it at once, to let go of both.
      const done = run();
      shutdown();
      // run() reports its own failure to whoever awaits it; close() only waits for the end.
      await done.catch(() => {});
    },
  };
}
