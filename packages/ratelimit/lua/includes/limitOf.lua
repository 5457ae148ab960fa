-- A limit as a script is given it, from ARGV[2..5]: requests and tokens per minute (0: that bucket
-- is not limited) and their bursts (the most either bucket holds: what may go at once).
local function limitOf(argv)
  local rpm, tpm, requestBurst, tokenBurst = tonumber(argv[2]), tonumber(argv[3]), tonumber(argv[4]), tonumber(argv[5])
  return {
    requestsPerMs = rpm / 60000,
    tokensPerMs = tpm / 60000,
    requestBurst = rpm > 0 and requestBurst or 0,
    tokenBurst = tpm > 0 and tokenBurst or 0,
  }
end
