-- wrk_random_keys.lua: GET or PUT /key/k%010d for uniformly random keys of 0..COUNT-1 (PUTs
-- with a VALUE_BYTES-byte body: replacements once the keys are loaded). optimizations/server_ab.sh's
-- load, after wrk_put_keys.lua has loaded the keys.
--   wrk -t1 -c8 -d5s -s optimizations/wrk_random_keys.lua URL -- get|put COUNT [VALUE_BYTES]
-- A GET that misses (404) or a PUT not answered 201/204 is an error: the A/B measures hits.

local method, count, body, rng_state

init = function(args)
  method = args[1]
  count = tonumber(args[2] or "")
  local value_bytes = tonumber(args[3] or "100")
  if (method ~= "get" and method ~= "put") or count == nil or count < 1 or value_bytes == nil then
    error("wrk_random_keys.lua: usage -- get|put COUNT [VALUE_BYTES]")
  end
  body = string.rep("v", value_bytes)
  rng_state = 12345
end

request = function()
  rng_state = (rng_state * 1103515245 + 12345) % 2147483648
  local path = string.format("/key/k%010d", rng_state % count)
  if method == "get" then return wrk.format("GET", path) end
  return wrk.format("PUT", path, nil, body)
end

response = function(status, headers, body_)
  if method == "get" and status ~= 200 then error("wrk_random_keys.lua: GET answered " .. status) end
  if method == "put" and status ~= 201 and status ~= 204 then
    error("wrk_random_keys.lua: PUT answered " .. status)
  end
end
