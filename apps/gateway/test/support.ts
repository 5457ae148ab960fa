// What the gateway's tests share: a real gateway on a free loopback port over a test env's Redis
// prefix, closed after each test, and a reader of Server-Sent Events off a fetch response.
import type { TestEnv } from "@flotilla/testing";
import { afterEach } from "vitest";
import { createGateway, type Gateway, type GatewayOptions } from "../src/index.ts";

export interface RunningGateway {
  gateway: Gateway;
  /** `http://127.0.0.1:<port>` */
  url: string;
}

/**
 * `start(options)` runs a gateway on the env's prefix (port 0: a free one); every gateway started
 * closes after the test. Its alert rules are off unless `options.alerts` turns them on (see alerts.test.ts),
 * so the alerts other tests see are their own.
 */
export function useGateway(env: TestEnv): { start(options?: GatewayOptions): Promise<RunningGateway> } {
  const started: Gateway[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((g) => g.close()));
  });
  return {
    async start(options = {}) {
      const gateway = createGateway({ redis: env.connection, prefix: env.prefix, port: 0, alerts: false, ...options });
      started.push(gateway);
      const { url } = await gateway.start();
      return { gateway, url };
    },
  };
}

/** The path of a task: its id with the slash URL-encoded, as the API takes it. */
export const taskPath = (taskId: string, rest = "") => `/v1/tasks/${encodeURIComponent(taskId)}${rest}`;

export interface SseMessage {
  id?: string;
  event?: string;
  data?: string;
  /** A comment line's text (`: ping` gives "ping"). */
  comment?: string;
}

/** The messages of an event stream as they arrive, parsed by the SSE rules (blank line ends a message). */
export async function* sseMessages(res: Response): AsyncGenerator<SseMessage> {
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let end = buffer.indexOf("\n\n");
      while (end >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        end = buffer.indexOf("\n\n");
        const message: SseMessage = {};
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) message.comment = line.slice(1).trim();
          const [, field, text] = /^(id|event|data): ?(.*)$/.exec(line) ?? [];
          if (field === "data") message.data = message.data === undefined ? text : `${message.data}\n${text}`;
          else if (field === "id" || field === "event") message[field] = text;
        }
        yield message;
      }
    }
  } finally {
    reader.releaseLock();
  }
}

/** A submit body for the scripted agent `agent` (its JSON: what a non-Node caller sends). */
export function submitBody(agent: { toJSON(): unknown }, input: unknown, options?: Record<string, unknown>): string {
  return JSON.stringify({ agent: agent.toJSON(), input, ...(options && { options }) });
}

export const jsonHeaders = (token?: string): Record<string, string> => ({
  "content-type": "application/json",
  ...(token && { authorization: `Bearer ${token}` }),
});
