import { Agent, type Script } from "@flotilla/agent";
import type { JsonValue } from "@flotilla/core";

/**
 * An agent on the built-in scripted model (no network, deterministic): it replies
 * "Echo: <input>" token by token unless `script` says otherwise (`reply`, `tokenDelayMs`,
 * `toolCalls`, `failWith`, …). Any worker runs it; no provider key needed.
 */
export function scripted(name: string, script: Script = {}, extra: { tools?: string[]; model?: string; instructions?: string } = {}): Agent {
  return new Agent({
    name,
    model: extra.model ?? "scripted:test",
    ...(extra.instructions !== undefined && { instructions: extra.instructions }),
    tools: extra.tools ?? [],
    options: { scripted: script as Record<string, JsonValue> },
  });
}

/** The scripted agent named "echo": replies "Echo: <input>", or as `script` says. */
export function echo(script: Script = {}): Agent {
  return scripted("echo", script, { model: "scripted:echo" });
}
