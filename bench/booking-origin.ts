// The booking origin of measurement 7 (bench/measure/crowd.ts), in its own processes: createBookingApp
// over PostgreSQL (a pool of POOL) with the claim gate on Redis, served by @hono/node-server on
// 127.0.0.1:BENCH_PORT, as src/entry/booking.ts builds it, less the demo events and the metrics; in
// BENCH_ORIGIN_PROCESSES workers (default: one a core) forked by src/entry/processes.ts, as
// ANTEROOM_PROCESSES forks `npm start`'s.
// Settings (environment): BENCH_PORT, BENCH_ORIGIN_PROCESSES, BENCH_DATABASE_URL, BENCH_REDIS_URL (unset: no claim gate,
// PostgreSQL alone), BENCH_LANE=1 (with BENCH_REDIS_URL: every event's claims go through its ordered
// lane, src/booking/lane, and /bench/ready/:event starts the event's allocator in this process), BENCH_JWKS (the edge's public key set, JSON: the same keys the edge's
// /.well-known/jwks.json serves, without a fetch), BENCH_ISSUER, BENCH_AUDIENCE.
//
// Three bench-only routes, outside the origin's app:
//   GET  /bench/health            ready
//   GET  /bench/statements        {"statements": n, "byName": {...}, "charges": n}: every statement the
//                                 origin's claim path sent so far, by SQL file (a counter around its Db;
//                                 the reconciler's reads are not counted), and the test provider's charges,
//                                 of all the workers (the one asked collects them through the primary)
//   POST /bench/ready/:event      the reconciler's run (the gate built for a new event, as at start)
//                                 and the event's seat layout loaded into the gate's cache (of every
//                                 worker, through the primary); with the lane, the event's allocator
//                                 started in the allocators' worker (its writes counted, its reads not)
// The reconciler runs only when asked: on its timer it would add its CPU to the doomed claims' figures.
import cluster from 'node:cluster'
import { availableParallelism } from 'node:os'
import { serve } from '@hono/node-server'
import { createLocalJWKSet, type JSONWebKeySet } from 'jose'
import { MemoryClaimGate } from '../src/adapters/memory/claim-gate.js'
import { nodeSignatures } from '../src/adapters/node/es256.js'
import { TestPaymentProvider } from '../src/adapters/payments/test-provider.js'
import type { Db, Sql } from '../src/adapters/postgres/db.js'
import { PostgresLaneStore } from '../src/adapters/postgres/lane-store.js'
import { postgresDb } from '../src/adapters/postgres/postgres-js.js'
import { PostgresSeatStore } from '../src/adapters/postgres/seat-store.js'
import { RedisClaimGate } from '../src/adapters/redis/claim-gate.js'
import { RedisClaimLane } from '../src/adapters/redis/claim-lane.js'
import { connectRedis, whenReady } from '../src/adapters/redis/connect.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { createBookingApp } from '../src/booking/app.js'
import { BookingGate } from '../src/booking/gate.js'
import { Allocator } from '../src/booking/lane/allocator.js'
import { BookingLane } from '../src/booking/lane/client.js'
import { Reconciler } from '../src/booking/reconciler.js'
import { isWorker, runPrimary, WORKER_ENV } from '../src/entry/processes.js'
import { POOL, statementName } from './postgres.js'

const env = (name: string): string => {
  const v = process.env[name]
  if (v === undefined || v === '') throw new Error(`${name} is not set`)
  return v
}

/** A Db that counts the statements sent through it, by name (a map's add a statement, nothing else). */
function countedDb(db: Db, count: Map<string, number>): Db {
  const wrap = (sql: Sql): Sql => ({
    query: (text, params) => {
      const name = statementName(text)
      count.set(name, (count.get(name) ?? 0) + 1)
      return sql.query(text, params)
    },
  })
  return { ...wrap(db), transaction: (fn) => db.transaction((tx) => fn(wrap(tx))), close: () => db.close() }
}

// The primary forks the workers and passes the bench routes' questions between them. With the lane, one
// more worker serves nothing and runs the allocators, as `npm run lane` would beside the origin: in an
// origin worker, the allocator's reads and batches waited behind the rush's HTTP.
const PROCESSES = Number(process.env.BENCH_ORIGIN_PROCESSES ?? availableParallelism())
const LANE = process.env.BENCH_LANE === '1'
const ALLOCATOR_HOST = LANE && Number(process.env[WORKER_ENV]) === PROCESSES
/** The primary's workers: the HTTP ones and, with the lane, the allocators'. */
const WORKERS = PROCESSES + (LANE ? 1 : 0)
if (!isWorker()) {
  type Message = { up?: boolean; ask?: string; arg?: string; askId?: number; id?: number; reply?: unknown }
  let asked = 0
  const open = new Map<number, { from: number; askId: number; left: number; replies: unknown[] }>()
  // A worker hears questions once it says it is up (a message sent before would be lost, and the
  // question never answered): until every worker is, questions wait here.
  const up = new Set<number>()
  const held: [from: number, msg: Message][] = []
  const ask = (from: number, msg: Message) => {
    // A question for every worker, answered to the one that asked once all have.
    const id = ++asked
    const workers = Object.values(cluster.workers ?? {}).filter((w) => w !== undefined)
    open.set(id, { from, askId: msg.askId ?? 0, left: workers.length, replies: [] })
    for (const w of workers) w.send({ question: msg.ask, arg: msg.arg, id })
  }
  cluster.on('exit', (w) => up.delete(w.id))
  cluster.on('message', (from, msg: Message) => {
    if (msg.up === true) {
      up.add(from.id)
      if (up.size === WORKERS) for (const [f, m] of held.splice(0)) ask(f, m)
    } else if (msg.ask !== undefined) {
      if (up.size === WORKERS) ask(from.id, msg)
      else held.push([from.id, msg])
    } else if (msg.id !== undefined) {
      const o = open.get(msg.id)
      if (o === undefined) return
      o.replies.push(msg.reply)
      if (--o.left === 0) {
        open.delete(msg.id)
        cluster.workers?.[o.from]?.send({ answered: o.askId, replies: o.replies })
      }
    }
  })
  process.exit(
    await runPrimary({
      processes: WORKERS,
      log: (event, fields) => process.stderr.write(`${event} ${JSON.stringify(fields)}\n`),
    }),
  )
}

