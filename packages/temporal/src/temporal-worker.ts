import { extname } from "node:path";
import { fileURLToPath } from "node:url";
import { NativeConnection, Worker } from "@temporalio/worker";
import { type ActivityOptions, createActivities } from "./activities.ts";

export interface TemporalWorkerOptions extends ActivityOptions {
  /** A connection to Temporal, or where to open one. */
  connection?: NativeConnection;
  /** @default "127.0.0.1:7233" */
  address?: string;
  /** @default "default" */
  namespace?: string;
  /** @default "flotilla" */
  taskQueue?: string;
  /** Activities run at once. @default 100 */
  maxConcurrentActivityTaskExecutions?: number;
  /** A bundle made once with `bundleWorkflowCode({ workflowsPath })`, for processes that start many workers. */
  workflowBundle?: { code: string };
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
export async function createTemporalWorker(options: TemporalWorkerOptions = {}): Promise<Worker> {
  const connection = options.connection ?? (await NativeConnection.connect({ address: options.address ?? "127.0.0.1:7233" }));
  return Worker.create({
    connection,
    namespace: options.namespace ?? "default",
    taskQueue: options.taskQueue ?? "flotilla",
    ...(options.workflowBundle ? { workflowBundle: options.workflowBundle } : { workflowsPath, bundlerOptions: { webpackConfigHook: webpackConfigHook as never } }),
    activities: createActivities(options),
    maxConcurrentActivityTaskExecutions: options.maxConcurrentActivityTaskExecutions ?? 100,
  });
}
