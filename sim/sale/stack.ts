// The stack a sale runs against, started here on loopback: the booking origin, the edge (in this
// process or as the Worker bundle in workerd), and the Redis (or Sentinel set) it is given, if any.
import { randomBytes } from 'node:crypto'
import { rmSync } from 'node:fs'
import { resolve } from 'node:path'
import { serve } from '@hono/node-server'
import { request } from 'undici'
import { freePort } from '../../scripts/lib/free-port.js'
import { startSentinelSet } from '../../scripts/lib/redis-sentinel.js'
import { type RedisServer, startRedis } from '../../scripts/lib/redis-server.js'
import { buildWorker, startWorker } from '../../scripts/lib/worker.js'
import { MemoryClaimGate } from '../../src/adapters/memory/claim-gate.js'
import { RedisClaimGate } from '../../src/adapters/redis/claim-gate.js'
import { connectRedis } from '../../src/adapters/redis/connect.js'
import { roomKeys } from '../../src/adapters/redis/keys.js'
import { RedisQueueStore } from '../../src/adapters/redis/queue-store.js'
import { luaScripts } from '../../src/adapters/redis/scripts.js'
import { loadConfig } from '../../src/config/index.js'
import { generateSigningJwk } from '../../src/core/admission-token.js'
import { buildBooking } from '../../src/entry/booking.js'
import { buildEdge } from '../../src/entry/build.js'
import type { ClaimGate, StockCounts } from '../../src/ports/claim-gate.js'
import type { QueueStore, RoomStats } from '../../src/ports/queue-store.js'
import type { RoomLimits } from '../predict.js'
import type { BookingOutcome } from '../verdicts.js'
import { SEATS_EVENT, type SimOptions, sleep, tally } from './basics.js'

export interface Started {
  edgeUrl: string
  /** The store's own numbers, read beside the edge. */
  stats?: (room: string) => Promise<RoomStats>
  /** Slots the store reserves after a loss (its watch), when it says. */
  reserved?: (room: string) => Promise<number | undefined>
  /** The store's record of admissions since `sinceMs` (store ms, inclusive): member → ms. */
  admissions?: (room: string, sinceMs: number) => Promise<[string, number][]>
  /** A sold-out sale: the event's counts in the claim gate the edge reads. */
  stock?: (event: string) => Promise<StockCounts | undefined>
  /** ... and the edge's own view of them (its admin stats): the stock state it acts on. */
  edgeStock?: (room: string) => Promise<string | undefined>
  /** The Redis the simulator started, for its faults. */
  redis?: RedisHere
  /** What the edge logged, by event (store_unavailable, reload_stuck, ...): read before stop(). */
  edgeEvents?: () => Record<string, number>
  stop(): Promise<void>
  invariant?: () => Promise<BookingOutcome>
}

/** A Redis the simulator started here: what the edge is given, and the faults it can cause. */
export interface RedisHere {
  url: string
  /** FLUSHALL: the store forgets everything. */
  flush(): Promise<void>
  /** Kill redis-server and start it again, empty, on the same port; resolves once it answers. */
  restart(): Promise<void>
  /** Kill the primary of a Sentinel set; resolves once a replica answers as the primary. */
  failover?(): Promise<string>
  stop(): Promise<void>
}

/** A redis-server on a free port that can be restarted empty on the same port. */
async function redisHere(): Promise<RedisHere> {
  let server: RedisServer = await startRedis()
  const url = server.url
  const admin = connectRedis(url)
  await waitForRedis(() => admin.ping())
  return {
    url,
    async flush() {
      await admin.flushall()
    },
    async restart() {
      await server.stop()
      server = await startRedis([], server.port)
      await waitForRedis(() => admin.ping())
    },
    async stop() {
      admin.disconnect()
      await server.stop()
    },
  }
}

/**
 * A Sentinel set (a primary, a replica, three sentinels; down-after 1 s): the edge is given its
 * redis+sentinel:// URL and follows the failover; the fault kills the primary.
 */
async function sentinelHere(): Promise<RedisHere> {
  const set = await startSentinelSet()
  const client = connectRedis(set.url)
  try {
    await waitForRedis(() => client.ping())
  } catch (err) {
    client.disconnect()
    await set.stop()
    throw err
  }
  const unsupported = async () => {
    throw new Error('the failover sale kills the primary; it neither flushes nor restarts')
  }
  return {
    url: set.url,
    flush: unsupported,
    restart: unsupported,
    async failover() {
      const f = await set.killMaster()
      // The store is back when the simulator's own client (through the sentinels, as the edge) writes again.
      await waitForRedis(() => client.set('anteroom:sim:probe', '1'))
      return (
        `Primary on port ${f.oldPort} killed; the sentinels named ${f.newPort} after ${(f.sentinelsSwitchedMs / 1000).toFixed(2)} s, ` +
        `which answered as primary after ${(f.promotedMs / 1000).toFixed(2)} s.`
      )
    },
    async stop() {
      client.disconnect()
      await set.stop()
    },
  }
}

