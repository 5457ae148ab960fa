export { type RateLimitOptions, RateLimitOptionsSchema, type ResolvedRateLimit, resolveRateLimit } from "./options.ts";
export { RedisRateLimiter } from "./rate-limiter.ts";
