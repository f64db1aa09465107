-- wrk script: PUT a new layout version as fast as the server acknowledges them.
-- Each wrk thread writes its own account (bench-w0, bench-w1, … created before the run) with
-- If-Match: * (whatever version is current), so every PUT is a real, durable write.
-- PACE_MS (env) > 0 waits that long between a connection's requests (PACE_MS=100: ~10 PUT/s).
local threads = 0
function setup(thread)
    thread:set("id", threads)
    threads = threads + 1
end

function init(args)
    account = "bench-w" .. id
    token = os.getenv("BENCH_TOKEN") or "bench-admin-token-0123456789"
    pace = tonumber(os.getenv("PACE_MS") or "0")
    n = 0
end

function delay()
    return pace
end

function request()
    n = n + 1
    local body = '{"schemaVersion":1,"tabs":[{"id":"a","title":"write ' .. n ..
        '","rootViewController":"AViewController"}]}'
    return wrk.format("PUT", "/v1/accounts/" .. account .. "/layout",
        {["Content-Type"] = "application/json", ["If-Match"] = "*", ["Authorization"] = "Bearer " .. token}, body)
end
