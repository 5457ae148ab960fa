import { AsyncLocalStorage } from "node:async_hooks";
import { retryAfterMs } from "./retry-after.ts";

/** What the model request under way asks of the fetch that sends it (see providerFetch). */
export interface RequestHooks {
  /**
   * Awaited immediately before the request leaves: a rate limit's pause that came after the grant
   * (a 429 to another worker) holds it too.
   */
  beforeSend?: (() => Promise<void>) | undefined;
  /**
   * The response asked to be left alone (a 429 or 503 with Retry-After, `askedMs` as it asked):
   * called the moment its headers arrive, before the provider reads its body and throws, so the
   * fleet's pause lands without waiting for that.
   */
  onRetryAfter?: ((askedMs: number) => void) | undefined;
}

const hooks = new AsyncLocalStorage<RequestHooks>();

/** Runs `send` (a provider's `doStream`) with `requestHooks` for the fetches it makes through providerFetch. */
export function withRequestHooks<T>(requestHooks: RequestHooks, send: () => T): T {
  return hooks.run(requestHooks, send);
}

/**
 * A `fetch` for an AI SDK provider (`createOpenAI({ fetch: providerFetch() })`) that lets a rate
 * limit act at the wire: it holds a request while the limit is paused, immediately before sending
 * it, and publishes a provider's Retry-After as soon as the response's headers arrive. The worker's
 * model resolver gives it to every provider it makes; a `providerFactory` passes it to its own.
 * Outside a model turn (no hooks) it is plain `fetch`.
 */
export function providerFetch(base?: typeof fetch): typeof fetch {
  return async (input, init) => {
    const h = hooks.getStore();
    await h?.beforeSend?.();
    const response = await (base ?? globalThis.fetch)(input, init);
    if (h?.onRetryAfter && (response.status === 429 || response.status === 503)) {
      const asked = retryAfterMs(Object.fromEntries(response.headers));
      if (asked !== undefined) h.onRetryAfter(asked);
    }
    return response;
  };
}
