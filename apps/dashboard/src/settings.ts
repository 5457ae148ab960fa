// How often pages reload what they show. The live feed (GET /v1/events) tells them when something
// changed, so their own poll is only a fallback for what the feed does not carry (alerts, depth
// figures that age) and for a feed that dropped without anyone noticing.

/** The fallback poll while the feed is live. `?poll=<ms>` on the page's address sets it (the tests set it long, so only the feed can update a page in time). */
export const FALLBACK_POLL_MS = readPollMs(15_000);
/** The poll while the feed is down (connecting, reconnecting, or the gateway has none): as often as before the feed existed. */
export const OFFLINE_POLL_MS = 2_000;
/** A page refetches at most this often however many events arrive (a burst of a thousand is one or two requests). */
export const REFETCH_GAP_MS = 500;

function readPollMs(fallback: number): number {
  const value = Number(new URL(window.location.href).searchParams.get("poll"));
  return Number.isFinite(value) && value >= 1000 ? value : fallback;
}

/** The event bus is not on the live feed: its pages poll as every page did before the feed existed. */
export const BUS_POLL_MS = 2_000;
