import { randomBytes } from "node:crypto";

/**
 * A key prefix no other test, file or run shares, so tests can run in parallel on one Redis
 * without ever flushing it. Remove its keys afterwards with `purgePrefix`.
 */
export function testPrefix(name: string): string {
  return `flt-test:${name}:${randomBytes(6).toString("hex")}`;
}
