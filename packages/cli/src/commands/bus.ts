// `flotilla bus topics|stats|groups|inspect|publish|dlq`: the topic event bus (@flotilla/bus): its
// topics, each subscription's progress and dead letters, and publishing an event by hand.
import type { BusDeadLetter, GroupInfo, InspectedEvent, TopicStats } from "@flotilla/bus";
import type { JsonValue } from "@flotilla/core";
import { type Command, Option } from "commander";
import { integer, json } from "../args.ts";
import type { Context } from "../context.ts";
import { CliError } from "../errors.ts";
import { brief, type Colors, fields, table, time } from "../format.ts";
import { show } from "../view.ts";
import { watchOption } from "./tasks.ts";

export function registerBus(program: Command, ctx: Context): void {
  const bus = program.command("bus").description("the topic event bus: topics, subscriptions, events, dead letters");

  bus
    .command("topics")
    .description("every topic published to or subscribed")
    .addOption(watchOption())
    .action(
      ctx.action(async (flags: { watch?: number }) => {
        await show(
          ctx,
          async () => {
            const topics = await (await ctx.bus()).topics();
            return { json: { topics }, text: () => (topics.length ? `${topics.join("\n")}\n` : `${ctx.colors.dim("no topics")}\n`) };
          },
          flags.watch,
        );
      }),
    );

  bus
    .command("stats")
    .description("per topic: events held and published, and each subscription's progress")
    .argument("[topic]", "one topic (default: every topic)")
    .addOption(watchOption())
    .action(
      ctx.action(async (topic: string | undefined, flags: { watch?: number }) => {
        await show(
          ctx,
          async () => {
            const stats = await (await ctx.bus()).stats(topic);
            return { json: { topics: stats }, text: () => statsTable(ctx.colors, stats) };
          },
          flags.watch,
        );
      }),
    );

  bus
    .command("groups")
    .description("a topic's subscriptions (consumer groups): consumers, pending, lag, retrying, dead letters, counts")
    .argument("<topic>")
    .addOption(watchOption())
    .action(
      ctx.action(async (topic: string, flags: { watch?: number }) => {
        await show(
          ctx,
          async () => {
            const groups = await (await ctx.bus()).groups(topic);
            return { json: { topic, groups }, text: () => groupsTable(ctx.colors, groups) };
          },
          flags.watch,
        );
      }),
    );

  bus
    .command("subscriptions")
    .description("every subscription: which live workers serve it, and its progress (a subscription no worker serves is flagged)")
    .argument("[topic]", "one topic (default: every topic)")
    .addOption(watchOption())
    .action(
      ctx.action(async (topic: string | undefined, flags: { watch?: number }) => {
        await show(
          ctx,
          async () => {
            const subscriptions = await readSubscriptions(ctx, topic);
            return { json: { subscriptions }, text: () => subscriptionsTable(ctx.colors, subscriptions) };
          },
          flags.watch,
        );
      }),
    );

  bus
    .command("inspect")
    .description("a topic's newest events, newest first")
    .argument("<topic>")
    .addOption(new Option("-n, --limit <n>", "at most this many").argParser(integer(1, 1000)).default(20))
    .action(
      ctx.action(async (topic: string, flags: { limit: number }) => {
        const events = await (await ctx.bus()).inspect(topic, { limit: flags.limit });
        await show(ctx, async () => ({ json: { topic, events }, text: () => eventsTable(ctx.colors, events) }));
      }),
    );

  bus
    .command("publish")
    .description("publish an event (its payload as JSON) to a topic; prints its id")
    .argument("<topic>")
    .argument("<payload>", "the payload, as JSON", json)
    .option("--correlation-id <id>", "the correlation id replies carry")
    .option("--reply-to <topic>", "the topic a subscriber's result is published to")
    .action(
      ctx.action(async (topic: string, payload: JsonValue, flags: { correlationId?: string; replyTo?: string }) => {
        const id = await (await ctx.bus()).publish(topic, payload, {
          ...(flags.correlationId !== undefined && { correlationId: flags.correlationId }),
          ...(flags.replyTo !== undefined && { replyTo: flags.replyTo }),
        });
        ctx.done({ topic, id }, id);
      }),
    );

  const dlq = bus.command("dlq").description("a subscription's dead letters: list, show, republish, purge");
  dlq
    .command("list")
    .description("a subscription's dead letters, oldest first")
    .argument("<topic>")
    .argument("<subscription>")
    .addOption(new Option("-n, --limit <n>", "at most this many").argParser(integer(1, 10_000)).default(100))
    .addOption(watchOption())
    .action(
      ctx.action(async (topic: string, subscription: string, flags: { limit: number; watch?: number }) => {
        await show(
          ctx,
          async () => {
            const deadLetters = await (await ctx.bus()).deadLetters.list(topic, subscription, { limit: flags.limit });
            return { json: { topic, subscription, deadLetters }, text: () => lettersTable(ctx.colors, deadLetters) };
          },
          flags.watch,
        );
      }),
    );
  dlq
    .command("show")
    .description("one dead letter: the event, why and after how many deliveries")
    .argument("<topic>")
    .argument("<subscription>")
    .argument("<id>", "the dead letter's id (from bus dlq list)")
    .action(
      ctx.action(async (topic: string, subscription: string, id: string) => {
        const letter = await (await ctx.bus()).deadLetters.get(topic, subscription, id);
        if (!letter) throw new CliError("DEAD_LETTER_NOT_FOUND", `no dead letter ${id} of subscription "${subscription}" on topic "${topic}"`);
        await show(ctx, async () => ({ json: letter, text: () => letterDetails(ctx.colors, letter) }));
      }),
    );
  dlq
    .command("republish")
    .description("publish a subscription's dead-lettered events again, as new events of the topic (every subscription gets them); all, or the ids given")
    .argument("<topic>")
    .argument("<subscription>")
    .argument("[ids...]", "dead letter ids (default: every one)")
    .action(
      ctx.action(async (topic: string, subscription: string, ids: string[]) => {
        const republished = await (await ctx.bus()).deadLetters.republish(topic, subscription, ids.length ? ids : undefined);
        const n = Object.keys(republished).length;
        ctx.done({ topic, subscription, republished }, `republished ${n} event${n === 1 ? "" : "s"} for ${subscription}`);
      }),
    );
  dlq
    .command("purge")
    .description("delete every dead letter of a subscription")
    .argument("<topic>")
    .argument("<subscription>")
    .action(
      ctx.action(async (topic: string, subscription: string) => {
        const purged = await (await ctx.bus()).deadLetters.purge(topic, subscription);
        ctx.done({ topic, subscription, purged }, `purged ${purged} dead letter${purged === 1 ? "" : "s"} of ${subscription} on ${topic}`);
      }),
    );
}

