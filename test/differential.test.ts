// The admission rule exists twice: core/admission.ts (run by the embedded store) and poll-12.lua (run
// by Redis). This drives the memory store and the Redis store, on a redis-server and on a Redis
// Cluster, with the same long random sequences of joins, polls (some with a redeemed code's lane arrival),
// silences, renewals, session ends (by an admin or the origin), mode and settings changes and clock
// steps, and compares every answer.
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { MemoryQueueStore } from '../src/adapters/memory/queue-store.js'
import { RedisQueueStore } from '../src/adapters/redis/queue-store.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import { ADMISSION_DEFAULTS, type AdmissionLimits } from '../src/core/settings.js'
import type { QueueStore } from '../src/ports/queue-store.js'
import { startSingleNodeCluster, type TestCluster } from './support/redis-cluster.js'

const T0 = 1_800_000_000_000

/** A small seeded generator, so that a failing sequence can be replayed by its seed. */
function random(seed: number) {
  let s = seed >>> 0
  const next = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
  return {
    next,
    int: (n: number) => Math.floor(next() * n),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
  }
}

/** Answers by state over all sequences (and 'drawn': answers with a rank in a draw), to see that every path ran. */
const states = new Map<string, number>()

interface Step {
  op: string
  result: unknown
}

/** One sequence: the same operations on both stores; the first difference fails with the history. */
async function runSequence(
  seed: number,
  room: string,
  makeMemory: () => QueueStore,
  b: QueueStore,
  forgetB: () => Promise<void>,
  length: number,
): Promise<void> {
  let a = makeMemory()
  /** What an edge would know of the room: the last watch (life, active count). */
  let view: { life: { epoch: number } | null; active: number } = { life: null, active: 0 }
  const r = random(seed)
  let now = T0
  let limits: AdmissionLimits = {
    ...ADMISSION_DEFAULTS,
    mode: 'fifo',
    totalActiveUsers: 3,
    newUsersPerMinute: 12,
    abandonAfterMs: 4000,
    sessionMs: 8000,
  }
  const visitors: string[] = []
  /** The last arrival each visitor was told: what their queue token would carry. */
  const tokens = new Map<string, { arrival: number; expires: number }>()
  const history: Step[] = []
  /** When the edge last answered busy (EdgeHint.outage); the edge reports it with its next polls. */
  let outage: number | undefined
  for (let i = 0; i < length; i++) {
    const roll = r.next()
    let op: string
    let run: (s: QueueStore) => Promise<unknown>
    if (roll < 0.45) {
      const fresh = visitors.length === 0 || r.next() < 0.25
      const visitor = fresh ? `v${seed}x${visitors.length}` : r.pick(visitors)
      if (fresh) visitors.push(visitor)
      // Mostly the arrival of their token; sometimes none (a lost cookie), sometimes an old one.
      const t = r.next()
      const token = t < 0.7 ? tokens.get(visitor) : t < 0.85 ? undefined : { arrival: now * 1000 - r.int(60_000_000), expires: now + 1000 }
      const arrival = token?.arrival
      const tokenExpires = token?.expires
      // In a scheduled room the edge brings a joiner's drawn arrival (core/draw.ts); the store decides whether it counts.
      const draw = limits.opensAtMs === undefined ? undefined : limits.opensAtMs * 1000 - 2 ** 40 + r.int(2 ** 40)
      // Now and then the visitor just redeemed an access code: its lane arrival (core/access.ts), earlier or later than a lane place held.
      const lane = r.next() < 0.12 ? now * 1000 - 2 ** 48 + r.int(20_000_000) : undefined
      op = `poll ${visitor} ${arrival ?? '-'} ${draw ?? '-'} ${lane ?? '-'}`
      const hint: { epoch?: number; active: number; outage?: number; late?: number } = view.life
        ? { epoch: view.life.epoch, active: view.active }
        : { active: view.active }
      // Now and then the edge reports that it could not reach the store (an outage it answered busy).
      if (outage !== undefined) hint.outage = outage
      // Now and then the edge serves its polls late (core/lateness.ts), by up to abandonAfter and past it.
      if (r.next() < 0.15) hint.late = r.pick([250, 1000, 2500, 4000, 9000])
      const input = { room, visitor, arrival, tokenExpires, draw, lane, limits, now, hint }
      run = (s) => s.poll(input)
    } else if (roll < 0.7) {
      const step = r.pick([1, 10, 250, 999, 1000, 1001, 3000, 4000, 4001, 9000])
      now += step
      op = `advance ${step}`
      run = async () => now
    } else if (roll < 0.73 && tokens.size > 0) {
      // The store is away for one poll: the edge answers busy and re-signs the visitor's token, store untouched.
      const visitor = r.pick([...tokens.keys()])
      const token = tokens.get(visitor) as { arrival: number; expires: number }
      tokens.set(visitor, { ...token, expires: now + limits.abandonAfterMs })
      op = `busy ${visitor}`
      outage = now
      run = async () => null
    } else if (roll < 0.78 && visitors.length > 0) {
      const visitor = r.pick(visitors)
      op = `renew ${visitor}`
      const at = now
      run = (s) => s.renew({ room, visitor, sessionMs: limits.sessionMs, now: at })
    } else if (roll < 0.81 && visitors.length > 0) {
      const visitor = r.pick(visitors)
      op = `end ${visitor}`
      const at = now
      run = (s) => s.endSession(room, visitor, at)
    } else if (roll < 0.83 && visitors.length > 0) {
      // The origin is done with the visitor (Anteroom-Command: end-session).
      const visitor = r.pick(visitors)
      op = `finish ${visitor}`
      const at = now
      run = (s) => s.finishSession({ room, visitor, keepMs: limits.sessionMs + 4000, now: at })
    } else if (roll < 0.845) {
      // The store forgets the room (a flush, a failover): the memory store starts afresh, Redis loses the keys.
      op = 'forget'
      run = async (s) => {
        if (s === a) a = makeMemory()
        else await forgetB()
        return null
      }
    } else if (roll < 0.87) {
      // As an edge looks (core/eta.ts lookFor): ranks over the active set, the last, and some visitors.
      const look = { ranks: [0, 1, 2, -1, -2, 7], visitors: visitors.length > 0 ? [r.pick(visitors), r.pick(visitors), 'nobody'] : [] }
      op = `watch ${JSON.stringify(look)}`
      const at = now
      run = (s) => s.watch(room, at - 60_000, undefined, look)
    } else if (roll < 0.88) {
      op = 'end-all'
      const at = now
      run = (s) => s.endAllSessions(room, at)
    } else if (roll < 0.94) {
      limits = {
        ...limits,
        mode: r.pick(['fifo', 'fifo', 'fifo', 'paused', 'passthrough'] as const),
        totalActiveUsers: 1 + r.int(6),
        newUsersPerMinute: r.pick([1, 6, 7, 12, 60, 600]),
      }
      // Sometimes a scheduled sale: its pre-queue ahead, under way, or over; sometimes none again.
      const schedule = r.next()
      if (schedule < 0.3) {
        const prequeueAtMs = now + r.pick([-20_000, -3000, 0, 1000, 5000])
        limits = { ...limits, prequeueAtMs, opensAtMs: prequeueAtMs + r.pick([1000, 4000, 12_000]) }
      } else if (schedule < 0.45) {
        const { prequeueAtMs: _p, opensAtMs: _o, ...rest } = limits
        limits = rest
      }
      op = `limits ${JSON.stringify(limits)}`
      run = async () => limits
    } else {
      op = 'stats'
      const at = now
      run = (s) => s.stats(room, at)
    }
    const [ra, rb] = [await run(a), await run(b)]
    if (op.startsWith('watch')) {
      const w = ra as { life: { epoch: number } | null; active: number }
      // A store that forgot shows no life; the edge keeps what it saw (src/rooms/life.ts).
      if (w.life !== null) view = w
    }
    history.push({ op, result: ra })
    const st = (ra as { state?: string; drawRank?: number } | null)?.state
    if (st !== undefined) states.set(st, (states.get(st) ?? 0) + 1)
    if (((ra as { drawRank?: number } | null)?.drawRank ?? 0) > 0) states.set('drawn', (states.get('drawn') ?? 0) + 1)
    // A place in a lane (an arrival years before now), in line or admitted.
    const placed = ra as { state?: string; arrival?: number } | null
    if (placed?.arrival !== undefined && placed.arrival > 0 && placed.arrival < now * 1000 - 2 ** 47)
      states.set(`lane ${placed.state}`, (states.get(`lane ${placed.state}`) ?? 0) + 1)
    if (JSON.stringify(ra) !== JSON.stringify(rb)) {
      const tail = history
        .slice(-25)
        .map((h) => `${h.op} → ${JSON.stringify(h.result)}`)
        .join('\n')
      expect.fail(`seed ${seed}, step ${i}: ${op}\n memory: ${JSON.stringify(ra)}\n redis:  ${JSON.stringify(rb)}\nlast steps:\n${tail}`)
    }
    const answer = ra as { arrival?: number; state?: string }
    if (op.startsWith('poll') && answer.arrival !== undefined) {
      const visitor = op.split(' ')[1] as string
      // An admitted visitor may keep their old queue token (the edge drops it; a client can keep it).
      if (answer.state === 'admitted') {
        if (r.next() < 0.5) tokens.delete(visitor)
      } else if (answer.state !== 'ended') tokens.set(visitor, { arrival: answer.arrival, expires: now + limits.abandonAfterMs })
    }
  }
}