/** Retries `probe` every 20 ms until it answers (at most 30 s). */
async function waitForRedis(probe: () => Promise<unknown>): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await probe()
      return
    } catch (err) {
      if (i > 1500) throw err
      await sleep(20)
    }
  }
}

/** What the store says beside its stats: the slots it reserves after a loss (undefined when its watch does not say). */
async function reservedSlots(store: QueueStore, room: string): Promise<number | undefined> {
  const w = (await store.watch(room, Date.now() + 86_400_000)) as Partial<{ reserved: number; reservedUntil: number }>
  if (typeof w.reserved !== 'number' || typeof w.reservedUntil !== 'number') return undefined
  return w.reservedUntil > Date.now() ? w.reserved : 0
}

/**
 * The embedded store's admissions of the last minute, read from its state (the simulator runs it in this
 * process; there is no port for it): undefined if its shape is not what is expected.
 */
function memoryAdmissions(store: QueueStore): Started['admissions'] {
  type Scored = { readonly size: number; first(count: number): string[]; score(member: string): number | undefined }
  const rooms = (store as unknown as { rooms?: Map<string, { admissions?: Scored }> }).rooms
  if (!(rooms instanceof Map)) return undefined
  return async (room, sinceMs) => {
    const adm = rooms.get(room)?.admissions
    if (adm === undefined) return []
    const out: [string, number][] = []
    for (const m of adm.first(adm.size)) {
      const at = adm.score(m)
      if (at !== undefined && at >= sinceMs) out.push([m, at])
    }
    return out
  }
}

