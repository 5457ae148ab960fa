// A local HTTP server that speaks OpenAI's chat-completions protocol, streaming (SSE) and not, for
// tests of the real OpenAI-compatible provider path. Nothing leaves loopback.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What the server answers one request with: streamed or whole text, tool calls, or an HTTP error (with headers such as `retry-after`). */
export type OpenAIReply =
  | { text: string; chunkSize?: number; delayMs?: number; usage?: { prompt: number; completion: number } }
  | { toolCalls: Array<{ id: string; name: string; args: unknown }>; usage?: { prompt: number; completion: number } }
  /** `bodyDelayMs`: the headers go at once, the body this much later (a proxy that flushes headers first). */
  | { status: number; message: string; headers?: Record<string, string>; bodyDelayMs?: number };

/** One chat-completions request the server received. */
export interface RecordedRequest {
  body: {
    model: string;
    stream?: boolean;
    messages: Array<{ role: string; content?: unknown; tool_calls?: unknown; tool_call_id?: string }>;
    tools?: Array<{ type: string; function: { name: string; parameters: unknown } }>;
    [key: string]: unknown;
  };
  /** When it arrived (`performance.now()`). */
  at: number;
  /** Whether the client went away before the reply ended (a cancelled stream). */
  aborted: boolean;
  /** Resolves once the reply ended, one way or the other. */
  done: Promise<void>;
}

export interface OpenAIServer {
  /** e.g. http://127.0.0.1:PORT/v1 */
  baseURL: string;
  requests: RecordedRequest[];
  /** Replies are given in order; when none is queued, `fallback` answers. */
  reply(...replies: OpenAIReply[]): void;
  fallback: (body: RecordedRequest["body"]) => OpenAIReply;
  close(): Promise<void>;
}

const chunk = (id: string, model: string, delta: object, finish: string | null) =>
  `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1, model, choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;

/**
 * Starts the server on a free loopback port. Point an `openAICompatible` endpoint at `baseURL`
 * (`worker({ openAICompatible: { local: { baseURL } } })`, model `local:<name>`), queue replies with
 * `reply(…)`, and read what the provider sent in `requests`.
 */
export async function startOpenAIServer(): Promise<OpenAIServer> {
  const queue: OpenAIReply[] = [];
  const requests: RecordedRequest[] = [];
  let n = 0;
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const at = performance.now();
    let raw = "";
    req.on("data", (d: Buffer) => {
      raw += d.toString();
    });
    req.on("end", () => {
      if (req.method !== "POST" || !req.url?.endsWith("/chat/completions")) {
        res.writeHead(404).end();
        return;
      }
      let body: RecordedRequest["body"];
      try {
        body = JSON.parse(raw);
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "the body is not JSON", type: "invalid_request_error", code: null } }));
        return;
      }
      let finished!: () => void;
      const record: RecordedRequest = { body, at, aborted: false, done: new Promise((r) => (finished = r)) };
      requests.push(record);
      res.on("close", () => {
        if (!res.writableEnded) record.aborted = true;
        finished();
      });
      void respond(record, res, queue.shift() ?? api.fallback(record.body), `chatcmpl-${++n}`);
    });
  });

  async function respond(record: RecordedRequest, res: ServerResponse, reply: OpenAIReply, id: string): Promise<void> {
    const model = record.body.model;
    if ("status" in reply) {
      res.writeHead(reply.status, { ...reply.headers, "content-type": "application/json" });
      if (reply.bodyDelayMs) {
        res.flushHeaders();
        await new Promise((r) => setTimeout(r, reply.bodyDelayMs));
      }
      res.end(JSON.stringify({ error: { message: reply.message, type: "test_error", code: null } }));
      return;
    }
    const usage = reply.usage ?? { prompt: 10, completion: 5 };
    const usageBody = { prompt_tokens: usage.prompt, completion_tokens: usage.completion, total_tokens: usage.prompt + usage.completion };
    if (!record.body.stream) {
      const message =
        "text" in reply
          ? { role: "assistant", content: reply.text }
          : {
              role: "assistant",
              content: null,
              tool_calls: reply.toolCalls.map((c) => ({ id: c.id, type: "function", function: { name: c.name, arguments: JSON.stringify(c.args) } })),
            };
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id,
          object: "chat.completion",
          created: 1,
          model,
          choices: [{ index: 0, message, finish_reason: "text" in reply ? "stop" : "tool_calls" }],
          usage: usageBody,
        }),
      );
      return;
    }
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
    if ("text" in reply) {
      const size = reply.chunkSize ?? 4;
      res.write(chunk(id, model, { role: "assistant", content: "" }, null));
      for (let i = 0; i < reply.text.length; i += size) {
        if (record.aborted) return;
        if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
        if (record.aborted) return;
        res.write(chunk(id, model, { content: reply.text.slice(i, i + size) }, null));
      }
      res.write(chunk(id, model, {}, "stop"));
    } else {
      reply.toolCalls.forEach((c, index) => {
        const args = JSON.stringify(c.args);
        const half = Math.floor(args.length / 2);
        // Arguments arrive in pieces, as OpenAI streams them.
        res.write(
          chunk(
            id,
            model,
            { role: "assistant", tool_calls: [{ index, id: c.id, type: "function", function: { name: c.name, arguments: args.slice(0, half) } }] },
            null,
          ),
        );
        res.write(chunk(id, model, { tool_calls: [{ index, function: { arguments: args.slice(half) } }] }, null));
      });
      res.write(chunk(id, model, {}, "tool_calls"));
    }
    res.write(`data: ${JSON.stringify({ id, object: "chat.completion.chunk", created: 1, model, choices: [], usage: usageBody })}\n\n`);
    res.end("data: [DONE]\n\n");
  }

  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const api: OpenAIServer = {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    reply: (...replies) => void queue.push(...replies),
    fallback: () => ({ text: "ok" }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return api;
}
