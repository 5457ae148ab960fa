import type { JsonValue, ResultOf, SubmitOptions } from "@flotilla/core";
import { FlotillaClient } from "./client.ts";
import type { AgentLike } from "./submission.ts";
import type { TaskHandle } from "./task-handle.ts";

let defaultClient: FlotillaClient | undefined;

/** The client `distributed()` uses when none is passed: `new FlotillaClient()`, so REDIS_URL and FLOTILLA_PREFIX as every entry point reads them. */
export function defaultFlotillaClient(): FlotillaClient {
  defaultClient ??= new FlotillaClient();
  return defaultClient;
}

/** Closes the default client (for a clean exit). */
export async function closeDefaultClient(): Promise<void> {
  const client = defaultClient;
  defaultClient = undefined;
  await client?.close();
}

export interface DistributedOptions extends SubmitOptions {
  /** The client to submit through. @default defaultFlotillaClient() */
  client?: FlotillaClient;
}

/**
 * Runs `agent` on `input` somewhere in the fleet; returns a handle to stream, await or cancel it,
 * whose `result()` is typed by the agent (`AgentResult<O>` for an `Agent<O>`).
 */
export function distributed<A extends AgentLike>(agent: A, input: JsonValue, options: DistributedOptions = {}): Promise<TaskHandle<ResultOf<A>>> {
  const { client, ...submit } = options;
  return (client ?? defaultFlotillaClient()).submit(agent, input, submit);
}
