-- wrk_pipeline.lua: HTTP/1.1 pipelining for wrk. Each write carries DEPTH copies of the GET
-- of wrk's URL path, so every connection keeps DEPTH requests outstanding; wrk counts the
-- responses one by one (Requests/sec is responses per second) and records one latency sample
-- per batch, from the write to the batch's last response.
--   wrk -t1 -c8 -d5s -s scripts/lib/wrk_pipeline.lua URL -- DEPTH      (DEPTH default 16)
-- Used by scripts/compare_nginx.py (--pipeline N) and scripts/profile_server.py (--pipelines N).

local batch

init = function(args)
  local depth = tonumber(args[1] or "16")
  if depth == nil or depth < 1 or depth ~= math.floor(depth) then
    error("wrk_pipeline.lua: DEPTH must be a positive integer, got " .. tostring(args[1]))
  end
  local one = wrk.format("GET", wrk.path)
  local parts = {}
  for i = 1, depth do
    parts[i] = one
  end
  batch = table.concat(parts)
end

request = function()
  return batch
end
