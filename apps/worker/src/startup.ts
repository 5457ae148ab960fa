import { ErrorCodes, FlotillaError, ValidationError } from "@flotilla/core";
import { loadWorkerModule, type WorkerModule } from "./config.ts";
import { ModuleShapeError } from "./module-shape.ts";

// Startup failures the operator can fix, said in words. A bad configuration (exit 2) is a
// ValidationError naming the setting; an error of the user's own code is kept in `details.cause`
// and printed with its stack, which points into their module.

const bad = (field: string, message: string, cause?: unknown) =>
  new ValidationError("worker configuration", [{ path: field, message }], cause === undefined ? {} : { details: { cause } });

/** The user's module, or a ValidationError (`module`) saying which file failed and why. */
export async function loadModule(path: string | undefined): Promise<WorkerModule> {
  try {
    return await loadWorkerModule(path);
  } catch (err) {
    if (err instanceof ModuleShapeError) throw err; // loaded, but not a shape a worker serves: says so itself
    throw bad("module", `cannot load ${path} (--module / FLOTILLA_MODULE): ${(err as Error)?.message ?? err}`, err);
  }
}

/**
 * Loads @flotilla/temporal, an optional dependency: Redis-mode deployments never install or load it.
 * When it is not installed, a ValidationError (`executor`) says how to install it.
 */
export async function loadTemporal(): Promise<typeof import("@flotilla/temporal")> {
  try {
    return await import("@flotilla/temporal");
  } catch (err) {
    if ((err as { code?: string })?.code !== "ERR_MODULE_NOT_FOUND") throw err;
    throw bad(
      "executor",
      `temporal needs the @flotilla/temporal package, which could not be loaded (${(err as Error).message}): install it next to flotilla-worker (npm install @flotilla/temporal), or use --executor redis`,
    );
  }
}

/** What stderr says about an error that stopped the start, and the exit code (2: bad configuration, 1: anything else). */
export function describeStartupError(err: unknown): { exitCode: number; text: string } {
  if (err instanceof ValidationError) {
    const cause = err.details?.cause;
    const stack = cause instanceof Error && cause.stack ? `\n\n${cause.stack}` : "";
    return { exitCode: 2, text: `${err.message}${stack}\n` };
  }
  let message = String((err as Error)?.message ?? err);
  if (err instanceof FlotillaError && err.code === ErrorCodes.TEMPORAL_UNAVAILABLE) {
    message += " (is the server running? its address is --temporal-address / TEMPORAL_ADDRESS)";
  }
  const code = err instanceof FlotillaError ? err.code : undefined;
  return { exitCode: 1, text: `${JSON.stringify({ level: "error", msg: "worker failed to start", error: message, ...(code && { code }) })}\n` };
}
