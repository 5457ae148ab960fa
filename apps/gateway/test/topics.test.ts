// The event bus over HTTP, against a real worker serving two subscriptions of a topic (one handles
// its events, one dead-letters them): topics with their figures, a topic's subscriptions and newest
// events, a subscription's dead letters listed, shown, republished and purged. Every one needs a
// token for every queue; republish and purge the admin role; an unknown topic, subscription or dead
// letter is a 404 with its own code.
// @cluster: the bus over HTTP: topics and subscriptions read across slots
import { busWorker, subscribe } from "@flotilla/bus";
import { UnrecoverableError } from "@flotilla/core";
import { waitFor } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { jsonHeaders, useGateway } from "./support.ts";

const ADMIN = "admin-token-0123456789";
const READER = "reader-token-0123456789";
const LIMITED = "limited-token-0123456789";
const TOKENS = [
  { token: ADMIN, role: "admin" as const, queues: "*" as const },
  { token: READER, role: "read" as const, queues: "*" as const },
  { token: LIMITED, role: "admin" as const, queues: ["q1"] },
];
/** Each test its own topic: the tests share the env's prefix. */
const TOPIC = "gw.orders";
const DEAD_TOPIC = "gw.invoices";
const LETTERS = `/v1/topics/${DEAD_TOPIC}/subscriptions/ledger/dead-letters`;

interface Letter {
  id: string;
  eventId: string;
  reason: string;
  attempts: number;
  error?: { code: string; message: string };
  event?: { payload: unknown };
}