const sent = new Map<string, number>()
const pool = postgresDb(env('BENCH_DATABASE_URL'), { max: POOL })
const seats = new PostgresSeatStore(countedDb(pool, sent))
const redisUrl = process.env.BENCH_REDIS_URL
const redis = redisUrl ? connectRedis(redisUrl) : undefined
if (redis !== undefined && !(await whenReady(redis, 5000))) throw new Error(`Redis at ${redisUrl} did not answer`)
const claimGate = redis === undefined ? undefined : new RedisClaimGate(redis, luaScripts())
const gate = claimGate === undefined ? undefined : new BookingGate(claimGate, seats)
const uncounted = new PostgresSeatStore(pool)
const reconciler =
  claimGate === undefined ? undefined : new Reconciler({ gate: claimGate, store: uncounted, events: () => uncounted.eventIds() })

const claimLane = redis !== undefined && LANE ? new RedisClaimLane(redis, luaScripts()) : undefined
const lane = claimLane === undefined ? undefined : await new BookingLane({ lane: claimLane, events: () => true }).start()
const allocators = new Map<string, Allocator>()
/** The event's allocator, on a connection of its own (started once). */
async function allocate(event: string): Promise<void> {
  if (claimLane === undefined || allocators.has(event)) return
  const own = await claimLane.dedicated()
  const stock = new MemoryClaimGate()
  const batches = new PostgresLaneStore(countedDb(pool, sent))
  allocators.set(event, new Allocator({ event, lane: own.lane, store: uncounted, batches, stock }).start())
}

const payments = new TestPaymentProvider()
const app = createBookingApp({
  seats,
  payments,
  gate,
  lane,
  reconciler,
  admission: {
    jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
    issuer: env('BENCH_ISSUER'),
    audience: env('BENCH_AUDIENCE'),
    keys: createLocalJWKSet(JSON.parse(env('BENCH_JWKS')) as JSONWebKeySet),
    signatures: nodeSignatures,
  },
})

const json = (body: unknown) => new Response(JSON.stringify(body), { headers: { 'content-type': 'application/json' } })

/** What this worker answers for the bench routes' questions to every worker. */
async function answer(question: string, arg: string): Promise<unknown> {
  if (question === 'statements') return { byName: Object.fromEntries(sent), charges: payments.charges.length }
  if (ALLOCATOR_HOST) return allocate(arg)
  await gate?.prepare(arg)
  return gate?.stats ?? null
}

let asking = 0
const waiting = new Map<number, (replies: unknown[]) => void>()
process.on('message', (msg: { question?: string; arg?: string; id?: number; answered?: number; replies?: unknown[] }) => {
  if (msg.question !== undefined) void answer(msg.question, msg.arg ?? '').then((reply) => process.send?.({ id: msg.id, reply }))
  else if (msg.answered !== undefined) waiting.get(msg.answered)?.(msg.replies ?? [])
})
process.send?.({ up: true })
/** Every worker's answer (through the primary). */
function askAll(question: string, arg = ''): Promise<unknown[]> {
  const id = ++asking
  return new Promise((resolve) => {
    waiting.set(id, resolve)
    process.send?.({ ask: question, arg, askId: id })
  }).finally(() => waiting.delete(id)) as Promise<unknown[]>
}

async function benchRoute(req: Request, path: string): Promise<Response> {
  if (path === '/bench/health') return json({ ok: true })
  if (path === '/bench/statements') {
    const replies = (await askAll('statements')) as { byName: Record<string, number>; charges: number }[]
    const byName: Record<string, number> = {}
    for (const r of replies) for (const [name, n] of Object.entries(r.byName)) byName[name] = (byName[name] ?? 0) + n
    return json({
      statements: Object.values(byName).reduce((a, b) => a + b, 0),
      byName,
      charges: replies.reduce((a, r) => a + r.charges, 0),
    })
  }
  const ready = /^\/bench\/ready\/([\w.-]+)$/.exec(path)
  if (ready !== null && req.method === 'POST') {
    await reconciler?.run()
    const stats = await askAll('prepare', ready[1] as string)
    return json({ ok: true, gate: stats })
  }
  return new Response('not a bench route', { status: 404 })
}

// The allocators' worker serves nothing.
const server = ALLOCATOR_HOST
  ? undefined
  : serve({
      hostname: '127.0.0.1',
      port: Number(env('BENCH_PORT')),
      fetch: (req) => {
        // The path without parsing the URL: a bench route is rare, and the claims' path stays as it is.
        const at = req.url.indexOf('/bench/', 8)
        if (at !== -1 && req.url.indexOf('/', 8) === at) return benchRoute(req, req.url.slice(at).split('?')[0] as string)
        return app.fetch(req)
      },
    })

process.once('SIGTERM', () => {
  server?.close()
  void Promise.allSettled([pool.close()]).finally(() => {
    redis?.disconnect()
    process.exit(0)
  })
})
