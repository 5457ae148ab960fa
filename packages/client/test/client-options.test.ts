// Issue 40.3 and the strict-options rule: the client reads FLOTILLA_PREFIX / REDIS_URL as every entry
// point does (the option given wins), checks them at construction, and refuses an option it does not know.
import { ValidationError } from "@flotilla/core";
import { afterEach, describe, expect, it } from "vitest";
import { FlotillaClient } from "../src/index.ts";

const saved = { FLOTILLA_PREFIX: process.env.FLOTILLA_PREFIX, REDIS_URL: process.env.REDIS_URL };
afterEach(() => {
  for (const [name, value] of Object.entries(saved)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
});

/** A client that is never used: nothing is sent, the connection closes at once. */
async function made(options: ConstructorParameters<typeof FlotillaClient>[0]): Promise<FlotillaClient> {
  const client = new FlotillaClient({ redis: "redis://127.0.0.1:1", connectTimeoutMs: 100, ...options });
  await client.close();
  return client;
}

describe("the client's options", () => {
  it("prefix: the option, else FLOTILLA_PREFIX, else flotilla", async () => {
    process.env.FLOTILLA_PREFIX = "from-env";
    expect((await made({})).keys.prefix).toBe("from-env");
    expect((await made({ prefix: "given" })).keys.prefix).toBe("given");
    process.env.FLOTILLA_PREFIX = "";
    expect((await made({})).keys.prefix).toBe("flotilla");
  });

  it("checks FLOTILLA_PREFIX and REDIS_URL at construction, naming the variable", () => {
    process.env.FLOTILLA_PREFIX = "has space";
    expect(() => new FlotillaClient()).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR", field: "FLOTILLA_PREFIX" }));
    process.env.FLOTILLA_PREFIX = "";
    process.env.REDIS_URL = "http://127.0.0.1:6379";
    expect(() => new FlotillaClient()).toThrow(expect.objectContaining({ code: "VALIDATION_ERROR", field: "REDIS_URL" }));
    expect(() => new FlotillaClient({ redis: "https://127.0.0.1:6379" })).toThrow(expect.objectContaining({ field: "redis" }));
  });

  it("refuses an option it does not know, naming it", () => {
    const err = (() => {
      try {
        new FlotillaClient({ redis: "redis://127.0.0.1:1", prefx: "p" } as never);
      } catch (e) {
        return e;
      }
    })() as ValidationError;
    expect(err).toBeInstanceOf(ValidationError);
    expect(err.field).toBe("prefx");
    expect(err.message).toBe("invalid client options: prefx: is not a FlotillaClient option");
    expect(() => new FlotillaClient({ connectTimeoutMs: -1 })).toThrow(expect.objectContaining({ field: "connectTimeoutMs" }));
  });
});
