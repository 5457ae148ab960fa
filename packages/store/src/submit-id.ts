import { randomFillSync } from "node:crypto";

// Random bytes drawn in blocks: one draw per id cost a submit more than its id was worth.
const submitIdPool = Buffer.alloc(4095);
let submitIdsAt = submitIdPool.length;

/**
 * A fresh submitId: 72 random bits, enough to tell a resend from another submit of the same name,
 * in 12 characters (it is kept in the record as long as the task: a UUID cost 24 more bytes each).
 */
export function newSubmitId(): string {
  if (submitIdsAt + 9 > submitIdPool.length) {
    randomFillSync(submitIdPool);
    submitIdsAt = 0;
  }
  submitIdsAt += 9;
  return submitIdPool.toString("base64url", submitIdsAt - 9, submitIdsAt);
}
