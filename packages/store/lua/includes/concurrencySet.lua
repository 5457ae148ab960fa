-- The running set of concurrency key `ckey` in the batch's queue, as keys.concurrency in
-- @flotilla/core builds it: the queue's normal lane key, then `:concurrency:<ckey>`. Its parked
-- tasks wait in the list `<set>:waiting`.
local function concurrencySet(batch, ckey)
  return batch.lanes[2] .. ':concurrency:' .. ckey
end
