-- wrk script: GET the tabs of a random account among ACCOUNTS (env) seeded as a000000, a000001, …
-- Every account's first request compiles its variant; later ones are served from its cache.
function init(args)
    accounts = tonumber(os.getenv("ACCOUNTS") or "100000")
    math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16))
end

function request()
    return wrk.format("GET", string.format("/v1/accounts/a%06d/tabs", math.random(0, accounts - 1)))
end
