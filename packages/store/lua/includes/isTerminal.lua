local TERMINAL_STATUSES = { COMPLETED = true, FAILED = true, CANCELLED = true }
-- True for a status a task never leaves.
local function isTerminal(status)
  return TERMINAL_STATUSES[status] == true
end
