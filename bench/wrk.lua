-- The load generator's script for `npm run bench` (bench/lib/wrk.ts runs `wrk -t1 -s bench/wrk.lua`).
-- wrk is a C program: per request it costs a few µs of one core, less than any server it loads here.
-- This script keeps it that way: every request string is built once, in init(); a request is a table
-- lookup; a response bumps two counters.
--
-- Settings come from the environment (os.getenv works in every Lua state wrk makes):
--   BENCH_WRK_OUT          file to write the results to (required)
--   BENCH_WRK_COOKIES      a file of Cookie header values, one a line: request n carries line n (mod the
--                          count), so every request is another visitor's; unset: the same request each time
--   BENCH_WRK_REQUESTS     a file of whole requests, one a line with each CRLF written as a tab: request n
--                          is line n (mod the count), sent as written (wins over BENCH_WRK_COOKIES)
--   BENCH_WRK_ANSWERS      a file to write every response to, "status<TAB>body" a line (a body's line
--                          breaks written as spaces): for bursts whose answers the bench reads
--   BENCH_WRK_AMOUNT       stop after this many responses (0 or unset: run for wrk's -d)
--   BENCH_WRK_BURST_AT     burst mode: each connection sends one request, all at this time (ms since
--                          the epoch, CLOCK_REALTIME), then nothing more; the run ends at the last response
--   BENCH_WRK_CONNECTIONS  wrk's -c, for burst mode
--
-- The results (done()) are plain lines "key value": wrk's summary, the statuses seen, this process's
-- CPU time from init() to done(), and wrk's latency histogram (µs value:count, as wrk left it, that is
-- after its correction for coordinated omission; bench/lib/wrk.ts takes the correction out again).

local ffi = require("ffi")
ffi.cdef([[
  typedef struct { long tv_sec; long tv_usec; } bench_timeval;
  typedef struct { bench_timeval ru_utime; bench_timeval ru_stime; long ru_rest[14]; } bench_rusage;
  int getrusage(int who, bench_rusage *usage);
  typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
  int clock_gettime(int clock, bench_timespec *tp);
  typedef struct { uint64_t count; uint64_t limit; uint64_t min; uint64_t max; uint64_t data[?]; } bench_wrk_stats;
  int getpid(void);
  int tgkill(int tgid, int tid, int sig);
]])

local function cpu_us()
  local u = ffi.new("bench_rusage")
  ffi.C.getrusage(0, u)
  return tonumber(u.ru_utime.tv_sec) * 1e6 + tonumber(u.ru_utime.tv_usec) + tonumber(u.ru_stime.tv_sec) * 1e6 + tonumber(u.ru_stime.tv_usec)
end

local function now_ms()
  local t = ffi.new("bench_timespec")
  ffi.C.clock_gettime(0, t)
  return tonumber(t.tv_sec) * 1000 + tonumber(t.tv_nsec) / 1e6
end

local cookie_file = os.getenv("BENCH_WRK_COOKIES")
local request_file = os.getenv("BENCH_WRK_REQUESTS")
local answers_file = os.getenv("BENCH_WRK_ANSWERS")
local amount = tonumber(os.getenv("BENCH_WRK_AMOUNT") or "0") or 0
local burst_at = tonumber(os.getenv("BENCH_WRK_BURST_AT") or "")
local connections = tonumber(os.getenv("BENCH_WRK_CONNECTIONS") or "0") or 0

-- Per thread (the bench runs one): what done() reads back with thread:get().
sent = 0
responses = 0
statuses = {}
cpu_start = 0
-- Burst mode: this process's CPU time when the burst's first request was made (cpu_burst_us: since then).
cpu_burst = -1
delays = 0

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

local requests_list = {}
local count = 0

