// `npm run bench:worker` (also the last part of `npm run bench`): the edge Worker in workerd (Miniflare)
// against a hello-world Worker in the same workerd, as ratios, for each way the Worker reaches Redis:
// StoreRelay Durable Objects (the default) and a client per call. Also the bundle size.
// BENCH_RELAY_SHARDS sets ANTEROOM_RELAY_SHARDS (4). Measured here: 1 shard and 4 gave the same ratio
// (0.51, 0.51; all objects share one workerd process locally), with 0.06 vs 0.24 Redis calls per poll.
import { randomBytes } from 'node:crypto'
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { Redis } from 'ioredis'
import { startRedis } from '../scripts/lib/redis-server.js'
import { buildWorker, startWorker, type WorkerInstance } from '../scripts/lib/worker.js'
import { nodeMac } from '../src/adapters/node/mac.js'
import { roomKeys } from '../src/adapters/redis/keys.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { QueueTokens } from '../src/core/queue-token.js'
import { queueCookieName } from '../src/http/cookies.js'
import { type Aggregate, compare, log, ROOT, type Row, ratioRow, runLoad, type Target } from './lib.js'

const SECRET = 'bench-queue-secret-0123456789abcdefghijklmnopqrstuvwxyz'
const VISITORS = Number(process.env.BENCH_WORKER_VISITORS ?? 5000)
const SEGMENT_SECONDS = Number(process.env.BENCH_SEGMENT_SECONDS ?? 5)
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 2)
const ROOM = { id: 'q', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 60, sessionDurationSeconds: 3600, refreshSeconds: 30 }
const OUT = join(ROOT, 'bench/out')

function bundleSize(dir: string): { files: number; bytes: number; gzipBytes: number } {
  let bytes = 0
  let gzipBytes = 0
  let files = 0
  for (const f of readdirSync(dir)) {
    if (f.endsWith('.map') || f === 'README.md') continue
    const path = join(dir, f)
    bytes += statSync(path).size
    gzipBytes += gzipSync(readFileSync(path)).length
    files++
  }
  return { files, bytes, gzipBytes }
}

const kib = (n: number) => `${(n / 1024).toFixed(1)} KiB`

