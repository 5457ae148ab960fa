/**
 * The gate of the fleet scenario's worker processes. A process starts working at once, and the
 * tasks it takes wait at the gate until the parent writes "go" on its stdin: by then every process
 * of the fleet is connected, has its scripts loaded and holds a full load of tasks, so the timed
 * drain starts from the same moment for all of them and for both systems.
 */
export function fleetGate(concurrency: number) {
  let done = 0;
  let held = 0;
  let open = false;
  let release = () => {};
  const opened = new Promise<void>((resolve) => {
    release = resolve;
  });
  process.stdin.once("data", () => {
    open = true;
    release();
  });
  // The parent is gone (its end of the pipe closed): so is its fleet.
  process.stdin.on("end", () => process.exit(1));
  return {
    /** The no-op work: counted; before "go" held, with "ready" said once every slot holds a task. */
    async work(): Promise<null> {
      done++;
      if (!open) {
        if (++held === concurrency) process.stdout.write("ready\n");
        await opened;
      }
      return null;
    },
    /** Tells the parent how many tasks this process ran, before it exits. */
    report(): void {
      process.stdout.write(`done ${JSON.stringify({ done })}\n`);
    },
  };
}