describe.each([
  ['a redis-server', 'single'],
  ['a Redis Cluster', 'cluster'],
] as const)('the memory store and the Redis store on %s give the same answers', (_name, kind) => {
  let redis: Redis | undefined
  let cluster: TestCluster | undefined
  let store: RedisQueueStore
  beforeAll(async () => {
    if (kind === 'single') {
      redis = new Redis(inject('redisUrl'))
      store = new RedisQueueStore(redis, luaScripts())
    } else {
      cluster = await startSingleNodeCluster()
      store = new RedisQueueStore(cluster.cluster, luaScripts())
    }
  })
  afterAll(async () => {
    redis?.disconnect()
    await cluster?.stop()
  })

  const seeds = kind === 'single' ? [1, 2, 3, 4, 5, 6, 7, 8] : [11, 12, 13]
  it.each(seeds)('seed %i: 600 random operations', async (seed) => {
    const room = `diff-${kind}-${seed}-${Date.now().toString(36)}`
    const forget = async () => {
      const target = redis ?? cluster?.cluster
      const keys = (await target?.keys(`anteroom:{${room}}:*`)) ?? []
      for (const key of keys) await target?.del(key)
    }
    await runSequence(seed, room, () => new MemoryQueueStore(), store, forget, 600)
  })

  it('went through every state, the pre-queue and the draw included', () => {
    for (const state of ['queued', 'admitted', 'paused', 'ended', 'recovering', 'prequeue', 'drawn', 'lane queued', 'lane admitted']) {
      expect(states.get(state) ?? 0, state).toBeGreaterThan(0)
    }
  })
})
