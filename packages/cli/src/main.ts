// The `flotilla` process (bin/flotilla.mjs runs the built copy): the process's streams and
// environment, Ctrl-C, and its exit code.
import { run } from "./run.ts";

const controller = new AbortController();
let interrupts = 0;
const interrupt = () => {
  // The first stops `--watch` and `stream` cleanly; a command that does not stop by itself (a read
  // waiting on a Redis that does not answer) is left a moment, and a second one does not wait.
  if (++interrupts > 1) process.exit(130);
  controller.abort();
  setTimeout(() => process.exit(130), 2000).unref();
};
process.on("SIGINT", interrupt);
process.on("SIGTERM", interrupt);
// A reader that went away (`flotilla stream x | head`): stop quietly, as a pipeline expects.
process.stdout.on("error", (err: NodeJS.ErrnoException) => {
  if (err.code === "EPIPE") process.exit(0);
  throw err;
});

const code = await run(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, env: process.env, signal: controller.signal });
// Everything written is flushed before exiting; exiting rather than waiting for the event loop to
// empty: a Redis connection's reconnect timer must not hold the prompt back.
await Promise.all([process.stdout, process.stderr].map((s) => new Promise<void>((resolve) => s.write("", () => resolve()))));
process.exit(code);
