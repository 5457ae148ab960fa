import { loadavg } from "node:os";
import { busTarget, type EndToEndOptions, endToEnd, plainTarget, publishRates } from "./bus-runs.ts";
import { type BenchContext, bySize } from "./drain.ts";
import { newAdmin, ratio } from "./harness.ts";

/**
 * @flotilla/bus against plain ioredis on Redis Streams (the physical limit), in the same run:
 * publish rates from one process (`publish` one at a time and 50 in flight, `publishMany` in
 * batches of 1,000, against `XADD` single and pipelined), then end to end: 3 subscriptions (consumer
 * groups) on one topic, each with 2 consumers (2 processes, each a consumer in all 3 groups),
 * delivered events/s of a burst, Redis commands per delivery, and publish → handler latency at a
 * steady rate.
 */
export async function bus(ctx: BenchContext) {
  const load = () => Math.round(loadavg()[0]! * 100) / 100;
  const loadBefore = load();
  const counts = bySize(ctx, {
    smoke: { single: 200, inFlight: 20, batched: 2000, batch: 500, rounds: 1 },
    quick: { single: 1000, inFlight: 50, batched: 10_000, batch: 1000, rounds: 3 },
    full: { single: 5000, inFlight: 50, batched: 100_000, batch: 1000, rounds: 3 },
  });
  const admin = newAdmin(ctx.url);
  const targets = { flotilla: busTarget(ctx.url, "bench-bus-flotilla-publish"), plain: plainTarget(ctx.url, "bench-bus-plain-publish") };
  const rates = await publishRates(targets, admin, counts);
  await Promise.all(Object.values(targets).map((t) => t.close()));
  admin.disconnect();
  const publish = (["single", "concurrent", "batched"] as const).map((mode) => ({
    scenario: "bus",
    measure: "publish",
    mode,
    events: mode === "batched" ? counts.batched : counts.single,
    ...(mode === "concurrent" && { inFlight: counts.inFlight }),
    ...(mode === "batched" && { batch: counts.batch }),
    rounds: counts.rounds,
    flotilla: rates[mode].flotilla,
    plain: rates[mode].plain,
    ratio: ratio(rates[mode].flotilla.perSec, rates[mode].plain.perSec),
    note:
      mode === "batched"
        ? "flotilla: publishMany of 1,000 events (one script call); plain: a pipeline of 1,000 XADD; the median of the rounds, the systems taking turns"
        : "flotilla: bus.publish (one script call each); plain: one XADD each; the median of the rounds, the systems taking turns",
  }));

  const o: EndToEndOptions = {
    procs: 2,
    groups: ["g1", "g2", "g3"],
    concurrency: 50,
    burst: bySize(ctx, { smoke: 500, quick: 5000, full: 50_000 }),
    batch: bySize(ctx, { smoke: 250, quick: 1000, full: 1000 }),
    steady: bySize(ctx, { smoke: 100, quick: 1000, full: 10_000 }),
    rate: bySize(ctx, { smoke: 500, quick: 1000, full: 2500 }),
    idleMs: bySize(ctx, { smoke: 1000, quick: 2000, full: 3000 }),
  };
  const flotilla = await endToEnd(ctx.url, "flotilla", o);
  const plain = await endToEnd(ctx.url, "plain", o);
  return [
    ...publish,
    {
      scenario: "bus",
      measure: "endToEnd",
      topic: 1,
      groups: o.groups.length,
      consumersPerGroup: o.procs,
      procs: o.procs,
      concurrency: o.concurrency,
      burstEvents: o.burst,
      burstBatch: o.batch,
      steadyEvents: o.steady,
      steadyRate: o.rate,
      flotilla,
      plain,
      ratio: ratio(flotilla.burst.deliveredPerSec, plain.burst.deliveredPerSec),
      ratioCommands: ratio(flotilla.burst.commandsPerDelivery, plain.burst.commandsPerDelivery),
      // Latency at the steady rate, from the publisher's call (µs resolution; the ids' ms are whole ms).
      ratioSteadyP50: ratio(flotilla.steady.callToHandlerMs.p50, plain.steady.callToHandlerMs.p50),
      ratioSteadyP99: ratio(flotilla.steady.callToHandlerMs.p99, plain.steady.callToHandlerMs.p99),
      ratioSteadyMean: ratio(flotilla.steady.latencyMs.mean, plain.steady.latencyMs.mean),
      loadAverage: { before: loadBefore, after: load() },
      note: "2 consumer processes, each a consumer in all 3 groups (6 consumers); delivered/s from the burst's first publish to its last handled event; commands per delivery include the publishes (INFO commandstats, scripts' inner calls counted); latencyMs = the handler's Date.now() − the event id's ms (whole ms); callToHandlerMs = the handler's clock − the publisher's clock at the publish call (in the payload)",
    },
  ];
}
