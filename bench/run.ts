// `npm run bench`: Anteroom's throughput, latency, Redis round trips and Redis memory, each as a ratio
// to a baseline measured in the same run on this machine. Absolute figures depend on the machine and
// its neighbours; only the ratios are compared with targets.
//
// Every server under test runs in its own child process (`node --import tsx ...`) on 127.0.0.1 and a
// free port; the load generator (autocannon, as a library) runs here. A real redis-server comes from
// scripts/lib/redis-server.ts. Everything started here is stopped here by pid, also on error.
//
// Environment (all optional): BENCH_SEGMENT_SECONDS (5; every target is measured in two segments),
// BENCH_WARMUP_SECONDS (2), BENCH_PROFILE=1 (run every server under `node --cpu-prof`, profiles in
// bench/out/profiles/<server>; summarise them with `npx tsx bench/profile.ts`). Results: bench/out/results.json.
import { spawnSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { cpus } from 'node:os'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { freePort } from '../scripts/lib/free-port.js'
import { type RedisServer, startRedis } from '../scripts/lib/redis-server.js'
import { nodeMac } from '../src/adapters/node/mac.js'
import { roomKeys, seenBucketOf } from '../src/adapters/redis/keys.js'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { newVisitorId, QueueTokens } from '../src/core/queue-token.js'
import { admissionLimits, parseRoomSettings } from '../src/core/settings.js'
import { admissionCookieName, queueCookieName } from '../src/http/cookies.js'
import { runBooking, stopBookingServer } from './booking.js'
import {
  type Aggregate,
  type Child,
  CONNECTIONS,
  type CommandCount,
  classify,
  commandStats,
  compare,
  diffStats,
  log,
  memoryInfo,
  ROOT,
  type Row,
  ratioRow,
  runLoad,
  sleep,
  startChild,
  stopAllChildren,
  type Target,
} from './lib.js'
import { runWorkerBench } from './worker.js'

const SEGMENT_SECONDS = Number(process.env.BENCH_SEGMENT_SECONDS ?? 5)
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2)
const PROFILE = process.env.BENCH_PROFILE === '1'
const OUT_DIR = join(ROOT, 'bench', 'out')
const PROFILE_DIR = join(OUT_DIR, 'profiles')

const SECRET = 'bench-queue-secret-0123456789abcdefghijklmnopqrstuvwxyz'
const VISITORS = 20_000
const SMALL_LINE = 1_000
const BIG_LINE = 1_000_000
const BIG_TOKENS = 20_000
const MEMORY_VISITORS = 100_000
const MONITOR_SAMPLE = 200
const DAY_MS = 86_400_000

const ACCEPT_JSON = 'application/json'
const ACCEPT_HTML = 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'

// Queue rooms: one session already holds the only slot (see holdTheSlot), so every poll takes the
// queued path; nobody is dropped as abandoned within an hour.
const QUEUE_ROOM = {
  id: 'line',
  paths: ['/'],
  mode: 'fifo',
  totalActiveUsers: 1,
  newUsersPerMinute: 1,
  sessionDurationSeconds: 600,
  refreshSeconds: 20,
  abandonAfterSeconds: 3600,
}
const SMALL_ROOM = { ...QUEUE_ROOM, id: 'k1', paths: ['/k1'] }
const BIG_ROOM = { ...QUEUE_ROOM, id: 'm1', paths: ['/m1'] }
// Room for admitted traffic: the first poll admits, and a one-hour session is not renewed during the bench.
const OPEN_ROOM = {
  id: 'open',
  paths: ['/'],
  mode: 'fifo',
  totalActiveUsers: 10_000_000,
  newUsersPerMinute: 6_000_000,
  sessionDurationSeconds: 3600,
  refreshSeconds: 20,
  abandonAfterSeconds: 3600,
}

const notes: string[] = []
const warnings: string[] = []
let redisServer: RedisServer | undefined

// ---------------------------------------------------------------------------------------------------
// Helpers

/** n random 16-character visitor ids, [A-Za-z0-9_-] (base64url of 12 random bytes, as the edge makes). */
function visitorIds(n: number): string[] {
  const bytes = randomBytes(12 * n)
  const out = new Array<string>(n)
  for (let i = 0; i < n; i++) out[i] = bytes.toString('base64url', 12 * i, 12 * i + 12)
  return out
}

async function queueCookies(room: string, visitors: string[], arrivals: number[], expires: number): Promise<string[]> {
  const tokens = new QueueTokens(nodeMac(SECRET))
  const name = queueCookieName(room)
  const out: string[] = []
  for (let i = 0; i < visitors.length; i++) {
    out.push(`${name}=${await tokens.sign({ room, visitor: visitors[i] as string, arrival: arrivals[i] as number, expires })}`)
  }
  return out
}

