// The OpenAPI shape of a JSON value, written out rather than generated from core's zod schema. The
// generated one has `nullable` without a `type` (Redocly's `nullable-type-sibling` refuses it, and
// generators read it as `any`), and an array of itself: openapi-typescript writes that as
// `components["schemas"]["JsonValue"][]` inside its own declaration, which TypeScript rejects
// ("referenced directly or indirectly in its own type annotation"). An object's members may refer
// back (TypeScript resolves them lazily); an array's items are spelled out one level deep instead,
// arrays within arrays being any JSON arrays.

const JSON_VALUE = { $ref: "#/components/schemas/JsonValue" };
const JSON_OBJECT = { type: "object", additionalProperties: JSON_VALUE } as const;

/** An array's items: a JSON value, with arrays inside it left as any JSON arrays. */
const ARRAY_ITEM = {
  anyOf: [{ type: "string" }, { type: "number" }, { type: "boolean" }, { ...JSON_OBJECT, nullable: true }, { type: "array", items: {} }],
};

/** Metadata for `JsonValueSchema`: null is the object branch's `nullable` (OpenAPI 3.0 has no null type). */
export const JSON_VALUE_OPENAPI = {
  description: "Any JSON value: a string, number, boolean, null, array or object.",
  anyOf: [{ type: "string" }, { type: "number" }, { type: "boolean" }, { ...JSON_OBJECT, nullable: true }, { type: "array", items: ARRAY_ITEM }],
};
