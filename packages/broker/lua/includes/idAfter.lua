-- The stream id right after `id` (ms-seq): MINID keeps ids from it on, so `id` itself goes.
local function idAfter(id)
  local ms, seq = string.match(id, '^(%d+)-(%d+)$')
  return ms .. '-' .. string.format('%d', tonumber(seq) + 1)
end
