-- wrk_put_keys.lua: PUT /key/k%010d with a VALUE_BYTES-byte body for keys FIRST..FIRST+COUNT-1,
-- each key once, then the last key again (a replacement, no new item) until wrk is stopped.
-- optimizations/server_memory.sh's load: 11-byte keys, 100-byte values; it stops wrk once the
-- server's /stats counts COUNT sets (wrk cannot stop itself before its -d duration).
--   wrk -t1 -c8 -d600s -s optimizations/wrk_put_keys.lua URL -- COUNT [VALUE_BYTES] [FIRST]
-- One wrk thread (-t1): the key counter lives in that thread's Lua state.
-- PUT_TTL=SECONDS in the environment puts "?ttl=SECONDS" on every PUT (issue 30's "every item
-- with a TTL" row).

local count, first, next_key, answered, body, query

init = function(args)
  count = tonumber(args[1] or "")
  local value_bytes = tonumber(args[2] or "100")
  first = tonumber(args[3] or "0")
  if count == nil or count < 1 or value_bytes == nil or first == nil then
    error("wrk_put_keys.lua: usage -- COUNT [VALUE_BYTES] [FIRST]")
  end
  body = string.rep("v", value_bytes)
  local ttl = os.getenv("PUT_TTL")
  query = (ttl ~= nil and ttl ~= "") and ("?ttl=" .. ttl) or ""
  -- wrk calls request() once in thread 0 to check it (never sent): that one gets key -1.
  next_key, answered = -1, 0
end

request = function()
  -- Past COUNT the last key is sent again (a replacement, no new item) until wrk stops.
  local i = next_key < count and next_key or count - 1
  next_key = next_key + 1
  return wrk.format("PUT", string.format("/key/k%010d", first + i) .. query, nil, body)
end

response = function(status, headers, body_)
  if status ~= 201 and status ~= 204 then
    error("wrk_put_keys.lua: PUT answered " .. status)
  end
end
