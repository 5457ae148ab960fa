import { ErrorCodes, FlotillaError } from "@flotilla/core";
import { NativeConnection } from "@temporalio/worker";

/**
 * Opens the worker's connection to Temporal. A failure is a FlotillaError (TEMPORAL_UNAVAILABLE)
 * naming the address and the reason in words, not the Rust transport error's debug dump
 * (`tonic::transport::Error(Transport, ConnectError(…))`), which stays the `cause`.
 */
export async function connectTemporal(address: string): Promise<NativeConnection> {
  try {
    return await NativeConnection.connect({ address });
  } catch (err) {
    throw new FlotillaError(ErrorCodes.TEMPORAL_UNAVAILABLE, `cannot reach the Temporal server at ${address}: ${reasonOf(err)}`, { cause: err });
  }
}

/** The innermost human part of a transport error: `Connection refused`, `failed to lookup address information: …`. */
export function reasonOf(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  const detail = /(?:message|error): "([^"]+)"/.exec(message) ?? /ConnectError\("([^"]+)"/.exec(message);
  return detail?.[1] ?? message;
}