async function get(url: string, headers: Record<string, string>): Promise<{ status: number; text: string; setCookies: string[] }> {
  const res = await fetch(url, { headers, redirect: 'manual' })
  return { status: res.status, text: await res.text(), setCookies: res.headers.getSetCookie() }
}

function parseJson(text: string): Record<string, unknown> {
  try {
    return JSON.parse(text) as Record<string, unknown>
  } catch {
    throw new Error(`expected JSON, got: ${text.slice(0, 200)}`)
  }
}

/** Expects a queued JSON poll; returns its body. */
async function expectQueued(url: string, cookie: string, waiting: number): Promise<Record<string, unknown>> {
  const r = await get(url, { accept: ACCEPT_JSON, cookie })
  const body = parseJson(r.text)
  if (r.status !== 200 || body.state !== 'queued') throw new Error(`expected a queued poll from ${url}, got ${r.status} ${r.text}`)
  if (body.waiting !== waiting) throw new Error(`expected ${waiting} waiting at ${url}, got ${r.text}`)
  return body
}

/** Puts one far-future session in the room's active set, so the room's only slot is taken. */
async function holdTheSlot(redis: Redis, room: string): Promise<void> {
  await redis.zadd(roomKeys(room).active, Date.now() + 7 * DAY_MS, 'bench-slot-holder')
}

/**
 * Fills a room's line directly, as polls would have left it: `line` visitor -> arrival µs, and each
 * visitor's seen bucket (a small hash visitor -> last poll ms = now) with its entry in `sweep`,
 * 1,000 members per command, 50 commands per pipeline. Returns queue-token cookies for `cookies` of
 * those visitors, spread evenly over the line. Only the cookies leave this function: a million ids
 * kept alive in the load generator's heap would slow its garbage collector.
 */
async function fillLine(redis: Redis, room: string, n: number, cookies: number, expires: number): Promise<string[]> {
  const k = roomKeys(room)
  const now = Date.now()
  const visitors = visitorIds(n)
  const arrivals = visitors.map((_, i) => (now - n - 1000 + i) * 1000)
  const CHUNK = 1000
  let pipe = redis.pipeline()
  let queued = 0
  const flush = async () => {
    const results = (await pipe.exec()) ?? []
    for (const [err] of results) if (err) throw err
    pipe = redis.pipeline()
    queued = 0
  }
  const buckets = new Map<number, (string | number)[]>()
  for (let s = 0; s < n; s += CHUNK) {
    const line: (string | number)[] = []
    for (let i = s; i < Math.min(n, s + CHUNK); i++) {
      const v = visitors[i] as string
      line.push(arrivals[i] as number, v)
      const b = seenBucketOf(v)
      let fields = buckets.get(b)
      if (fields === undefined) buckets.set(b, (fields = []))
      fields.push(v, now)
    }
    pipe.call('ZADD', k.line, ...line)
    if (++queued >= 50) await flush()
  }
  for (const [b, fields] of buckets) {
    pipe.call('HSET', `${k.seenPrefix}${b}`, ...fields)
    pipe.call('ZADD', k.sweep, now + 3_600_000, b)
    if (++queued >= 50) await flush()
  }
  await flush()
  const inLine = await redis.zcard(k.line)
  if (inLine !== n) throw new Error(`filling ${room}: expected ${n} in line, got ${inLine}`)
  const picked = Array.from({ length: cookies }, (_, i) => Math.floor(((i + 0.5) * n) / cookies))
  return queueCookies(
    room,
    picked.map((i) => visitors[i] as string),
    picked.map((i) => arrivals[i] as number),
    expires,
  )
}

