-- Whether stream id `a` sorts before `b` (both ms-seq; ms fit a Lua number exactly).
local function idBefore(a, b)
  local am, as = string.match(a, '^(%d+)-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)-(%d+)$')
  am, bm = tonumber(am), tonumber(bm)
  if am ~= bm then
    return am < bm
  end
  return tonumber(as) < tonumber(bs)
end
