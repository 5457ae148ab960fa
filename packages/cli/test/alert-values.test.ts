// `flotilla alerts` prints an alert's value and threshold in its rule's unit (a ratio as a percentage,
// a time as a duration, a count as it is, a rule of one's own rounded), never as a raw float, and
// the message and value of a firing alert as of the rules' last round, not as it started firing.
// @cluster: the alert stream and its figures read from the {fleet} slot by another process
import type { AlertManager, AlertRule } from "@flotilla/client";
import { useFlotilla } from "@flotilla/testing/vitest";
import { afterAll, describe, expect, it } from "vitest";
import { flotilla, json } from "./cli.ts";

describe("flotilla alerts: values", () => {
  const env = useFlotilla("cli-alert-values");
  const managers: AlertManager[] = [];
  afterAll(async () => {
    for (const m of managers) await m.stop();
  });

  it("shows values in their unit, with the figures of the last round", async () => {
    let rate = 0.4666666666666667;
    // Fleet-wide rules under the default rules' names (their units), and one of the application's own.
    const rule = (name: string, value: () => number, threshold: number, message: () => string): AlertRule => ({
      name,
      severity: "warning",
      scope: "fleet",
      check: () => ({ firing: true, value: value(), threshold, message: message() }),
    });
    // As the gateway runs them: the alert stream (and its figures) is what `flotilla alerts` reads.
    const manager = env.client().fleet.runAlerts({
      queues: [],
      intervalMs: 600_000,
      rules: [
        rule(
          "failure_rate",
          () => rate,
          0.1,
          () => `${Math.round(rate * 100)} % failed`,
        ),
        rule(
          "wait_time_p95",
          () => 72_000,
          60_000,
          () => "slow starts",
        ),
        rule(
          "queue_depth_warning",
          () => 612,
          500,
          () => "deep",
        ),
        rule(
          "own_ratio",
          () => 0.123456789,
          0.5,
          () => "own rule",
        ),
      ],
    });
    managers.push(manager);
    // Its first round runs at once; this one waits for it.
    await manager.evaluate();
    rate = 0.2351;
    await manager.evaluate();

    const r = await flotilla(env.prefix, ["alerts"]);
    expect(r.code, r.stderr).toBe(0);
    const [firing, recent] = r.stdout.split("recent events");
    expect(firing).toMatch(/failure_rate\s+\*\s+warning\s+.+ago\s+23\.5 % \/ 10 %\s+24 % failed/);
    expect(firing).toMatch(/wait_time_p95\s+.+\s+1m12s \/ 1m00s\s+slow starts/);
    expect(firing).toMatch(/queue_depth_warning\s+.+\s+612 \/ 500\s+deep/);
    expect(firing).toMatch(/own_ratio\s+.+\s+0\.123 \/ 0\.5\s+own rule/);
    expect(r.stdout).not.toMatch(/\d\.\d{4,}/);
    // The events keep what was sent when the alert started firing.
    expect(recent).toContain("47 % failed");
    // --json keeps the numbers as they are.
    const alerts = await json<{ firing: Array<{ rule: string; value: number; message: string }> }>(env.prefix, ["alerts"]);
    expect(alerts.firing.find((e) => e.rule === "failure_rate")).toMatchObject({ value: 0.2351, message: "24 % failed" });
  });
});