/** The commands each of our Lua scripts can run, read from their source. */
function scriptCommands(): Set<string> {
  const dir = join(ROOT, 'src', 'adapters', 'redis', 'lua')
  const out = new Set<string>()
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.lua'))) {
    const source = readFileSync(join(dir, file), 'utf8')
    for (const m of source.matchAll(/redis\.p?call\(\s*['"]([A-Za-z_]+)['"]/g)) out.add((m[1] as string).toLowerCase())
  }
  return out
}

/**
 * Shows how INFO commandstats counts scripts: EVAL of a script that runs SET and GET. On Redis 7 the
 * delta is eval +1, set +1, get +1: commands run inside a script are counted as if sent. See classify().
 */
async function commandstatsExperiment(redis: Redis): Promise<Record<string, number>> {
  const before = await commandStats(redis)
  await redis.eval("redis.call('SET', KEYS[1], '1') redis.call('GET', KEYS[1]) return 1", 1, 'bench:probe')
  const delta = Object.fromEntries(diffStats(before, await commandStats(redis)))
  await redis.del('bench:probe')
  const inner = (delta.set ?? 0) + (delta.get ?? 0)
  notes.push(
    `commandstats experiment: EVAL of a script running SET and GET changed commandstats by ${JSON.stringify(delta)} ` +
      `(info = the bench's own snapshot). Commands inside scripts ${inner > 0 ? 'ARE' : 'are NOT'} counted, so client ` +
      'calls are counted as eval/evalsha/fcall + plain commands that no Lua script of ours uses (INFO excluded, HGETALL apart).',
  )
  return delta
}

interface MonitorSample {
  requests: number
  clientCommands: Record<string, number>
  insideScripts: number
}

/**
 * Exact client-sent commands on a small sequential sample: MONITOR names the source of every command,
 * a client address or "lua" for commands a script ran. The bench's own client sends nothing meanwhile.
 */
async function monitorSample(redis: Redis, send: (i: number) => Promise<void>): Promise<MonitorSample> {
  // The bench's own connection is left out by address, and nothing counts once the sample is over:
  // MONITOR keeps streaming until its connection has really closed.
  const own = /addr=(\S+)/.exec(String(await redis.call('CLIENT', 'INFO')))?.[1]
  const monitor = await redis.monitor()
  const clientCommands: Record<string, number> = {}
  let insideScripts = 0
  let counting = true
  monitor.on('monitor', (_time: string, args: string[], source: string) => {
    if (!counting || source === own) return
    if (source === 'lua') insideScripts++
    else {
      const cmd = String(args[0]).toLowerCase()
      clientCommands[cmd] = (clientCommands[cmd] ?? 0) + 1
    }
  })
  await sleep(100)
  for (let i = 0; i < MONITOR_SAMPLE; i++) await send(i)
  await sleep(300)
  counting = false
  const closed = new Promise<void>((resolve) => monitor.once('end', () => resolve()))
  monitor.disconnect()
  await Promise.race([closed, sleep(2000)])
  return { requests: MONITOR_SAMPLE, clientCommands, insideScripts }
}

function perRequest(count: CommandCount, requests: number) {
  const clientCalls = count.scripts + count.plain
  return {
    withoutSettingsReload: clientCalls / requests,
    withSettingsReload: (clientCalls + count.settingsReload) / requests,
    clientCalls,
    settingsReload: count.settingsReload,
  }
}

function checkClean(a: Aggregate): void {
  if (a.non2xx > 0 || a.errors > 0) {
    warnings.push(`${a.name}: ${a.non2xx} non-2xx responses and ${a.errors} errors (statuses ${JSON.stringify(a.statuses)})`)
  }
}

const fmtInt = (n: number) => Math.round(n).toLocaleString('en-US')
const fmtRps = (n: number) => `${fmtInt(n)} req/s`
const fmtMs = (n: number) => `${n.toFixed(2)} ms`

function printTable(rows: Row[]): void {
  const head = ['measurement', 'value', 'baseline', 'ratio', 'target', 'met']
  const cells = rows.map((r) => [r.measurement, r.value, r.baseline, r.ratio, r.target, r.met === null ? '' : r.met ? 'yes' : 'NO'])
  const widths = head.map((h, i) => Math.max(h.length, ...cells.map((c) => (c[i] as string).length)))
  const line = (c: string[]) => c.map((v, i) => (i === 0 ? v.padEnd(widths[i] as number) : v.padStart(widths[i] as number))).join('  ')
  const out = [line(head), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.map(line)]
  process.stdout.write(`\n${out.join('\n')}\n`)
}

// ---------------------------------------------------------------------------------------------------
// The bench

async function main(): Promise<number> {
  const started = Date.now()
  for (const room of [QUEUE_ROOM, SMALL_ROOM, BIG_ROOM, OPEN_ROOM]) parseRoomSettings(room)
  mkdirSync(OUT_DIR, { recursive: true })
  if (PROFILE) mkdirSync(PROFILE_DIR, { recursive: true })
  const profileDir = PROFILE ? PROFILE_DIR : undefined
  if (PROFILE) warnings.push('BENCH_PROFILE=1: every server ran under the CPU profiler, so the figures are lower than usual')

  let redis: Redis | undefined
  const results: Record<string, unknown> = {}
  const rows: Row[] = []
  try {
    if (spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).error) {
      throw new Error(
        'redis-server is not on the PATH. Install it (Debian: apt-get install -y redis-server; `npm test` does this as root).',
      )
    }
    redisServer = await startRedis()
    log(`redis-server is up on ${redisServer.url} (pid ${redisServer.pid})`)
    redis = new Redis(redisServer.url)
    const redisVersion = /redis_version:(\S+)/.exec(await redis.info('server'))?.[1]
    const scriptCmds = scriptCommands()
    results.commandstatsExperiment = await commandstatsExperiment(redis)

    const edgeEnv = (port: number, originUrl: string, rooms: object[]) => ({
      ANTEROOM_HOST: '127.0.0.1',
      ANTEROOM_PORT: String(port),
      ANTEROOM_ORIGIN: originUrl,
      ANTEROOM_REDIS_URL: (redisServer as RedisServer).url,
      ANTEROOM_QUEUE_SECRET: SECRET,
      // The admin chart's background sampler (one call per room per 10 s) is off, so that the
      // per-request counts below count only what requests cost.
      ANTEROOM_HISTORY_SAMPLE_SECONDS: '0',
      ANTEROOM_ROOMS: JSON.stringify(rooms),
    })
    const startServer = async (name: string, script: string, env: Record<string, string> = {}) => {
      const port = await freePort()
      return startChild({ name, script, port, env: { BENCH_PORT: String(port), ...env }, readyPath: '/', profileDir })
    }

    const origin = await startServer('origin', 'bench/origin.ts')

    // --- 1. Queued polls vs hello-world, a different visitor cookie on every request ---------------
    const hello = await startServer('hello', 'bench/hello.ts')
    const edgePort = await freePort()
    const queueEdge: Child = await startChild({
      name: 'edge (queue rooms)',
      script: 'src/entry/node.ts',
      port: edgePort,
      env: edgeEnv(edgePort, origin.url, [QUEUE_ROOM, SMALL_ROOM, BIG_ROOM]),
      readyPath: '/_anteroom/health',
      profileDir,
    })
    for (const room of [QUEUE_ROOM.id, SMALL_ROOM.id, BIG_ROOM.id]) await holdTheSlot(redis, room)

    const now = Date.now()
    const lineVisitors = visitorIds(VISITORS)
    const lineCookies = await queueCookies(
      QUEUE_ROOM.id,
      lineVisitors,
      lineVisitors.map((_, i) => now - VISITORS - 1000 + i),
      now + 30 * DAY_MS,
    )
    const edgePids = { edge: queueEdge.pid, redis: redisServer.pid }
    const pollJson: Target = {
      name: 'edge poll (JSON)',
      url: `${queueEdge.url}/`,
      headers: { accept: ACCEPT_JSON },
      cookies: lineCookies,
      pids: edgePids,
    }
    // Join pass: every visitor once, so the measured requests are polls of visitors already in line.
    log(`join pass: ${VISITORS.toLocaleString('en-US')} visitors join through the edge`)
    const join = await runLoad(pollJson, { amount: VISITORS })
    const lineKeys = roomKeys(QUEUE_ROOM.id)
    const inLine = await redis.zcard(lineKeys.line)
    if (inLine !== VISITORS) throw new Error(`after the join pass ${inLine} visitors are in line, expected ${VISITORS}`)
    if (join.non2xx > 0) throw new Error(`join pass: ${join.non2xx} non-2xx responses ${JSON.stringify(join.statuses)}`)
    const sample = await expectQueued(`${queueEdge.url}/`, lineCookies[VISITORS - 1] as string, VISITORS)
    if (sample.position !== VISITORS) throw new Error(`the last visitor should be at position ${VISITORS}: ${JSON.stringify(sample)}`)

    const helloTarget: Target = {
      name: 'hello',
      url: `${hello.url}/`,
      headers: { accept: ACCEPT_JSON },
      cookies: lineCookies,
      pids: { hello: hello.pid },
    }
    const pollTarget: Target = { ...pollJson, countRedis: true }
    const pollHtml: Target = {
      name: 'edge poll (HTML page)',
      url: `${queueEdge.url}/`,
      headers: { accept: ACCEPT_HTML },
      cookies: lineCookies,
      pids: edgePids,
    }
    const m1 = await compare([helloTarget, pollTarget, pollHtml], { warmupSeconds: WARMUP_SECONDS, segmentSeconds: SEGMENT_SECONDS, redis })
    const helloAgg = m1.get(helloTarget.name) as Aggregate
    const pollAgg = m1.get(pollTarget.name) as Aggregate
    const htmlAgg = m1.get(pollHtml.name) as Aggregate
    if ((await redis.zcard(lineKeys.line)) !== VISITORS) warnings.push('the line changed size during the poll measurement')

    log('MONITOR sample: sequential polls')
    const pollMonitor = await monitorSample(redis, async (i) => {
      await get(`${queueEdge.url}/`, { accept: ACCEPT_JSON, cookie: lineCookies[i] as string })
    })

    // --- 3. 1,000,000 waiting vs 1,000 waiting ---------------------------------------------------
    log(
      `filling ${SMALL_ROOM.id} with ${SMALL_LINE.toLocaleString('en-US')} and ${BIG_ROOM.id} with ${BIG_LINE.toLocaleString('en-US')} visitors`,
    )
    const fillStarted = Date.now()
    const far = Date.now() + 30 * DAY_MS
    const smallCookies = await fillLine(redis, SMALL_ROOM.id, SMALL_LINE, SMALL_LINE, far)
    const bigCookies = await fillLine(redis, BIG_ROOM.id, BIG_LINE, BIG_TOKENS, far)
    log(`filled in ${((Date.now() - fillStarted) / 1000).toFixed(1)} s`)
    await expectQueued(`${queueEdge.url}/k1`, smallCookies[0] as string, SMALL_LINE)
    await expectQueued(`${queueEdge.url}/m1`, bigCookies[0] as string, BIG_LINE)
    const smallTarget: Target = {
      name: `edge poll, ${SMALL_LINE.toLocaleString('en-US')} waiting`,
      url: `${queueEdge.url}/k1`,
      headers: { accept: ACCEPT_JSON },
      cookies: smallCookies,
      pids: edgePids,
    }
    const bigTarget: Target = {
      name: `edge poll, ${BIG_LINE.toLocaleString('en-US')} waiting`,
      url: `${queueEdge.url}/m1`,
      headers: { accept: ACCEPT_JSON },
      cookies: bigCookies,
      pids: edgePids,
    }
    const m3 = await compare([smallTarget, bigTarget], { warmupSeconds: WARMUP_SECONDS, segmentSeconds: SEGMENT_SECONDS })
    const smallAgg = m3.get(smallTarget.name) as Aggregate
    const bigAgg = m3.get(bigTarget.name) as Aggregate
    const [smallAfter, bigAfter] = await Promise.all([redis.zcard(roomKeys(SMALL_ROOM.id).line), redis.zcard(roomKeys(BIG_ROOM.id).line)])
    if (smallAfter !== SMALL_LINE || bigAfter !== BIG_LINE) warnings.push(`lines changed during measurement 3: ${smallAfter}, ${bigAfter}`)

    await queueEdge.stop()
    await hello.stop()
    await redis.flushall()

    // --- 2. Admitted, proxied requests: edge vs bare proxy vs the origin directly ------------------
    const proxy = await startServer('bare proxy', 'bench/proxy.ts', { BENCH_ORIGIN: origin.url })
    const openPort = await freePort()
    const openEdge = await startChild({
      name: 'edge (open room)',
      script: 'src/entry/node.ts',
      port: openPort,
      env: edgeEnv(openPort, origin.url, [OPEN_ROOM]),
      readyPath: '/_anteroom/health',
      profileDir,
    })
    const first = await get(`${openEdge.url}/`, { accept: ACCEPT_JSON })
    const admissionPrefix = `${admissionCookieName(OPEN_ROOM.id)}=`
    const admission = first.setCookies.find((c) => c.startsWith(admissionPrefix))?.split(';')[0]
    if (admission === undefined || parseJson(first.text).state !== 'admitted') {
      throw new Error(`the first poll in ${OPEN_ROOM.id} did not admit: ${first.status} ${first.text} ${first.setCookies.join(' | ')}`)
    }
    const through = await get(`${openEdge.url}/`, { cookie: admission })
    const direct = await get(`${origin.url}/`, { cookie: admission })
    if (through.status !== 200 || through.text !== direct.text)
      throw new Error(`admitted request not proxied: ${through.status} ${through.text}`)
    const admittedHeaders = { cookie: admission }
    const originTarget: Target = { name: 'origin direct', url: `${origin.url}/`, headers: admittedHeaders, pids: { origin: origin.pid } }
    const proxyTarget: Target = {
      name: 'bare proxy',
      url: `${proxy.url}/`,
      headers: admittedHeaders,
      pids: { proxy: proxy.pid, origin: origin.pid },
    }
    const edgeTarget: Target = {
      name: 'edge, admitted',
      url: `${openEdge.url}/`,
      headers: admittedHeaders,
      countRedis: true,
      pids: { edge: openEdge.pid, origin: origin.pid, redis: redisServer.pid },
    }
    const m2 = await compare([originTarget, proxyTarget, edgeTarget], {
      warmupSeconds: WARMUP_SECONDS,
      segmentSeconds: SEGMENT_SECONDS,
      redis,
    })
    const originAgg = m2.get(originTarget.name) as Aggregate
    const proxyAgg = m2.get(proxyTarget.name) as Aggregate
    const admittedAgg = m2.get(edgeTarget.name) as Aggregate

    log('MONITOR sample: sequential admitted requests')
    const admittedMonitor = await monitorSample(redis, async () => {
      await get(`${openEdge.url}/`, admittedHeaders)
    })

    await openEdge.stop()
    await proxy.stop()
    await origin.stop()

    // --- 5. Redis memory per waiting visitor -------------------------------------------------------
    log(`memory: ${MEMORY_VISITORS.toLocaleString('en-US')} visitors join through the poll script`)
    await redis.flushall()
    const memRoom = parseRoomSettings({ ...QUEUE_ROOM, id: 'mem' })
    const limits = admissionLimits(memRoom)
    const storeClient = new Redis(redisServer.url)
    const store = new RedisQueueStore(storeClient, luaScripts())
    // Load the script and let Lua allocate what it needs, in a scratch room, before the baseline.
    await store.poll({ room: 'scratch', visitor: newVisitorId(), limits })
    await redis.del(...Object.values(roomKeys('scratch')))
    await holdTheSlot(redis, memRoom.id)
    await sleep(200)
    const memBefore = await memoryInfo(redis)
    const BATCH = 1000
    let queued = 0
    for (let s = 0; s < MEMORY_VISITORS; s += BATCH) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(BATCH, MEMORY_VISITORS - s) }, () =>
          store.poll({ room: memRoom.id, visitor: newVisitorId(), limits }),
        ),
      )
      queued += batch.filter((r) => r.state === 'queued').length
    }
    await store.close()
    await sleep(300)
    const memAfter = await memoryInfo(redis)
    const memKeys = roomKeys(memRoom.id)
    const seenKeys = await redis.keys(`${memKeys.seenPrefix}*`)
    const keyUsage = async (key: string) => Number(await redis?.call('MEMORY', 'USAGE', key, 'SAMPLES', '0'))
    let memSeen = 0
    let seenBytes = 0
    for (const key of seenKeys) {
      memSeen += await redis.hlen(key)
      seenBytes += await keyUsage(key)
    }
    const memLine = await redis.zcard(memKeys.line)
    if (queued !== MEMORY_VISITORS || memLine !== MEMORY_VISITORS || memSeen !== MEMORY_VISITORS) {
      throw new Error(`memory: expected ${MEMORY_VISITORS} queued, got ${queued} queued, ${memLine} in line, ${memSeen} seen`)
    }
    const lineBytes = await keyUsage(memKeys.line)
    const encoding = await redis.call('OBJECT', 'ENCODING', memKeys.line)
    const usedDelta = (memAfter.used_memory as number) - (memBefore.used_memory as number)
    const bytesPerVisitor = usedDelta / MEMORY_VISITORS
    notes.push(
      `memory: used_memory +${fmtInt(usedDelta)} B for ${fmtInt(MEMORY_VISITORS)} visitors; MEMORY USAGE line ${fmtInt(lineBytes)} B ` +
        `(${(lineBytes / MEMORY_VISITORS).toFixed(0)} B/member), seen buckets ${fmtInt(seenBytes)} B in ${seenKeys.length} hashes (${(seenBytes / MEMORY_VISITORS).toFixed(0)} B/visitor), ` +
        `encoding ${String(encoding)}; used_memory_dataset +${fmtInt((memAfter.used_memory_dataset ?? 0) - (memBefore.used_memory_dataset ?? 0))} B`,
    )

    // --- 4. Redis commands per request (from the measured segments of 1 and 2) -------------------
    const pollCount = classify(pollAgg.redis ?? new Map(), scriptCmds)
    const admittedCount = classify(admittedAgg.redis ?? new Map(), scriptCmds)
    // Per request sent: the requests still in flight when a segment stopped reached the edge and Redis too.
    const pollPer = perRequest(pollCount, pollAgg.sent)
    const admittedPer = perRequest(admittedCount, admittedAgg.sent)
    const pollMonitorClient = Object.entries(pollMonitor.clientCommands)
      .filter(([c]) => c !== 'hgetall')
      .reduce((s, [, n]) => s + n, 0)
    const admittedMonitorClient = Object.entries(admittedMonitor.clientCommands)
      .filter(([c]) => c !== 'hgetall')
      .reduce((s, [, n]) => s + n, 0)
    notes.push(
      `commands per poll: ${fmtInt(pollCount.scripts)} script calls + ${fmtInt(pollCount.plain)} plain + ${fmtInt(pollCount.settingsReload)} HGETALL ` +
        `over ${fmtInt(pollAgg.sent)} polls sent (${fmtInt(pollAgg.responses)} answered within the segments); Redis ran ${fmtInt(pollCount.insideScripts)} commands inside the scripts ` +
        `(${(pollCount.insideScripts / Math.max(1, pollCount.scripts)).toFixed(1)} per call, not round trips). ` +
        `MONITOR sample of ${MONITOR_SAMPLE} sequential polls: client commands ${JSON.stringify(pollMonitor.clientCommands)} ` +
        `(${(pollMonitorClient / MONITOR_SAMPLE).toFixed(3)} per poll without HGETALL), ${pollMonitor.insideScripts} inside scripts.`,
    )
    notes.push(
      `commands per admitted request: ${fmtInt(admittedPer.clientCalls)} client calls + ${fmtInt(admittedCount.settingsReload)} HGETALL over ` +
        `${fmtInt(admittedAgg.sent)} requests sent. MONITOR sample of ${MONITOR_SAMPLE}: ${JSON.stringify(admittedMonitor.clientCommands)} ` +
        `(${(admittedMonitorClient / MONITOR_SAMPLE).toFixed(3)} per request without HGETALL).`,
    )
    if (pollMonitorClient !== MONITOR_SAMPLE) warnings.push(`MONITOR saw ${pollMonitorClient} client commands for ${MONITOR_SAMPLE} polls`)
    if (admittedMonitorClient !== 0)
      warnings.push(`MONITOR saw ${admittedMonitorClient} client commands for ${MONITOR_SAMPLE} admitted requests`)

    const allRuns = [helloAgg, pollAgg, htmlAgg, smallAgg, bigAgg, originAgg, proxyAgg, admittedAgg]
    for (const a of allRuns) checkClean(a)
    notes.push(
      `CPU per run (cores busy; µs per response), on ${cpus().length} cores:\n${allRuns
        .map(
          (a) =>
            `  ${a.name.padEnd(30)} ${Object.entries(a.cpu)
              .map(([k, v]) => `${k} ${v.cores.toFixed(2)} (${v.usPerRequest.toFixed(0)} µs)`)
              .join(', ')}`,
        )
        .join('\n')}`,
    )

    // --- The table --------------------------------------------------------------------------------
    rows.push(
      ratioRow('poll_json_vs_hello', '1. queued poll, JSON', pollAgg.rps, helloAgg.rps, 'hello', fmtRps, { op: '>=', value: 0.5 }),
      ratioRow('poll_html_vs_hello', '1. queued poll, HTML page (info)', htmlAgg.rps, helloAgg.rps, 'hello', fmtRps, 'info'),
      ratioRow('admitted_vs_bare_proxy', '2. admitted request via edge', admittedAgg.rps, proxyAgg.rps, 'bare proxy', fmtRps, {
        op: '>=',
        value: 0.85,
      }),
      ratioRow(
        'admitted_vs_origin',
        '2. admitted request via edge (info)',
        admittedAgg.rps,
        originAgg.rps,
        'origin',
        fmtRps,
        'info, ~0.2 expected',
      ),
      ratioRow('poll_1m_vs_1k_rps', '3. poll throughput, 1M waiting', bigAgg.rps, smallAgg.rps, '1k waiting', fmtRps, {
        op: '>=',
        value: 0.85,
      }),
      ratioRow('poll_1m_vs_1k_p99', '3. poll p99 latency, 1M waiting', bigAgg.latencyMs.p99, smallAgg.latencyMs.p99, '1k waiting', fmtMs, {
        op: '<=',
        value: 1.2,
      }),
      {
        id: 'redis_calls_per_poll',
        // Concurrent polls of a room share one EVALSHA, so under load a poll costs less than one call;
        // the MONITOR sample below shows exactly one call per poll when polls come one at a time.
        measurement: '4. Redis calls per poll (under load, batched)',
        value: pollPer.withoutSettingsReload.toFixed(4),
        baseline: '-',
        ratio: '-',
        target: '<= 1',
        met: pollPer.withoutSettingsReload <= 1.005,
      },
      {
        id: 'redis_calls_per_poll_with_reload',
        measurement: '4. Redis calls per poll, with settings reload',
        value: pollPer.withSettingsReload.toFixed(4),
        baseline: '-',
        ratio: '-',
        target: 'info',
        met: null,
      },
      {
        id: 'redis_calls_per_admitted',
        measurement: '4. Redis calls per admitted request',
        value: admittedPer.withoutSettingsReload.toFixed(4),
        baseline: '-',
        ratio: '-',
        target: '= 0',
        met: admittedPer.clientCalls === 0,
      },
      {
        id: 'redis_calls_per_admitted_with_reload',
        measurement: '4. Redis calls per admitted request, with settings reload',
        value: admittedPer.withSettingsReload.toFixed(5),
        baseline: '-',
        ratio: '-',
        target: 'info',
        met: null,
      },
      {
        id: 'redis_bytes_per_waiting_visitor',
        measurement: '5. Redis memory per waiting visitor',
        value: `${bytesPerVisitor.toFixed(0)} B`,
        baseline: '-',
        ratio: '-',
        target: '<= 200 B',
        met: bytesPerVisitor <= 200,
      },
    )

    const summary = (a: Aggregate) => ({ ...a, redis: a.redis ? Object.fromEntries(a.redis) : undefined })
    Object.assign(results, {
      machine: { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model, redis: redisVersion },
      settings: {
        connections: CONNECTIONS,
        segmentSeconds: SEGMENT_SECONDS,
        segmentsPerTarget: 2,
        warmupSeconds: WARMUP_SECONDS,
        order: 'palindromic (A B C C B A) per comparison',
        profile: PROFILE,
      },
      runs: Object.fromEntries(allRuns.map((a) => [a.name, summary(a)])),
      joinPass: { responses: join.responses, seconds: join.seconds, statuses: join.statuses },
      redisCommands: {
        scriptCommands: [...scriptCmds].sort(),
        poll: { ...pollCount, ...pollPer, requests: pollAgg.sent },
        admitted: { ...admittedCount, ...admittedPer, requests: admittedAgg.sent },
        monitor: { poll: pollMonitor, admitted: admittedMonitor },
      },
      memory: {
        visitors: MEMORY_VISITORS,
        usedMemoryDelta: usedDelta,
        bytesPerVisitor,
        lineKeyBytes: lineBytes,
        seenKeyBytes: seenBytes,
        encoding,
        before: memBefore,
        after: memAfter,
      },
    })
  } finally {
    redis?.disconnect()
    await stopAllChildren()
    if (redisServer) await redisServer.stop()
  }

  // --- 6 and 7. The booking origin on PostgreSQL (bench/booking.ts: its own server, stopped there) ---
  const booking = await runBooking({ segmentSeconds: SEGMENT_SECONDS })
  rows.push(...booking.rows)
  notes.push(...booking.notes)
  warnings.push(...booking.warnings)
  results.booking = booking.results

  // --- 8. The edge as a Worker in workerd (bench/worker.ts: its own Redis and Miniflare instances) ---
  const worker = await runWorkerBench()
  rows.push(...worker.rows)
  results.worker = worker.results

  printTable(rows)
  for (const n of notes) process.stdout.write(`\nnote: ${n}`)
  for (const w of warnings) process.stdout.write(`\nWARNING: ${w}`)
  const met = rows.filter((r) => r.met === true).length
  const judged = rows.filter((r) => r.met !== null).length
  const seconds = (Date.now() - started) / 1000
  process.stdout.write(
    `\n\ntargets met: ${met} of ${judged}. Ratios from one run on this machine; expect ±10-15% noise. Took ${seconds.toFixed(0)} s.\n`,
  )
  const file = join(OUT_DIR, 'results.json')
  const round = (_key: string, v: unknown) => (typeof v === 'number' && !Number.isInteger(v) ? Number(v.toFixed(3)) : v)
  writeFileSync(
    file,
    `${JSON.stringify({ date: new Date().toISOString(), durationSeconds: seconds, rows, notes, warnings, ...results }, round, 2)}\n`,
  )
  // bench/** is in biome's scope (bench/out is only git-ignored), so the file gets biome's own layout
  // and `biome check` stays clean after a run.
  spawnSync(join(ROOT, 'node_modules', '.bin', 'biome'), ['format', '--write', file], { cwd: ROOT, stdio: 'ignore' })
  process.stdout.write(`results: ${file}\n`)
  return warnings.some((w) => w.includes('non-2xx')) || !booking.ok ? 1 : 0
}

let stopping = false
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    if (stopping) return
    stopping = true
    log(`${signal}: stopping the servers`)
    // The booking bench's PostgreSQL first: a redis-server stopped before makes redisServer.stop() throw.
    void stopBookingServer()
      .catch(() => {})
      .then(() => stopAllChildren())
      .then(() => redisServer?.stop())
      .finally(() => process.exit(130))
  })
}

main().then(
  (code) => process.exit(code),
  async (err) => {
    process.stderr.write(`bench failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    await stopBookingServer().catch(() => {})
    await stopAllChildren()
    await redisServer?.stop()
    process.exit(1)
  },
)
