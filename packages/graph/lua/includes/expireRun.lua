-- Gives every key of an ended run (`run.keys`) its time to live (`run.ttlMs`), so nothing of it
-- stays behind. Called after the script's last write: a key first written later would never expire.
local function expireRun(run)
  for _, key in ipairs(run.keys) do
    redis.call('PEXPIRE', key, run.ttlMs)
  end
end
