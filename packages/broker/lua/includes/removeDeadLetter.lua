-- Deletes one dead letter; returns 1 when it was there (a caller re-queueing it), 0 when it was not.
local function removeDeadLetter(deadLetters, id)
  return redis.call('XDEL', deadLetters, id)
end
