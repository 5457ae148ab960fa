/**
 * Fleet-wide rate limits as the agent runtime draws on them (a model turn before it calls its
 * provider, a tool call before it runs). The worker gives one backed by Redis token buckets
 * (@flotilla/ratelimit); the runtime knows only this.
 */
export interface RateLimiter {
  /**
   * Waits until the limit `name` grants `requests` requests and about `tokens` tokens (an estimate,
   * settled with `account` afterwards). Rejects with the signal's reason when it is aborted, and with
   * a WaitForSignal (kind `rate-limit`, `timeoutMs`: when it may grant) when the limit releases the
   * worker's slot rather than wait that long on it: the run then stops and its task waits, WAITING.
   */
  acquire(name: string, cost: { requests?: number; tokens?: number }, signal: AbortSignal): Promise<void>;
  /** Settles an estimate with what the call used: `tokens` more (or, negative, fewer) than acquired. */
  account(name: string, tokens: number): Promise<void>;
  /** The provider asked to be left alone (a 429 with Retry-After): the limit grants nothing for `ms`. */
  pause(name: string, ms: number): Promise<void>;
  /**
   * Resolves at once when no pause is in force on `name`, else when it ends (rejects with the
   * signal's reason when aborted). Asked immediately before a granted request leaves: a pause that
   * came after the grant holds it too. @default none: the grant alone decides
   */
  waitOutPause?(name: string, signal: AbortSignal): Promise<void>;
}