function init(args)
  if request_file ~= nil then
    for line in io.lines(request_file) do
      if line ~= "" then
        count = count + 1
        requests_list[count] = (line:gsub("\t", "\r\n"))
      end
    end
    if count == 0 then
      error("no requests in " .. request_file)
    end
  elseif cookie_file == nil then
    count = 1
    requests_list[1] = wrk.format()
  else
    local head = { wrk.method .. " " .. wrk.path .. " HTTP/1.1" }
    for name, value in pairs(wrk.headers) do
      head[#head + 1] = name .. ": " .. value
    end
    local prefix = table.concat(head, "\r\n") .. "\r\nCookie: "
    for line in io.lines(cookie_file) do
      if line ~= "" then
        count = count + 1
        requests_list[count] = prefix .. line .. "\r\n\r\n"
      end
    end
    if count == 0 then
      error("no cookies in " .. cookie_file)
    end
  end
  cpu_start = cpu_us()
end

-- Defined even for one request, so that every run counts the requests it sent.
local next_index = 0
function request()
  if cpu_burst < 0 and burst_at ~= nil and now_ms() >= burst_at then
    cpu_burst = cpu_us()
  end
  next_index = next_index + 1
  if next_index > count then
    next_index = 1
  end
  sent = sent + 1
  return requests_list[next_index]
end

if burst_at ~= nil then
  -- wrk asks delay() before every request: each connection's first request waits for the burst, and
  -- every later one waits longer than the run.
  function delay()
    delays = delays + 1
    if delays > connections then
      return 1e9
    end
    return math.max(0, burst_at - now_ms())
  end
  amount = connections
end

-- Ends the run early: wrk's main thread sleeps for -d, and a SIGINT (sent to that thread, whose id
-- is the process id) wakes it up to collect the threads and report, as when a user presses Ctrl-C.
local answers = nil

local function finish()
  if answers ~= nil then
    answers:flush()
  end
  wrk.thread:stop()
  local pid = ffi.C.getpid()
  ffi.C.tgkill(pid, pid, 2)
end

local function counted(status)
  responses = responses + 1
  statuses[status] = (statuses[status] or 0) + 1
  if amount > 0 and responses >= amount then
    finish()
  end
end

if answers_file == nil then
  function response(status)
    counted(status)
  end
else
  function response(status, headers, body)
    if answers == nil then
      answers = assert(io.open(answers_file, "w"))
    end
    answers:write(status, "\t", (body:gsub("[\r\n]", " ")), "\n")
    counted(status)
  end
end

function done(summary, latency)
  local out = assert(io.open(assert(os.getenv("BENCH_WRK_OUT"), "BENCH_WRK_OUT is not set"), "w"))
  local t = threads[1]
  out:write("requests ", summary.requests, "\n")
  out:write("duration_us ", summary.duration, "\n")
  out:write("bytes ", summary.bytes, "\n")
  local e = summary.errors
  out:write("errors ", e.connect, " ", e.read, " ", e.write, " ", e.status, " ", e.timeout, "\n")
  out:write("sent ", t:get("sent"), "\n")
  out:write("responses ", t:get("responses"), "\n")
  out:write("delays ", t:get("delays"), "\n")
  out:write("cpu_us ", cpu_us() - t:get("cpu_start"), "\n")
  if t:get("cpu_burst") >= 0 then
    out:write("cpu_burst_us ", cpu_us() - t:get("cpu_burst"), "\n")
  end
  local s = {}
  for status, n in pairs(t:get("statuses")) do
    s[#s + 1] = status .. ":" .. n
  end
  out:write("statuses ", table.concat(s, ","), "\n")
  -- The histogram itself (one bucket per µs), read from wrk's stats struct: latency(i) would scan it
  -- once per bucket.
  local stats = ffi.cast("bench_wrk_stats**", latency)[0]
  local buckets = {}
  if tonumber(stats.count) > 0 then
    for v = tonumber(stats.min), tonumber(stats.max) do
      local n = tonumber(stats.data[v])
      if n > 0 then
        buckets[#buckets + 1] = v .. ":" .. n
      end
    end
  end
  out:write("histogram ", table.concat(buckets, ","), "\n")
  out:close()
end
