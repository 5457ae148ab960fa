// The dashboard: a single page on the gateway's API, routed by the address's hash.
import { html } from "htm/preact";
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { adoptTokenFromUrl, getToken, onUnauthorized, setToken } from "./api.ts";
import { BusDeadLetters } from "./bus-dead-letters.ts";
import { DeadLetters } from "./dead-letters.ts";
import { useFeedStatus } from "./hooks.ts";
import { type FeedStatus, feed } from "./live.ts";
import { Overview } from "./overview.ts";
import { type Route, useRoute } from "./router.ts";
import { RunPage, Runs } from "./runs.ts";
import { TaskPage } from "./task.ts";
import { Tasks } from "./tasks.ts";
import { TopicPage } from "./topic.ts";
import { Topics } from "./topics.ts";
import { WorkersPage } from "./workers.ts";

const NAV: ReadonlyArray<[href: string, label: string, section: string]> = [
  ["#/", "Overview", ""],
  ["#/tasks", "Tasks", "tasks"],
  ["#/workers", "Workers", "workers"],
  ["#/dead-letters", "Dead letters", "dead-letters"],
  ["#/runs", "Graph runs", "runs"],
  ["#/topics", "Topics", "topics"],
];

function page({ parts, query }: Route) {
  const [section = "", arg, sub] = parts;
  const status = query.get("status") ?? undefined;
  switch (section) {
    case "":
      return html`<${Overview} />`;
    case "tasks":
      return html`<${Tasks} queue=${query.get("queue") ?? undefined} status=${status} />`;
    case "queues":
      return html`<${Tasks} key=${arg} queue=${arg} status=${status} />`;
    case "task":
      return arg ? html`<${TaskPage} key=${arg} taskId=${arg} />` : null;
    case "workers":
      return html`<${WorkersPage} />`;
    case "dead-letters":
      return html`<${DeadLetters} queue=${arg} />`;
    case "runs":
      return arg ? html`<${RunPage} key=${arg} runId=${arg} />` : html`<${Runs} />`;
    case "topics":
      if (arg && sub) return html`<${BusDeadLetters} key=${`${arg}/${sub}`} topic=${arg} subscription=${sub} />`;
      return arg ? html`<${TopicPage} key=${arg} topic=${arg} />` : html`<${Topics} />`;
    default:
      return html`<p>No page here. <a href="#/">Overview</a></p>`;
  }
}

/** Shown when the API answered 401: the gateway wants a bearer token. */
function TokenForm({ onDone }: { onDone: () => void }) {
  const [value, setValue] = useState("");
  return html`<form
    class="token-form"
    onSubmit=${(e: Event) => {
      e.preventDefault();
      setToken(value.trim() || null);
      onDone();
    }}
  >
    <b>The gateway needs a token.</b>
    <input type="password" placeholder="bearer token" value=${value} onInput=${(e: Event) => setValue((e.target as HTMLInputElement).value)} />
    <button type="submit">Use it</button>
    <span class="muted small">Kept for this tab only (sessionStorage). You can also open the page once with <code>?token=…</code>.</span>
  </form>`;
}

const FEED_LABEL: Record<FeedStatus, [text: string, title: string]> = {
  live: ["● live", "Pages update as the fleet changes (GET /v1/events)"],
  connecting: ["○ connecting…", "Opening the live feed; pages poll meanwhile"],
  reconnecting: ["○ reconnecting…", "The live feed dropped; pages poll every 2 s until it is back"],
  off: ["○ not live", "No live feed (no token, or it was refused); pages poll every 2 s"],
};

/** Whether the page is on the live feed. */
function FeedIndicator() {
  const status = useFeedStatus();
  const [text, title] = FEED_LABEL[status];
  return html`<span class=${`feed feed-${status}`} data-testid="feed" data-state=${status} title=${title}>${text}</span>`;
}

function App() {
  const route = useRoute();
  const [needsToken, setNeedsToken] = useState(false);
  // Remounts the page after a new token, so everything loads again with it.
  const [generation, setGeneration] = useState(0);
  useEffect(() => onUnauthorized(() => setNeedsToken(true)), []);
  // One feed for the app, opened again with each token (signed out: it asks without one, and a 401 shows the form).
  useEffect(() => {
    feed.start();
    return () => feed.stop();
  }, [generation]);
  const section = route.parts[0] === "queues" || route.parts[0] === "task" ? "tasks" : (route.parts[0] ?? "");
  return html`<header>
      <a href="#/" class="brand">Flotilla</a>
      <nav>${NAV.map(([href, label, s]) => html`<a href=${href} class=${section === s ? "active" : ""}>${label}</a>`)}</nav>
      <span class="spacer"></span>
      <${FeedIndicator} />
      ${
        getToken()
          ? html`<button class="link" title="Forget the token" onClick=${() => {
              setToken(null);
              setGeneration((g) => g + 1);
            }}>sign out</button>`
          : null
      }
    </header>
    ${
      needsToken
        ? html`<${TokenForm}
            onDone=${() => {
              setNeedsToken(false);
              setGeneration((g) => g + 1);
            }}
          />`
        : null
    }
    <main key=${generation}>${page(route)}</main>`;
}

adoptTokenFromUrl();
render(html`<${App} />`, document.getElementById("app")!);
