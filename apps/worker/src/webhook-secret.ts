import type { Logger } from "@flotilla/core";
import type { SubscriptionRunner } from "@flotilla/worker";

/** What a bus worker of @flotilla/bus offers for a deployment's secret (the app does not load @flotilla/bus itself). */
interface TakesWebhookSecret {
  setDefaultWebhookSecret(secret: readonly string[]): boolean;
}

/**
 * Gives the module's bus worker the webhook secret of `--webhook-secret` / FLOTILLA_WEBHOOK_SECRET:
 * over the environment's, under a secret the module sets in code (the rule of every entry point). A
 * flag that cannot take effect is said in the log, never ignored without a word.
 */
export function applyWebhookSecret(bus: SubscriptionRunner | undefined, secrets: readonly string[], fromFlag: boolean, log: Logger): void {
  const say = (msg: string) => (fromFlag ? log.warn(msg, { setting: "--webhook-secret" }) : log.debug(msg, { setting: "FLOTILLA_WEBHOOK_SECRET" }));
  const taker = bus as Partial<TakesWebhookSecret> | undefined;
  if (!taker) say("the webhook secret has no effect: the module serves no bus subscriptions (export bus = busWorker(…)), so this worker delivers no webhooks");
  else if (typeof taker.setDefaultWebhookSecret !== "function") say("the webhook secret has no effect: the module's bus takes none");
  else if (!taker.setDefaultWebhookSecret(secrets)) {
    say("the webhook secret has no effect: the module's busWorker sets webhooks.secret (which wins), or webhooks: false (this worker delivers none)");
  }
}
