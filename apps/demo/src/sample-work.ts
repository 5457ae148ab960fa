// The work `npm run dashboard` sends its sample fleet (see sample-fleet.ts for what serves it).

/** outline → one branch per section (written in parallel) → edit, once every branch is done. */
export const REPORT_GRAPH = {
  name: "sample-report",
  nodes: [
    { id: "outline", type: "outline", fanOut: true, next: ["write"] },
    { id: "write", type: "section-writer", next: ["edit"] },
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a graph expression (@flotilla/graph), not a template literal
    { id: "edit", type: "editor", unites: { id: "outline" }, inputs: { sections: "${{write.outputs.text}}" } },
  ],
};

/** The topic the sample orders are published to. */
export const ORDERS_TOPIC = "orders.created";
