// Whether a topic or a subscription exists, for the bus routes' 404s: the bus's readers answer an
// unknown one as an empty one (no events, no groups, no dead letters), which would hide a typo.
import type { Bus, GroupInfo } from "@flotilla/bus";
import { ErrorCodes } from "@flotilla/core";
import { GatewayError, GatewayErrorCodes } from "./errors.ts";

/** TOPIC_NOT_FOUND unless the topic was published to or subscribed. */
export async function assertTopic(bus: Bus, topic: string): Promise<void> {
  if (!(await bus.topics()).includes(topic)) throw topicNotFound(topic);
}

/** The subscription's group; TOPIC_NOT_FOUND or SUBSCRIPTION_NOT_FOUND when there is none. */
export async function findSubscription(bus: Bus, topic: string, name: string): Promise<GroupInfo> {
  const group = (await bus.groups(topic)).find((g) => g.name === name);
  if (group) return group;
  await assertTopic(bus, topic);
  throw new GatewayError(ErrorCodes.SUBSCRIPTION_NOT_FOUND, `no subscription "${name}" on topic "${topic}"`);
}

const topicNotFound = (topic: string) => new GatewayError(GatewayErrorCodes.TOPIC_NOT_FOUND, `no topic "${topic}" (nothing published to it or subscribed)`);