export async function runWorkerBench(): Promise<{ rows: Row[]; results: Record<string, unknown> }> {
  const rows: Row[] = []
  const results: Record<string, unknown> = {}
  const redisServer = await startRedis()
  const redis = new Redis(redisServer.url)
  const workers: WorkerInstance[] = []
  try {
    log('worker: building the edge and the hello-world Worker with wrangler')
    const edgeScript = await buildWorker('worker/index.ts', join(ROOT, '.tmp/bench-worker/edge'))
    const helloScript = await buildWorker(
      'bench/workers/hello.ts',
      join(ROOT, '.tmp/bench-worker/hello'),
      'bench/workers/hello.wrangler.toml',
    )
    const size = bundleSize(join(ROOT, '.tmp/bench-worker/edge'))
    results.bundle = size
    log(`worker: edge bundle ${kib(size.bytes)} (${kib(size.gzipBytes)} gzip) in ${size.files} modules`)

    const key = await generateSigningJwk('bench')
    const vars = (mode: string) => ({
      ANTEROOM_REDIS_URL: redisServer.url,
      ANTEROOM_ORIGIN: 'http://127.0.0.1:9',
      ANTEROOM_QUEUE_SECRET: SECRET,
      ANTEROOM_SIGNING_KEYS: JSON.stringify([key]),
      ANTEROOM_ROOMS: JSON.stringify([ROOM]),
      ANTEROOM_HISTORY_SAMPLE_SECONDS: '0',
      ANTEROOM_WORKER_REDIS: mode,
      ANTEROOM_RELAY_SHARDS: process.env.BENCH_RELAY_SHARDS ?? '4',
    })
    const hello = await startWorker({ script: helloScript, vars: {} })
    const relay = await startWorker({ script: edgeScript, vars: vars('relay') })
    const perCall = await startWorker({ script: edgeScript, vars: vars('per-call') })
    workers.push(hello, relay, perCall)
    await redis.zadd(roomKeys(ROOM.id).active, Date.now() + 86_400_000, 'bench-slot-holder')

    // Queue cookies for visitors already in line: the measured requests are polls, not joins.
    const tokens = new QueueTokens(nodeMac(SECRET))
    const now = Date.now()
    const cookies: string[] = []
    for (let i = 0; i < VISITORS; i++) {
      const visitor = randomBytes(12).toString('base64url')
      const token = await tokens.sign({ room: ROOM.id, visitor, arrival: now - VISITORS + i, expires: now + 86_400_000 })
      cookies.push(`${queueCookieName(ROOM.id)}=${token}`)
    }
    const target = (name: string, w: WorkerInstance, countRedis = false): Target => ({
      name,
      url: `${w.url}/`,
      headers: { accept: 'application/json' },
      cookies,
      countRedis,
    })
    const helloT = target('hello Worker', hello)
    const relayT = target('edge Worker poll, StoreRelay', relay, true)
    const perCallT = target('edge Worker poll, client per call', perCall, true)
    log(`worker: ${VISITORS} visitors join through the relay Worker`)
    const joined = await runLoad(relayT, { amount: VISITORS })
    const inLine = await redis.zcard(roomKeys(ROOM.id).line)
    if (inLine !== VISITORS || joined.non2xx > 0) throw new Error(`worker join pass: ${inLine} in line, ${joined.non2xx} non-2xx`)
    const check = await fetch(`${perCall.url}/`, { headers: { accept: 'application/json', cookie: cookies[VISITORS - 1] as string } })
    const body = (await check.json()) as { state: string; position: number }
    if (body.state !== 'queued' || body.position !== VISITORS) throw new Error(`per-call Worker answered ${JSON.stringify(body)}`)

    const m = await compare([helloT, relayT, perCallT], { warmupSeconds: WARMUP_SECONDS, segmentSeconds: SEGMENT_SECONDS, redis })
    const h = m.get(helloT.name) as Aggregate
    const r = m.get(relayT.name) as Aggregate
    const p = m.get(perCallT.name) as Aggregate
    for (const a of [h, r, p]) if (a.non2xx > 0) throw new Error(`${a.name}: ${a.non2xx} non-2xx responses ${JSON.stringify(a.statuses)}`)
    const calls = (a: Aggregate) => {
      let n = 0
      for (const [cmd, count] of a.redis ?? new Map<string, number>()) if (cmd === 'evalsha' || cmd === 'eval') n += count
      return n / Math.max(1, a.sent)
    }
    results.redisCallsPerPoll = { relay: calls(r), perCall: calls(p) }
    results.throughput = {
      hello: h.rps,
      relay: r.rps,
      perCall: p.rps,
      latencyMs: { hello: h.latencyMs, relay: r.latencyMs, perCall: p.latencyMs },
    }
    const fmt = (n: number) => `${Math.round(n).toLocaleString('en-US')} req/s`
    rows.push(
      ratioRow('worker_poll_relay_vs_hello', '8. Worker: queued poll, StoreRelay (chosen)', r.rps, h.rps, 'hello Worker', fmt, {
        op: '>=',
        value: 0.5,
      }),
      ratioRow('worker_poll_per_call_vs_hello', '8. Worker: queued poll, client per call', p.rps, h.rps, 'hello Worker', fmt, 'info'),
      {
        id: 'worker_redis_calls_per_poll',
        measurement: '8. Worker: Redis script calls per poll, StoreRelay (batched)',
        value: calls(r).toFixed(3),
        baseline: `per call: ${calls(p).toFixed(3)}`,
        ratio: '',
        target: '<= 1',
        met: calls(r) <= 1.005,
      },
      {
        id: 'worker_bundle',
        measurement: '8. Worker bundle (wrangler --dry-run)',
        value: `${kib(size.bytes)} (${kib(size.gzipBytes)} gzip)`,
        baseline: '',
        ratio: '',
        target: 'info (limit 3 MiB gzip free, 10 MiB paid)',
        met: null,
      },
    )
  } finally {
    for (const w of workers) await w.close().catch(() => {})
    redis.disconnect()
    await redisServer.stop()
  }
  return { rows, results }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const { rows, results } = await runWorkerBench()
  mkdirSync(OUT, { recursive: true })
  writeFileSync(join(OUT, 'worker.json'), JSON.stringify({ rows, results }, null, 2))
  console.table(rows.map((r) => ({ measurement: r.measurement, value: r.value, baseline: r.baseline, ratio: r.ratio, target: r.target })))
}
