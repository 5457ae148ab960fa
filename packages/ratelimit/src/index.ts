export { type RateLimitOptions, RateLimitOptionsSchema, type ResolvedRateLimit, resolveRateLimit } from "./options.ts";
export { RedisRateLimiter, type RedisRateLimiterOptions } from "./rate-limiter.ts";
