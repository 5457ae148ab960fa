import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type BenchContext, bySize, freshPrefix } from "./drain.ts";
import { ratio } from "./harness.ts";
import { flotillaTokens, plainTokens, type TokenOptions } from "./tokens-runs.ts";

/** Issue 19's target: publish → delivery p99, at this pacing. */
const TARGET_P99_MS = 25;

/**
 * Realistic token streaming (issue 19): 1,000 concurrent tasks, each a scripted agent streaming
 * 500 tokens at 50 tokens/s (10 s), run by 2 worker processes × 500 and followed live by 2
 * follower processes (`handle.stream()`, 500 tasks each); publish → delivery latency per token
 * (the event's `ts` to the follower's clock), with where it goes; none lost, order kept; CPU and
 * Redis commands per token. The peer in the same run: plain ioredis at the same pacing (`XADD` +
 * `SPUBLISH` per token, followers `SSUBSCRIBE`d), the transport's floor on this machine.
 * `--quick`: 100 tasks for 3 s (150 tokens each); `--smoke`: 10 tasks of 30 tokens.
 */
export async function tokens(ctx: BenchContext) {
  const o: TokenOptions = {
    // BENCH_TOKEN_TASKS: another load (the machine's 2 cores carry ~30,000 tokens/s of this stack).
    tasks: Number(process.env.BENCH_TOKEN_TASKS ?? bySize(ctx, { smoke: 10, quick: 100, full: 1000 })),
    tokenDelayMs: 20,
    tokensPerTask: bySize(ctx, { smoke: 30, quick: 150, full: 500 }),
    workerProcs: 2,
    followerProcs: 2,
    // The bench's test runs it beside other files: its followers took 4.3 s (smoke) and 4.8 s (quick) to attach under load.
    leadMs: bySize(ctx, { smoke: 10_000, quick: 10_000, full: 10_000 }),
  };
  const dir = mkdtempSync(join(tmpdir(), "flotilla-bench-tokens-"));
  try {
    const flotilla = await flotillaTokens(ctx, o, freshPrefix("flotilla"), mkdir(dir, "flotilla"));
    // The peer's tasks start spread over the same span as Flotilla's did, so both see the same load shape.
    const plain = await plainTokens(ctx, o, "bench-tokens-plain", mkdir(dir, "plain"), flotilla.firstTokenSpreadMs);
    return [
      {
        scenario: "tokens",
        tasks: o.tasks,
        tokensPerTask: o.tokensPerTask,
        tokenIntervalMs: o.tokenDelayMs,
        offeredEventsPerSec: Math.round((o.tasks * 1000) / o.tokenDelayMs),
        workerProcs: o.workerProcs,
        concurrency: Math.ceil(o.tasks / o.workerProcs),
        followerProcs: o.followerProcs,
        targetP99Ms: TARGET_P99_MS,
        metTarget: flotilla.latencyMs.p99 <= TARGET_P99_MS,
        flotilla,
        plain,
        ratioP50: ratio(flotilla.latencyMs.p50, plain.latencyMs.p50),
        ratioP99: ratio(flotilla.latencyMs.p99, plain.latencyMs.p99),
        note: "latencyMs: the event's ts (the producer's Date.now() at emit, whole ms) to the follower having it; breakdownMs at µs resolution from per-token timestamps in every process (emit, publish call written, its reply, message off the follower's socket, event in hand)",
      },
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function mkdir(parent: string, name: string): string {
  return mkdtempSync(join(parent, `${name}-`));
}
