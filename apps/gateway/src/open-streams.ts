/**
 * The event streams open now, so `close()` can end them: an SSE response never ends by itself
 * while its task runs, and the HTTP server's close waits for every response to end.
 */
export class OpenStreams {
  private readonly controllers = new Set<AbortController>();

  open(): AbortController {
    const controller = new AbortController();
    this.controllers.add(controller);
    return controller;
  }

  done(controller: AbortController): void {
    this.controllers.delete(controller);
  }

  abortAll(): void {
    for (const c of this.controllers) c.abort();
    this.controllers.clear();
  }
}
