import { ErrorCodes, FlotillaError, type Logger } from "@flotilla/core";
import type { ExecutionContext } from "@flotilla/worker";
import { type Client, ServiceError, WorkflowNotFoundError } from "@temporalio/client";
import { describe, expect, it, type Mock, vi } from "vitest";
import { temporalExecutor } from "../src/index.ts";

/** A gRPC failure as the Temporal client wraps it (14: UNAVAILABLE, 3: INVALID_ARGUMENT). */
const grpcFailure = (code: number) =>
  new ServiceError("Failed to cancel workflow", { cause: Object.assign(new Error("grpc"), { code, details: "down", metadata: {} }) });

/** A client whose workflow runs until cancelled; `cancel` answers with `outcomes` in turn (then succeeds). */
function fakeClient(outcomes: Array<Error | undefined>) {
  let cancelled: () => void = () => {};
  const finished = new Promise<never>((_, reject) => {
    cancelled = () => reject(new Error("cancelled"));
  });
  finished.catch(() => {});
  const cancel = vi.fn(async () => {
    const outcome = outcomes.shift();
    if (outcome) throw outcome;
    cancelled();
  });
  // A run that never waits for a signal: the next-wait update is never answered.
  const handle = { workflowId: "q/t1", cancel, result: () => finished, executeUpdate: () => new Promise(() => {}) };
  const client = { workflow: { start: async () => handle }, withAbortSignal: (_: AbortSignal, fn: () => unknown) => fn() };
  return { client: client as unknown as Client, cancel, cancelled: () => cancelled() };
}

const logger = (): { [K in keyof Logger]: Mock<Logger[K]> } => ({
  debug: vi.fn<Logger["debug"]>(),
  info: vi.fn<Logger["info"]>(),
  warn: vi.fn<Logger["warn"]>(),
  error: vi.fn<Logger["error"]>(),
});

function cancelledRun(client: Client, log: Logger) {
  const controller = new AbortController();
  const ctx = {
    taskId: "q/t1",
    attempt: 1,
    queue: "q",
    priority: "normal",
    agent: { kind: "agent", name: "a", model: "scripted:x", instructions: "", tools: [], options: {} },
    input: "x",
    metadata: {},
    signal: controller.signal,
    emit: () => {},
    reportUsage: () => {},
  } as unknown as ExecutionContext;
  const running = temporalExecutor({ client, logger: log }).execute(ctx);
  controller.abort(new FlotillaError(ErrorCodes.CANCELLED, "stop"));
  return running;
}

describe("temporalExecutor: cancelling the workflow", () => {
  it("tries again after a transient failure", async () => {
    const { client, cancel } = fakeClient([grpcFailure(14)]);
    const log = logger();
    await expect(cancelledRun(client, log)).rejects.toMatchObject({ code: ErrorCodes.CANCELLED });
    await vi.waitFor(() => expect(cancel).toHaveBeenCalledTimes(2));
    expect(log.warn).not.toHaveBeenCalled();
  });

  it("logs a failure it cannot get past, without retrying one that is not transient", async () => {
    const { client, cancel, cancelled } = fakeClient([grpcFailure(3)]);
    const log = logger();
    const running = cancelledRun(client, log);
    await vi.waitFor(() =>
      expect(log.warn).toHaveBeenCalledWith(expect.stringMatching(/could not cancel/), expect.objectContaining({ taskId: "q/t1", attempts: 1 })),
    );
    expect(cancel).toHaveBeenCalledTimes(1);
    cancelled();
    await expect(running).rejects.toMatchObject({ code: ErrorCodes.CANCELLED });
  });

  it("gives up on transient failures after a few attempts, and only notes a workflow that is already gone", async () => {
    const stuck = fakeClient([grpcFailure(14), grpcFailure(14), grpcFailure(14)]);
    const log = logger();
    const running = cancelledRun(stuck.client, log);
    await vi.waitFor(() => expect(log.warn).toHaveBeenCalledWith(expect.any(String), expect.objectContaining({ attempts: 3 })), { timeout: 3000 });
    stuck.cancelled();
    await expect(running).rejects.toBeDefined();

    const gone = fakeClient([new WorkflowNotFoundError("already completed", "q/t1", undefined)]);
    const quiet = logger();
    const done = cancelledRun(gone.client, quiet);
    await vi.waitFor(() => expect(quiet.debug).toHaveBeenCalled());
    expect(quiet.warn).not.toHaveBeenCalled();
    gone.cancelled();
    await expect(done).rejects.toBeDefined();
  });
});
