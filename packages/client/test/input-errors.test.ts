// What JSON cannot carry in a task's input (a JavaScript caller's, or TypeScript's through `as`) is
// refused before anything is written, with the path from `input` and why: a BigInt, a function, a
// Date, a Map, a Set, NaN, Infinity, undefined, a Symbol, a class instance, an array's hole. The
// metadata and a signal's payload say the same; options keep their own fields (runAt takes a Date).
import { keysUnder, scripted } from "@flotilla/testing";
import { useFlotilla } from "@flotilla/testing/vitest";
import { describe, expect, it } from "vitest";
import { ValidationError } from "../src/index.ts";

class Money {
  cents = 5;
}

const notJson: Array<[string, unknown, string, RegExp]> = [
  ["a BigInt", { amount: 10n }, "input.amount", /^a BigInt is not JSON/],
  ["a function", { order: { total: () => 1 } }, "input.order.total", /^a function is not JSON/],
  ["a Date", { at: new Date(0) }, "input.at", /^a Date is not JSON \(send date\.toISOString\(\)/],
  ["a Map", { lines: [1, new Map([["a", 1]])] }, "input.lines.1", /^a Map is not JSON \(send Object\.fromEntries\(map\)\)/],
  ["a Set", { tags: new Set(["a"]) }, "input.tags", /^a Set is not JSON/],
  ["NaN", { price: Number.NaN }, "input.price", /^NaN is not JSON/],
  ["Infinity", [1, Number.POSITIVE_INFINITY], "input.1", /^Infinity is not JSON/],
  ["undefined", { note: undefined }, "input.note", /^undefined is not JSON \(leave the key out, or send null\)/],
  ["a Symbol", { kind: Symbol("k") }, "input.kind", /^a Symbol is not JSON/],
  ["a class instance", { price: new Money() }, "input.price", /^a Money is not JSON \(send a plain object\)/],
  // biome-ignore lint/suspicious/noSparseArray: the hole is the case
  ["an array's hole", [1, , 3], "input.1", /^undefined is not JSON/],
  ["the whole input", 7n, "input", /^a BigInt is not JSON/],
];

describe("input that JSON cannot carry", () => {
  const env = useFlotilla("input-errors");

  it.each(notJson)("%s: a ValidationError naming the path from input and why, nothing written (submit and submitMany)", async (_, input, field, reason) => {
    const prefix = `${env.prefix}:${field}`;
    const client = env.client({ prefix });
    const one = (await client.submit(scripted("a"), input as never).catch((e: unknown) => e)) as ValidationError;
    expect(one).toBeInstanceOf(ValidationError);
    expect(one.code).toBe("VALIDATION_ERROR");
    expect(one.field).toBe(field);
    expect(one.issues).toHaveLength(1);
    expect(one.issues[0]!.message).toMatch(reason);
    expect(one.message).toContain(`${field}: ${one.issues[0]!.message}`);
    expect(one.message).not.toContain("Invalid input");
    const many = (await client
      .submitMany([
        { agent: scripted("a"), input: "fine" },
        { agent: scripted("a"), input: input as never },
      ])
      .catch((e: unknown) => e)) as ValidationError;
    expect(many).toBeInstanceOf(ValidationError);
    expect(many.field).toBe(`items.1.${field}`);
    expect(many.issues[0]!.message).toBe(one.issues[0]!.message);
    expect(await keysUnder(env.redis, prefix)).toEqual([]);
  });

  it("a circular reference is named from input too (input.self), as the metadata's from metadata", async () => {
    const client = env.client();
    const loop: Record<string, unknown> = { id: 1 };
    loop.self = loop;
    const err = (await client.submit(scripted("a"), loop as never).catch((e: unknown) => e)) as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.field).toBe("input.self");
    expect(err.message).toContain("input.self: circular reference: input.self refers back to input");
    const meta = (await client.submit(scripted("a"), "x", { metadata: { n: 1n } } as never).catch((e: unknown) => e)) as ValidationError;
    expect(meta.field).toBe("metadata.n");
    expect(meta.message).toMatch(/^invalid options: metadata\.n: a BigInt is not JSON/);
  });

  it("options keep what they accept (runAt as a Date), shared references are fine, and a signal's payload is named from payload", async () => {
    const client = env.client();
    const shared = { n: 1 };
    const handle = await client.submit(scripted("a"), { a: shared, b: [shared], c: null, d: "", e: 0, f: false }, { runAt: new Date(Date.now() + 3_600_000) });
    expect((await handle.status()).status).toBe("PENDING");
    const err = (await handle.signal("go", { when: new Date(0) } as never).catch((e: unknown) => e)) as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.field).toBe("payload.when");
    expect(err.message).toMatch(/^invalid signal payload: payload\.when: a Date is not JSON/);
  });
});
