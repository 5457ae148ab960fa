import { ErrorCodes, FlotillaError, type JsonValue } from "@flotilla/core";
import AjvModule from "ajv/dist/2020.js";

type Validate = ((value: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string }> | null };
const Ajv2020 = ((AjvModule as unknown as { default?: unknown }).default ?? AjvModule) as new (
  o: object,
) => {
  compile(schema: object): Validate;
};
const ajv = new Ajv2020({ allErrors: false, strict: false });
const compiled = new Map<string, Validate>();

/**
 * Reads an agent's final answer as JSON and checks it against the agent's output schema (JSON
 * Schema; ```json fences are tolerated). A violation is an OUTPUT_INVALID error naming where.
 */
export function parseOutput(text: string, schema: Record<string, JsonValue>): JsonValue {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    const { $schema: _, ...rest } = schema;
    validate = ajv.compile(rest);
    compiled.set(key, validate);
  }
  const body = text.trim().replace(/^```(?:json)?\s*([\s\S]*?)\s*```$/, "$1");
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    throw new FlotillaError(ErrorCodes.OUTPUT_INVALID, `the final answer is not JSON: ${body.slice(0, 120)}`);
  }
  if (!validate(value)) {
    const issue = validate.errors?.[0];
    throw new FlotillaError(
      ErrorCodes.OUTPUT_INVALID,
      `the final answer does not match the output schema: ${issue?.instancePath || "(root)"} ${issue?.message ?? "is invalid"}`,
    );
  }
  return value as JsonValue;
}
