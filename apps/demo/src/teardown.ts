import type { ChildProcess } from "node:child_process";

/**
 * What the demo must undo however it ends (done, failed, or interrupted with Ctrl-C): the steps run
 * once, last added first, each even when an earlier one failed.
 */
export class Teardown {
  private readonly steps: Array<() => Promise<void>> = [];
  private running: Promise<void> | undefined;

  add(step: () => Promise<void>): void {
    this.steps.unshift(step);
  }

  run(): Promise<void> {
    this.running ??= (async () => {
      for (const step of this.steps) await step().catch(() => {});
    })();
    return this.running;
  }
}

/**
 * Stops a child process: SIGTERM (a worker drains, then exits), SIGKILL if it is still there after
 * `killAfterMs`; resolves once it has exited.
 */
export function stopChild(child: ChildProcess, killAfterMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), killAfterMs);
    child.removeAllListeners("exit");
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}
