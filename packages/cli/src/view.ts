// Showing what a command read, once or (`--watch`) over and over: JSON under `--json`, else text.
import { ConnectionError } from "@flotilla/core";
import type { Context } from "./context.ts";
import { describeError } from "./errors.ts";

/** What a command shows: the JSON document, and the text for people (built only when shown). */
export interface View {
  json: unknown;
  text: () => string;
}

/** Resolves after `ms`, or at once when `signal` aborts; true when it aborted. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (signal?.aborted) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (aborted: boolean) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(aborted);
    };
    const onAbort = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Shows `load()`'s view once, or with `watchMs` again every `watchMs` until Ctrl-C. Watching, a
 * terminal is redrawn in place; a pipe gets each frame after the last (under `--json`, one JSON
 * document per line). Redis lost while watching is shown and retried; lost before the first frame,
 * it fails the command like any read.
 */
export async function show(ctx: Context, load: () => Promise<View>, watchMs?: number): Promise<void> {
  if (watchMs === undefined) return draw(ctx, await load());
  const tty = ctx.io.stdout.isTTY === true && !ctx.json;
  for (let frame = 0; ; frame++) {
    let view: View | undefined;
    try {
      view = await load();
    } catch (err) {
      if (frame === 0 || !(err instanceof ConnectionError)) throw err;
      ctx.note(`error: ${describeError(err, ctx.globals.redisLabel).message} (retrying)`);
    }
    if (view) {
      if (tty) ctx.print("\x1b[H\x1b[2J");
      draw(ctx, view);
      if (tty) ctx.print(ctx.c.dim(`\nevery ${watchMs} ms, ${new Date().toLocaleTimeString()}: Ctrl-C to stop\n`));
      else if (!ctx.json) ctx.print("\n");
    }
    if (await pause(watchMs, ctx.signal)) return;
  }
}

function draw(ctx: Context, view: View): void {
  if (ctx.json) ctx.printJson(view.json);
  else ctx.print(view.text());
}
