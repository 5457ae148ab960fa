/**
 * The tokens scenario's peer names its task number `task`'s keys as Flotilla does a task's: a
 * stream that keeps the events and a (sharded) channel that carries them live, under one hash tag.
 */
export const plainTaskKeys = (prefix: string, task: number) => ({
  taskId: `tokens/t${task}`,
  stream: `${prefix}:events:{t${task}}`,
  channel: `${prefix}:live:{t${task}}`,
});