describe("gateway: the event bus", () => {
  const env = useFlotilla("gateway-topics");
  const gateways = useGateway(env);

  /** A gateway, and a worker where `mailer` keeps each payload of `topic` and `ledger` dead-letters every one. */
  async function setup(topic: string) {
    const handled: unknown[] = [];
    await env.worker({
      queues: ["gw-topics"],
      bus: busWorker({
        subscriptions: [
          subscribe(topic, async (e) => void handled.push(e.payload), { name: "mailer" }),
          subscribe(
            topic,
            () => {
              throw new UnrecoverableError("the ledger is closed");
            },
            { name: "ledger" },
          ),
        ],
      }),
    });
    const { url } = await gateways.start({ tokens: TOKENS });
    const call = async <T = Record<string, unknown>>(path: string, token: string, init: RequestInit = {}) => {
      // A JSON content type only with a body: an empty body declared JSON is malformed JSON.
      const res = await fetch(`${url}${path}`, { ...init, headers: init.body === undefined ? { authorization: `Bearer ${token}` } : jsonHeaders(token) });
      const text = await res.text();
      return {
        status: res.status,
        body: (text ? JSON.parse(text) : undefined) as T & { error?: { code: string; field?: string; details?: Record<string, unknown> } },
      };
    };
    const publish = async (payload: unknown) =>
      (await call<{ id: string }>(`/v1/topics/${topic}/events`, ADMIN, { method: "POST", body: JSON.stringify({ payload }) })).body.id;
    const letters = async (n: number) =>
      waitFor(async () => {
        const { body } = await call<{ deadLetters: Letter[] }>(`/v1/topics/${topic}/subscriptions/ledger/dead-letters`, READER);
        return body.deadLetters.length === n ? body.deadLetters : undefined;
      });
    return { handled, call, publish, letters };
  }

  it("lists topics with their figures, shows a topic's subscriptions and newest events; 403 for a limited token, 404 for an unknown topic", async () => {
    const { handled, call, publish, letters } = await setup(TOPIC);
    const first = await publish({ order: 1 });
    const second = await publish({ order: 2 });
    await waitFor(async () => handled.length === 2);
    await letters(2);

    const { status, body } = await call<{ topics: Array<{ topic: string; length: number; published: number; groups: Array<{ name: string }> }> }>(
      "/v1/topics",
      READER,
    );
    expect(status).toBe(200);
    // Only this test's topic has been published to or subscribed yet (the tests run in order).
    expect(body.topics).toEqual([expect.objectContaining({ topic: TOPIC, length: 2, published: 2 })]);
    expect(body.topics[0]!.groups.map((g) => g.name).sort()).toEqual(["ledger", "mailer"]);

    const topic = await call<{ groups: Array<{ name: string; lag: number | null; pending: number; deadLetters: number; counts: { dead: number } }> }>(
      `/v1/topics/${TOPIC}`,
      READER,
    );
    expect(topic.status).toBe(200);
    const byName = Object.fromEntries(topic.body.groups.map((g) => [g.name, g]));
    expect(byName.ledger).toMatchObject({ lag: 0, pending: 0, deadLetters: 2, counts: { dead: 2 } });
    expect(byName.mailer).toMatchObject({ lag: 0, pending: 0, deadLetters: 0 });

    const events = await call<{ topic: string; events: Array<{ id: string; payload: unknown }> }>(`/v1/topics/${TOPIC}/events?limit=1`, READER);
    expect(events.status).toBe(200);
    expect(events.body).toEqual({ topic: TOPIC, events: [expect.objectContaining({ id: second, payload: { order: 2 } })] });
    const both = await call<{ events: Array<{ id: string }> }>(`/v1/topics/${TOPIC}/events`, READER);
    expect(both.body.events.map((e) => e.id)).toEqual([second, first]);

    for (const path of ["/v1/topics", `/v1/topics/${TOPIC}`, `/v1/topics/${TOPIC}/events`]) {
      const limited = await call(path, LIMITED);
      expect(limited, path).toMatchObject({ status: 403, body: { error: { code: "FORBIDDEN" } } });
    }
    for (const path of ["/v1/topics/gw.nothing", "/v1/topics/gw.nothing/events"]) {
      const missing = await call(path, READER);
      expect(missing, path).toMatchObject({ status: 404, body: { error: { code: "TOPIC_NOT_FOUND" } } });
    }
    // The bus's own names: a name it would refuse, and its internal topics, are not topics here.
    const internal = await call("/v1/topics/_webhooks", READER);
    expect(internal).toMatchObject({ status: 400, body: { error: { field: "topic" } } });
    const badLimit = await call(`/v1/topics/${TOPIC}/events?limit=0`, READER);
    expect(badLimit).toMatchObject({ status: 400, body: { error: { field: "limit" } } });
  });

  it("lists, shows, republishes and purges a subscription's dead letters; 404s name what is missing", async () => {
    const { handled, call, publish, letters } = await setup(DEAD_TOPIC);
    const eventId = await publish({ order: 42 });
    const [letter] = await letters(1);
    expect(letter).toMatchObject({ eventId, reason: "UNRECOVERABLE", attempts: 1 });

    const shown = await call<Letter>(`${LETTERS}/${letter!.id}`, READER);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ id: letter!.id, error: { code: "UNRECOVERABLE", message: "the ledger is closed" }, event: { payload: { order: 42 } } });
    const paged = await call<{ deadLetters: Letter[] }>(`${LETTERS}?limit=10&after=${letter!.id}`, READER);
    expect([paged.status, paged.body.deadLetters]).toEqual([200, []]);

    const notFound: Array<[string, string]> = [
      [`${LETTERS}/0-1`, "DEAD_LETTER_NOT_FOUND"],
      [`/v1/topics/${DEAD_TOPIC}/subscriptions/nobody/dead-letters`, "SUBSCRIPTION_NOT_FOUND"],
      ["/v1/topics/gw.nothing/subscriptions/ledger/dead-letters", "TOPIC_NOT_FOUND"],
    ];
    for (const [path, code] of notFound) {
      const missing = await call(path, READER);
      expect(missing, path).toMatchObject({ status: 404, body: { error: { code } } });
    }
    const badId = await call(`${LETTERS}/not-an-id`, READER);
    expect(badId).toMatchObject({ status: 400, body: { error: { field: "id" } } });

    // Republishing and purging need the admin role, and every queue.
    const republish = (token: string, body?: unknown) =>
      call<{ republished: Record<string, string> }>(`${LETTERS}/republish`, token, {
        method: "POST",
        ...(body !== undefined && { body: JSON.stringify(body) }),
      });
    expect((await republish(READER, { ids: [letter!.id] })).status).toBe(403);
    expect((await republish(LIMITED, { ids: [letter!.id] })).status).toBe(403);
    expect((await call(LETTERS, READER, { method: "DELETE" })).status).toBe(403);
    expect((await call(LETTERS, LIMITED, { method: "DELETE" })).status).toBe(403);

    // One there and one not: the one there is published all the same, and the 404 says so.
    const partly = await republish(ADMIN, { ids: [letter!.id, "0-1"] });
    expect(partly).toMatchObject({
      status: 404,
      body: { error: { code: "DEAD_LETTER_NOT_FOUND", details: { republished: { [letter!.id]: expect.stringMatching(/^\d+-\d+$/) } } } },
    });
    // A new event of the topic: the mailer gets it too, the ledger dead-letters it again.
    await waitFor(async () => handled.length === 2);
    const [again] = await letters(1);
    expect(again!.id).not.toBe(letter!.id);

    // No body: every one.
    const all = await republish(ADMIN);
    expect(all.status).toBe(200);
    expect(all.body).toEqual({ topic: DEAD_TOPIC, subscription: "ledger", republished: { [again!.id]: expect.stringMatching(/^\d+-\d+$/) } });
    await waitFor(async () => handled.length === 3);
    await letters(1);

    const purged = await call(LETTERS, ADMIN, { method: "DELETE" });
    expect([purged.status, purged.body]).toEqual([200, { topic: DEAD_TOPIC, subscription: "ledger", purged: 1 }]);
    await letters(0);
    const gone = await call(`${LETTERS}/republish`, ADMIN, { method: "POST", body: JSON.stringify({ ids: [again!.id] }) });
    expect(gone).toMatchObject({ status: 404, body: { error: { code: "DEAD_LETTER_NOT_FOUND" } } });
  });

  it("refuses a payload over the bus's limit with 413 EVENT_TOO_LARGE", async () => {
    const { url } = await gateways.start({ tokens: TOKENS });
    const res = await fetch(`${url}/v1/topics/gw.big/events`, {
      method: "POST",
      headers: jsonHeaders(ADMIN),
      // Over the bus's 1 MiB, under the gateway's body limit (1 MiB + 64 KiB).
      body: JSON.stringify({ payload: "x".repeat(1_060_000) }),
    });
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([413, "EVENT_TOO_LARGE"]);
  });
});