function groupRows(groups: readonly GroupInfo[], topic?: string): string[][] {
  return groups.map((g) => [
    ...(topic === undefined ? [] : [topic]),
    g.name,
    String(g.consumers),
    String(g.pending),
    g.lag === null ? "?" : String(g.lag),
    String(g.retrying),
    String(g.deadLetters),
  ]);
}

const GROUP_COLUMNS = [
  { header: "SUBSCRIPTION" },
  { header: "CONSUMERS", align: "right" as const },
  { header: "PENDING", align: "right" as const },
  { header: "LAG", align: "right" as const },
  { header: "RETRYING", align: "right" as const },
  { header: "DEAD", align: "right" as const },
];

/** A subscription (`<topic>/<name>`): its group's figures, and the live workers that serve it. */
interface SubscriptionView {
  topic: string;
  name: string;
  workers: string[];
  /** Undefined when no group exists yet (a worker serves it and has not made it, or it was deleted). */
  group: GroupInfo | undefined;
}

/** Subscriptions from both sides: the groups each topic has, and what live workers say they serve (their heartbeats). */
async function readSubscriptions(ctx: Context, only: string | undefined): Promise<SubscriptionView[]> {
  const bus = await ctx.bus();
  const fleet = await ctx.client().fleet.status();
  const served = new Map<string, string[]>();
  for (const w of fleet.workers) {
    if (!w.alive) continue;
    for (const sub of w.subscriptions ?? []) served.set(sub, [...(served.get(sub) ?? []), w.workerId]);
  }
  const topics = only === undefined ? await bus.topics() : [only];
  const out = new Map<string, SubscriptionView>();
  for (const topic of topics) {
    for (const group of await bus.groups(topic)) out.set(`${topic}/${group.name}`, { topic, name: group.name, workers: [], group });
  }
  for (const [key, workers] of served) {
    const slash = key.indexOf("/");
    const [topic, name] = [key.slice(0, slash), key.slice(slash + 1)];
    if (only !== undefined && topic !== only) continue;
    const known = out.get(key);
    if (known) known.workers = workers;
    else out.set(key, { topic, name, workers, group: undefined });
  }
  return [...out.values()].sort((a, b) => a.topic.localeCompare(b.topic) || a.name.localeCompare(b.name));
}