export async function startStack(
  o: SimOptions,
  real: RoomLimits,
  room: string,
  schedule?: { prequeueAt: string; opensAt: string },
): Promise<Started> {
  const stops: (() => Promise<void>)[] = []
  try {
    let redisUrl: string | undefined
    let here: RedisHere | undefined
    if (o.fault?.kind === 'failover') {
      if (typeof o.redis === 'string') throw new Error('the failover sale starts its own Sentinel set (no --redis URL)')
      here = await sentinelHere()
      stops.push(() => (here as RedisHere).stop())
      redisUrl = here.url
    } else if (o.redis === true || (typeof o.redis !== 'string' && (o.runtime === 'worker' || o.fault !== undefined))) {
      here = await redisHere()
      stops.push(() => (here as RedisHere).stop())
      redisUrl = here.url
    } else if (typeof o.redis === 'string') redisUrl = o.redis
    if (o.fault !== undefined && here === undefined)
      throw new Error('a store fault needs the redis-server started by the simulator (no --redis URL)')
    const [edgePort, originPort] = [await freePort(), await freePort()]
    const edgeUrl = `http://127.0.0.1:${edgePort}`
    // A sold-out sale: the origin keeps the event's stock where the edge reads it, in the same Redis,
    // or in one gate shared in this process (as npm start does).
    const sharedGate = o.soldOut && redisUrl === undefined ? new MemoryClaimGate() : undefined
    const booking = await buildBooking({
      databaseUrl: o.databaseUrl,
      jwksUrl: `${edgeUrl}/.well-known/jwks.json`,
      issuer: 'anteroom',
      audience: 'origin',
      room,
      rows: Math.ceil((o.seats ?? 40) / 10),
      endSessionOnPurchase: o.originCommands === true,
      ...(o.soldOut ? { redisUrl, gate: sharedGate } : {}),
    })
    stops.push(() => booking.close())
    const rooms = JSON.stringify([
      {
        id: room,
        paths: ['/'],
        ...real,
        ...(o.originCommands ? { originCommands: 'end-session' } : {}),
        ...(schedule ? { schedule } : {}),
        ...(o.powDifficulty ? { powDifficulty: o.powDifficulty } : {}),
        ...(o.networkCap ? { joinsPerNetworkPerMinute: o.networkCap } : {}),
        ...(o.soldOut ? { event: SEATS_EVENT } : {}),
      },
    ])
    const secret = randomBytes(32).toString('hex')
    // A sold-out sale also reads what the edge itself sees of the stock (its admin stats).
    const adminToken = randomBytes(24).toString('base64url')
    const adminTokens = o.soldOut ? `sim:${adminToken}` : undefined
    let stats: Started['stats']
    let reserved: Started['reserved']
    let admissions: Started['admissions']
    let edgeEvents: Started['edgeEvents']
    let gate: ClaimGate | undefined = sharedGate
    if (redisUrl !== undefined) {
      // The simulator's own connection: the store's numbers and its record of admissions, beside the edge.
      const redis = connectRedis(redisUrl)
      stops.push(async () => redis.disconnect())
      const store = new RedisQueueStore(redis, luaScripts())
      if (o.soldOut) gate = new RedisClaimGate(redis, luaScripts())
      stats = (id) => store.stats(id)
      reserved = (id) => reservedSlots(store, id)
      admissions = async (id, sinceMs) => {
        const flat = await redis.zrangebyscore(roomKeys(id).admissions, sinceMs, '+inf', 'WITHSCORES')
        const out: [string, number][] = []
        for (let i = 0; i + 1 < flat.length; i += 2) out.push([flat[i] as string, Number(flat[i + 1])])
        return out
      }
    }
    if (o.runtime === 'worker') {
      // The production Worker bundle, as wrangler builds it for a deploy, in workerd; Redis via StoreRelay.
      // A directory of this process's own: another run in the same checkout rebuilds its own, not this one's.
      const outdir = resolve(`.tmp/sim/worker-${process.pid}`)
      stops.push(async () => rmSync(outdir, { recursive: true, force: true }))
      const script = await buildWorker('worker/index.ts', outdir)
      const worker = await startWorker({
        script,
        vars: {
          ANTEROOM_ROOMS: rooms,
          ANTEROOM_ORIGIN: `http://127.0.0.1:${originPort}`,
          ANTEROOM_REDIS_URL: redisUrl,
          ANTEROOM_QUEUE_SECRET: secret,
          ANTEROOM_SIGNING_KEYS: JSON.stringify([await generateSigningJwk('sim')]),
          ANTEROOM_ADMIN_TOKENS: adminTokens,
        },
        port: edgePort,
      })
      stops.push(() => worker.close())
      // The Worker logs a JSON line an event (worker/edge.ts); the runtime's output keeps its last 64 KB.
      edgeEvents = () => {
        const counts: Record<string, number> = {}
        for (const line of worker.output().split('\n')) {
          const event = /^\{"event":"([a-z_]+)"/.exec(line)?.[1]
          if (event !== undefined) tally(counts, event)
        }
        return counts
      }
    } else {
      const config = loadConfig({
        ANTEROOM_ROOMS: rooms,
        ANTEROOM_QUEUE_SECRET: secret,
        ANTEROOM_REDIS_URL: redisUrl,
        ANTEROOM_ADMIN_TOKENS: adminTokens,
      })
      const counts: Record<string, number> = {}
      edgeEvents = () => ({ ...counts })
      const edge = await buildEdge(config, {
        originUrl: `http://127.0.0.1:${originPort}`,
        gate: sharedGate,
        log: (event) => tally(counts, event),
      })
      stops.push(() => edge.close())
      const server = serve({ fetch: edge.app.fetch, hostname: '127.0.0.1', port: edgePort })
      stops.push(() => new Promise((r) => server.close(() => r())))
      await new Promise((r) => (server.listening ? r(null) : server.once('listening', r)))
      if (redisUrl === undefined) {
        const queue = edge.deps.queue
        stats = (id) => queue.stats(id)
        reserved = (id) => reservedSlots(queue, id)
        admissions = memoryAdmissions(queue)
      }
    }
    const origin = serve({ fetch: booking.app.fetch, hostname: '127.0.0.1', port: originPort })
    stops.push(() => new Promise((r) => origin.close(() => r())))
    await new Promise((r) => (origin.listening ? r(null) : origin.once('listening', r)))
    const stockGate = gate
    return {
      edgeUrl,
      stats,
      reserved,
      admissions,
      stock: stockGate === undefined ? undefined : (event) => stockGate.counts(event),
      edgeStock: o.soldOut
        ? async (id) => {
            const res = await request(`${edgeUrl}/_anteroom/api/rooms/${id}/stats`, { headers: { authorization: `Bearer ${adminToken}` } })
            const body = (await res.body.json()) as { stock?: { state?: string } | null }
            return body.stock?.state
          }
        : undefined,
      redis: here,
      edgeEvents,
      async stop() {
        for (const stop of stops.reverse()) await stop().catch(() => {})
      },
      async invariant() {
        const inv = await booking.seats.invariant(SEATS_EVENT)
        const map = await booking.seats.seatMap(SEATS_EVENT)
        return {
          seats: map.length,
          ...inv,
          invariantOk: inv.sold === inv.tickets && inv.tickets === inv.paid,
          soldInMap: map.filter((s) => s.status === 'sold').length,
        }
      },
    }
  } catch (err) {
    for (const stop of stops.reverse()) await stop().catch(() => {})
    throw err
  }
}
