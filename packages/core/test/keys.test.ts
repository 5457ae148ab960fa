import { describe, expect, it } from "vitest";
import { ValidationError } from "../src/errors.ts";
import { createKeys } from "../src/keys.ts";

// The CRC16 slot Redis Cluster computes, honouring hash tags.
function slot(key: string): number {
  const open = key.indexOf("{");
  if (open >= 0) {
    const close = key.indexOf("}", open + 1);
    if (close > open + 1) key = key.slice(open + 1, close);
  }
  let crc = 0;
  for (const byte of Buffer.from(key)) {
    crc ^= byte << 8;
    for (let i = 0; i < 8; i++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc % 16384;
}

describe("keys", () => {
  const k = createKeys("acme");

  it("puts every key under the prefix", () => {
    for (const key of [k.task("q/t1"), k.events("q/t1"), k.queue("q"), k.deadLetters("q"), k.taskIndex("q"), k.queues(), k.workers(), k.worker("w")]) {
      expect(key.startsWith("acme:")).toBe(true);
    }
  });

  it("keeps a queue's keys and its tasks' keys in one cluster slot", () => {
    const queueKeys = [
      k.task("q/t1"),
      k.task("q/t2"),
      k.events("q/t1"),
      `${k.taskBase("q")}t3`,
      k.queue("q"),
      k.lane("q", "high"),
      k.delayed("q", "low"),
      k.deadLetters("q"),
      k.taskIndex("q"),
      k.submitMarker("q", "b1"),
      k.claimMarker("q", "c1"),
      k.stats("q", Date.now()),
    ];
    expect(new Set(queueKeys.map(slot)).size).toBe(1);
    expect(k.task("q/t3")).toBe(`${k.taskBase("q")}t3`);
    expect(new Set([k.workers(), k.worker("w1"), k.worker("w2")].map(slot)).size).toBe(1);
    expect(slot(k.task("q/t1"))).not.toBe(slot(k.task("other/t1")));
  });

  it("refuses ids that would break a hash tag", () => {
    expect(() => k.task("q/a}b")).toThrow(/invalid task id/);
    expect(() => k.task("no-queue")).toThrow(/<queue>\/<name>/);
    expect(() => k.queue("")).toThrow();
    expect(() => createKeys("bad{prefix")).toThrow(ValidationError);
    expect(() => createKeys("bad{prefix")).toThrow(/key prefix/);
  });

  it("defaults the prefix to flotilla", () => {
    expect(createKeys().task("default/x")).toBe("flotilla:task:{default}:x");
  });
});
