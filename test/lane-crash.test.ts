// An allocator killed (SIGKILL) in the middle of a batch (issue #32 part 2): its own process
// (test/support/lane-child.ts) stops at the batch's transaction, before it is written or after it
// committed and before the answers, and is killed there with the batch pending. Another allocator
// takes the event over once the lease runs out, and then: every claim is answered (the requests waiting
// on the origin get their answers), nothing is sold twice (no unit held past its stock, no seat in two
// holds, every hold in the database answered 201 to its own visitor and to no one else), and after every
// winner pays, PostgreSQL's invariant holds: sold = tickets = paid.
import { type ChildProcess, spawn } from 'node:child_process'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Db } from '../src/adapters/postgres/db.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import type { AdmissionTokens } from '../src/core/admission-token.js'
import { type LaneRig, laneBase, laneRig } from './support/lane.js'

let db: Db
let tokens: AdmissionTokens
let seq = 0
const rigs: LaneRig[] = []
const children: ChildProcess[] = []

beforeAll(async () => {
  ;({ db, tokens } = await laneBase())
})
afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL')
  for (const r of rigs) await r.close()
  await db.close()
})

/** Starts an allocator process for the event that stops for good at `where`; resolves once it has. */
function crashingAllocator(event: string, where: 'before-commit' | 'after-commit') {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/lane-child.ts'], {
    env: {
      ...process.env,
      ANTEROOM_DATABASE_URL: inject('postgresUrl'),
      ANTEROOM_REDIS_URL: inject('redisUrl'),
      ANTEROOM_LANE_EVENTS: event,
      LANE_TEST_STOP: where,
      LANE_TEST_LEASE_MS: '1000',
      LANE_TEST_BATCH: '16',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  children.push(child)
  let out = ''
  const lines = (want: string) =>
    new Promise<string>((resolve, reject) => {
      const look = () => {
        const line = out.split('\n').find((l) => l.startsWith(want))
        if (line !== undefined) resolve(line)
      }
      child.stdout?.on('data', (d: Buffer) => {
        out += d.toString()
        look()
      })
      child.once('exit', (code) => reject(new Error(`the allocator process ended (${code}) before "${want}": ${out}`)))
      look()
    })
  return { child, started: lines('started'), stopped: lines('stopped') }
}

describe('an allocator killed with claims pending', () => {
  for (const where of ['before-commit', 'after-commit'] as const) {
    it(`${where}: another takes over, every claim is answered, nothing is sold twice`, async () => {
      const event = `crash${Date.now().toString(36)}${seq++}`
      await seedEvent(db, {
        id: event,
        name: 'Crash night',
        room: 'sale',
        priceCents: 1000,
        maxPerVisitor: 4,
        rows: ['A'],
        seatsPerRow: 4,
        items: [{ id: 'ga', name: 'ga', quantity: 20, buckets: 2 }],
      })
      const rig = await laneRig({ db, redisUrl: inject('redisUrl'), tokens, room: 'sale', laneEvents: [event], waitMs: 120_000 })
      rigs.push(rig)
      const first = crashingAllocator(event, where)
      await first.started
      // 80 claims at once: one in four for seat A1, the rest one ticket each (20 to go round).
      const visitors = Array.from({ length: 80 }, (_, i) => `c${i}`)
      const bodies = visitors.map((_, i) => (i % 4 === 0 ? { seats: ['A1'] } : { items: [{ item: 'ga', quantity: 1 }] }))
      const answers = Promise.all(visitors.map((v, i) => rig.send('POST', `/events/${event}/holds`, v, bodies[i])))
      const stopped = await first.stopped
      const holdsAtCrash = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM holds WHERE event_id = $1', [event])
      first.child.kill('SIGKILL')
      await new Promise((r) => first.child.once('exit', r))
      const batch = Number(stopped.split(' ')[2])
      // Before the commit nothing is written; after it, the batch's winners are, unanswered.
      if (where === 'before-commit') expect(holdsAtCrash[0]?.n).toBe(0)
      else expect(holdsAtCrash[0]?.n).toBeGreaterThan(0)
      expect(batch).toBeGreaterThan(0)

      // Another allocator, once the dead one's lease has run out.
      const second = (await rig.allocator(event, { leaseMs: 1000 })).start()
      const all = await answers
      expect(all.map((a) => a.status).filter((s) => s !== 201 && s !== 409)).toEqual([])
      expect(second.stats.takenOver).toBeGreaterThan(0)
      const won = all.flatMap((a, i) => (a.status === 201 ? [{ visitor: visitors[i] as string, hold: a.body.hold }] : []))
      // The seat once, the tickets twenty times.
      expect(won.filter((w) => w.hold.seats.length > 0)).toHaveLength(1)
      expect(won.filter((w) => w.hold.items.length > 0)).toHaveLength(20)
      // Every hold in the database is one a visitor was told of, theirs: none was made twice or behind a 409.
      const rows = await db.query<{ id: string; holder: string }>('SELECT id::text, holder FROM holds WHERE event_id = $1 ORDER BY id', [
        event,
      ])
      expect(rows).toEqual(won.map((w) => ({ id: w.hold.id, holder: w.visitor })).sort((a, b) => (a.id < b.id ? -1 : 1)))
      const seatHolds = await db.query<{ n: number }>("SELECT count(*)::int AS n FROM holds WHERE event_id = $1 AND 'A1' = ANY (seats)", [
        event,
      ])
      expect(seatHolds[0]?.n).toBe(1)
      // Every winner pays: the invariant holds, at the stock exactly.
      const paid = await Promise.all(won.map((w) => rig.send('POST', `/holds/${w.hold.id}/confirm`, w.visitor)))
      expect(paid.map((p) => p.status).filter((s) => s !== 200)).toEqual([])
      expect((await rig.send('GET', `/events/${event}/invariant`, 'c0')).body).toEqual({ sold: 21, tickets: 21, paid: 21, ok: true })
      expect(await rig.seats.itemMap(event)).toEqual([{ item: 'ga', name: 'ga', total: 20, free: 0, held: 0, sold: 20 }])
    })
  }
})
