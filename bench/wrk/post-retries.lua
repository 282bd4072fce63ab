-- wrk script for POST /v1/budgets/{name}/retries: body {"count": 1}, JSON content type and the
-- bearer token (COORDINATOR_TOKEN from the environment, default "bench").
-- No response() callback, so wrk does not hand every answer to Lua: the 200/429 mix is read from
-- the coordinator's /metrics (vertx_http_server_requests_total{code}) by run.sh.
local token = os.getenv("COORDINATOR_TOKEN") or "bench"
wrk.method = "POST"
wrk.body = '{"count": 1}'
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Authorization"] = "Bearer " .. token
