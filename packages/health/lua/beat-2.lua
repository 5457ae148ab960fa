#!lua flags=allow-oom
--[[
  Writes a worker's heartbeat: its record (expiring), its beat time in the registry, and forgets
  workers silent for too long. Runs on a full Redis too (allow-oom): a worker that takes no new
  work because Redis is full is still alive, and must not look dead to the fleet and its alerts.

  Input:
    KEYS[1] the worker's record
    KEYS[2] the registry of workers (sorted set, scored by last beat)
    ARGV[1] the record (JSON)
    ARGV[2] its time to live (ms)
    ARGV[3] the worker's id
    ARGV[4] the beat's time (Redis's clock, ms)
    ARGV[5] forget workers whose last beat is this old or older (ms)

  Returns:
    1
]]
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', ARGV[5])
return 1
