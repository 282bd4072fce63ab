-- wrk: POST /payments with a new Idempotency-Key on every request (thread id and a counter)
local counter = 0
local thread_id = 0
local next_id = 0
function setup(thread)
  next_id = next_id + 1
  thread:set("tid", next_id)
end
function init(args)
  thread_id = tid or 0
end
wrk.method = "POST"
wrk.body = '{"amount": 4200}'
wrk.headers["Content-Type"] = "application/json"
function request()
  counter = counter + 1
  wrk.headers["Idempotency-Key"] = "k-" .. thread_id .. "-" .. counter .. "-" .. math.random(1, 1000000000)
  return wrk.format(nil, "/payments")
end
