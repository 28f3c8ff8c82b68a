// Measurement 8: the edge as a Cloudflare Worker in workerd (Miniflare), for each way the Worker
// reaches Redis: StoreRelay Durable Objects (the default) and a client per call. Also the bundle size.
//   Baseline: a hello-world Worker (bench/workers/hello.ts) in the same workerd, sent the same polls.
//   Target: a queued poll through the relay at least half the hello-world's rate, at most one Redis
//   script call per poll; the client per call and the bundle size for information.
// BENCH_WORKER_VISITORS (5000) visitors; BENCH_RELAY_SHARDS sets ANTEROOM_RELAY_SHARDS (4). Measured
// here: 1 shard and 4 gave the same ratio (0.51, 0.51; all objects share one workerd process locally),
// with 0.06 vs 0.24 Redis calls per poll.
import { readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { Redis } from 'ioredis'
import { startRedis } from '../../scripts/lib/redis-server.js'
import { buildWorker, startWorker, type WorkerInstance } from '../../scripts/lib/worker.js'
import { roomKeys } from '../../src/adapters/redis/keys.js'
import { generateSigningJwk } from '../../src/core/admission-token.js'
import { openRoom } from '../edge.js'
import {
  type Aggregate,
  compare,
  fmtRps,
  log,
  type Measured,
  pidListeningOn,
  ROOT,
  type Row,
  ratioRow,
  runLoad,
  type Target,
} from '../lib.js'
import { BENCH_SECRET, DAY_MS, holdTheSlot, queueCookies, visitorIds } from '../line.js'

const TARGET = { op: '>=', value: 0.5 } as const
const VISITORS = Number(process.env.BENCH_WORKER_VISITORS ?? 5000)
const ROOM = { id: 'q', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 60, sessionDurationSeconds: 3600, refreshSeconds: 30 }

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

export async function measureWorker(): Promise<Measured> {
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
      ANTEROOM_QUEUE_SECRET: BENCH_SECRET,
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
    await holdTheSlot(redis, ROOM.id)
    await openRoom(`${relay.url}/`)

    // Queue cookies for visitors already in line: the measured requests are polls, not joins.
    const now = Date.now()
    const visitors = visitorIds(VISITORS)
    const cookies = await queueCookies(
      ROOM.id,
      visitors,
      // Arrivals in µs, a ms apart, ending a second ago: ahead of the one who opened the room.
      visitors.map((_, i) => (now - VISITORS - 1000 + i) * 1000),
      now + DAY_MS,
    )
    // Each Miniflare instance runs its own workerd: the server whose CPU is read, found by its port.
    const workerd = (w: WorkerInstance): Record<string, number> => {
      const pid = pidListeningOn(Number(new URL(w.url).port))
      return pid === undefined ? {} : { workerd: pid, redis: redisServer.pid }
    }
    const target = (name: string, w: WorkerInstance, countRedis = false): Target => ({
      name,
      url: `${w.url}/`,
      headers: { accept: 'application/json' },
      cookies,
      countRedis,
      pids: workerd(w),
    })
    const helloT = target('hello Worker', hello)
    const relayT = target('edge Worker poll, StoreRelay', relay, true)
    const perCallT = target('edge Worker poll, client per call', perCall, true)
    log(`worker: ${VISITORS} visitors join through the relay Worker`)
    const joined = await runLoad(relayT, { amount: VISITORS })
    // The visitors with cookies, whose tokens put them ahead of the one who opened the room.
    const inLine = await redis.zcard(roomKeys(ROOM.id).line)
    if (inLine !== VISITORS + 1 || joined.non2xx > 0)
      throw new Error(
        `worker join pass: ${inLine} in line, ${joined.non2xx} non-2xx, ${joined.errors} errors (${joined.responses} answered)`,
      )
    const check = await fetch(`${perCall.url}/`, { headers: { accept: 'application/json', cookie: cookies[VISITORS - 1] as string } })
    const body = (await check.json()) as { state: string; position: number }
    if (body.state !== 'queued' || body.position !== VISITORS) throw new Error(`per-call Worker answered ${JSON.stringify(body)}`)

    const m = await compare([helloT, relayT, perCallT], { redis })
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
    rows.push(
      ratioRow('worker_poll_relay_vs_hello', '8. Worker: queued poll, StoreRelay (chosen)', r.rps, h.rps, 'hello Worker', fmtRps, TARGET, {
        value: r,
        baseline: h,
      }),
      ratioRow('worker_poll_per_call_vs_hello', '8. Worker: queued poll, client per call', p.rps, h.rps, 'hello Worker', fmtRps, 'info', {
        value: p,
        baseline: h,
      }),
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
  return { rows, notes: [], warnings: [], results }
}
