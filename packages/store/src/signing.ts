// Signed tasks: for a Redis shared with writers you trust less than your own processes, the process
// that creates a task signs it (HMAC-SHA256 with a shared secret) and workers that verify run only
// tasks whose signature checks out. Done here, in the creating process, never in Lua.
import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * The signature of a task: an HMAC-SHA256 (hex) of its id, its payload (the agent and input, as
 * stored) and its metadata (as stored, `{}` when it has none), each length-prefixed so no two
 * different tasks sign alike. What a task runs, and on which conversation, is in these; its
 * timings and retry counts are not (a writer who can change those can also delete the task).
 */
export function taskSignature(secret: string, taskId: string, payload: string, metadata: string): string {
  const text = `flotilla-task-v1\n${taskId.length}:${taskId}\n${payload.length}:${payload}\n${metadata.length}:${metadata}`;
  return createHmac("sha256", secret).update(text).digest("hex");
}

/** Whether `signature` is the task's under one of `secrets` (the current one first, then those being rotated out). */
export function verifyTaskSignature(secrets: readonly string[], signature: string | undefined, taskId: string, payload: string, metadata: string): boolean {
  if (!signature || !/^[0-9a-f]{64}$/.test(signature)) return false;
  const given = Buffer.from(signature, "hex");
  return secrets.some((secret) => timingSafeEqual(given, Buffer.from(taskSignature(secret, taskId, payload, metadata), "hex")));
}