function subscriptionsTable(c: Colors, subs: readonly SubscriptionView[]): string {
  const rows = subs.map((s) => [
    s.topic,
    s.name,
    s.workers.length ? s.workers.join(",") : c.red("no live worker"),
    s.group === undefined ? "-" : String(s.group.pending),
    s.group?.lag === undefined || s.group.lag === null ? "-" : String(s.group.lag),
    s.group === undefined ? "-" : String(s.group.deadLetters),
  ]);
  const r = "right" as const;
  return table(
    c,
    [
      { header: "TOPIC" },
      { header: "SUBSCRIPTION" },
      { header: "WORKERS" },
      { header: "PENDING", align: r },
      { header: "LAG", align: r },
      { header: "DEAD", align: r },
    ],
    rows,
    "no subscriptions",
  );
}

function groupsTable(c: Colors, groups: readonly GroupInfo[]): string {
  return table(c, GROUP_COLUMNS, groupRows(groups), "no subscriptions");
}

function statsTable(c: Colors, stats: readonly TopicStats[]): string {
  const topics = table(
    c,
    [{ header: "TOPIC" }, { header: "HELD", align: "right" }, { header: "PUBLISHED", align: "right" }, { header: "SUBSCRIPTIONS", align: "right" }],
    stats.map((s) => [s.topic, String(s.length), String(s.published), String(s.groups.length)]),
    "no topics",
  );
  const groups = stats.flatMap((s) => groupRows(s.groups, s.topic));
  return groups.length ? `${topics}\n${table(c, [{ header: "TOPIC" }, ...GROUP_COLUMNS], groups)}` : topics;
}

function eventsTable(c: Colors, events: readonly InspectedEvent[]): string {
  const rows = events.map((e) =>
    "malformed" in e ? [e.id, time(e.publishedAt), c.red(`malformed: ${e.malformed}`)] : [e.id, time(e.publishedAt), brief(e.payload, 80)],
  );
  return table(c, [{ header: "ID" }, { header: "PUBLISHED" }, { header: "PAYLOAD" }], rows, "no events");
}

function lettersTable(c: Colors, letters: readonly BusDeadLetter[]): string {
  const rows = letters.map((l) => [l.id, l.eventId, l.reason, String(l.attempts), time(l.failedAt), brief(l.error?.message ?? "", 50)]);
  return table(
    c,
    [{ header: "ID" }, { header: "EVENT" }, { header: "REASON" }, { header: "DELIVERIES", align: "right" }, { header: "FAILED" }, { header: "ERROR" }],
    rows,
    "no dead letters",
  );
}

function letterDetails(c: Colors, l: BusDeadLetter): string {
  return fields(c, [
    ["dead letter", c.bold(l.id)],
    ["topic", l.topic],
    ["subscription", l.subscription],
    ["event", l.eventId],
    ["reason", l.reason],
    ["deliveries", String(l.attempts)],
    ["failed", time(l.failedAt)],
    ["error", l.error ? `[${l.error.code}] ${l.error.message}` : undefined],
    ["payload", l.event ? brief(l.event.payload, 300) : c.red("(unreadable event)")],
  ]);
}
