// The ordered lane (issue #32 part 2, src/booking/lane) on the real PostgreSQL server and redis-server:
// off unless chosen for an event; claims decided in the lane's order (the stream's), whatever order
// they were sent in; a claim waiting on a stopped allocator answered 202 and polled; releases and
// expiries reach the allocator's stock (on its own clock, moved by hand); a batch written twice
// claims nothing twice; Redis away is a 503 with a code.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import type { Db } from '../src/adapters/postgres/db.js'
import { PostgresLaneStore } from '../src/adapters/postgres/lane-store.js'
import { seedEvent } from '../src/adapters/postgres/seed.js'
import { RedisClaimLane } from '../src/adapters/redis/claim-lane.js'
import { laneKeys } from '../src/adapters/redis/keys.js'
import { luaScripts } from '../src/adapters/redis/scripts.js'
import type { Allocator } from '../src/booking/lane/allocator.js'
import type { AdmissionTokens } from '../src/core/admission-token.js'
import type { LaneAnswer, LaneConsumer } from '../src/ports/claim-lane.js'
import { ManualClock } from './support/clock.js'
import { type LaneRig, laneBase, laneRig } from './support/lane.js'
import { startSingleNodeCluster } from './support/redis-cluster.js'
import { freePort } from './support/redis-server.js'

let db: Db
let tokens: AdmissionTokens
let seq = 0
const rigs: LaneRig[] = []

beforeAll(async () => {
  ;({ db, tokens } = await laneBase())
})
afterAll(async () => {
  for (const r of rigs) await r.close()
  await db.close()
})

async function sale(o: { seats?: boolean; items?: { id: string; quantity: number; buckets?: number }[]; lane?: boolean; waitMs?: number }) {
  const event = `lane${Date.now().toString(36)}${seq++}`
  await seedEvent(db, {
    id: event,
    name: 'Lane night',
    room: 'sale',
    priceCents: 1000,
    maxPerVisitor: 4,
    ...(o.seats === false ? {} : { rows: ['A', 'B'], seatsPerRow: 10 }),
    ...(o.items === undefined ? {} : { items: o.items.map((i) => ({ name: i.id, ...i })) }),
  })
  const rig = await laneRig({
    db,
    redisUrl: inject('redisUrl'),
    tokens,
    room: 'sale',
    laneEvents: o.lane === false ? [] : [event],
    waitMs: o.waitMs,
  })
  rigs.push(rig)
  return { event, rig }
}

/** Steps an allocator until it has decided every entry in the lane. */
async function drain(a: Allocator, rig: LaneRig, event: string) {
  for (let i = 0; i < 1000; i++) {
    await a.step()
    const pending = (await rig.redis.xpending(laneKeys(event).claims, 'allocators')) as [number]
    const waiting = (await rig.redis.xlen(laneKeys(event).claims)) as number
    if (Number(pending[0]) === 0 && (await a.step()) === 0 && waiting >= 0) return
  }
  throw new Error('the allocator did not drain the lane')
}

/** A promise the test resolves when it chooses. */
function signal(): { given: Promise<void>; give: () => void } {
  let give: () => void = () => {}
  const given = new Promise<void>((r) => {
    give = r
  })
  return { given, give }
}

/** Waits until `done()` (at most 10 s; the test's assertions then say what did not happen). */
async function until(done: () => boolean) {
  for (let i = 0; i < 2000 && !done(); i++) await new Promise((r) => setTimeout(r, 5))
}

/** The consumer's methods bound to it, to wrap one of them. */
const bind = (lane: LaneConsumer): LaneConsumer => ({
  ensureGroup: lane.ensureGroup.bind(lane),
  lease: lane.lease.bind(lane),
  unlease: lane.unlease.bind(lane),
  takeOver: lane.takeOver.bind(lane),
  own: lane.own.bind(lane),
  read: lane.read.bind(lane),
  settle: lane.settle.bind(lane),
})

/** The lane's claims in stream order: claim ids. */
async function laneOrder(rig: LaneRig, event: string): Promise<string[]> {
  const entries = (await rig.redis.xrange(laneKeys(event).claims, '-', '+')) as [string, string[]][]
  return entries
    .map(([, f]) => JSON.parse(f[1] as string))
    .filter((j) => j.k === 'claims')
    .flatMap((j) => j.c.map((c: { id: string }) => c.id))
}

describe('the ordered lane', () => {
  it('is off unless chosen for the event: claims go to PostgreSQL, the lane stays empty', async () => {
    const { event, rig } = await sale({ lane: false })
    const r = await rig.send('POST', `/events/${event}/holds`, 'v1', { seats: ['A1'] })
    expect(r.status).toBe(201)
    expect(await rig.redis.exists(laneKeys(event).claims)).toBe(0)
    expect(rig.bookingLane.on(event)).toBe(false)
  })

  it('decides claims in the lane order: sent at once with the allocator stopped, answered 202, then polled', async () => {
    const { event, rig } = await sale({ items: [{ id: 'ga', quantity: 5 }], waitMs: 20 })
    const visitors = Array.from({ length: 30 }, (_, i) => `v${i}`)
    const sent = await Promise.all(
      visitors.map((v, i) =>
        rig.send('POST', `/events/${event}/holds`, v, i % 2 === 0 ? { seats: ['A1'] } : { items: [{ item: 'ga', quantity: 1 }] }),
      ),
    )
    // Nobody decides yet: each claim waited, then was told where to poll.
    expect(sent.map((s) => s.status)).toEqual(visitors.map(() => 202))
    for (const s of sent) expect(s.headers.get('location')).toBe(`/events/${event}/claims/${s.body.claim.id}?entry=${s.body.claim.entry}`)
    const poll = (i: number) => rig.send('GET', sent[i]!.headers.get('location') as string, visitors[i] as string)
    expect((await poll(0)).status).toBe(202)
    // Another visitor's claim is not theirs to see.
    expect((await rig.send('GET', sent[0]!.headers.get('location') as string, 'someone-else')).status).toBe(404)
    // The claim is found by its entry: without it, or with another, or a malformed one, it is not found.
    const claimAt = `/events/${event}/claims/${sent[0]!.body.claim.id}`
    for (const query of ['', '?entry=1-0', '?entry=not-an-id', `?entry=${'9'.repeat(21)}-0`, '?entry=1-0&entry=2-0']) {
      const r = await rig.send('GET', `${claimAt}${query}`, visitors[0] as string)
      expect({ query, status: r.status, code: r.body.error?.code }).toEqual({ query, status: 404, code: 'ERR_NOT_FOUND' })
    }

    const order = await laneOrder(rig, event)
    const a = await rig.allocator(event)
    await drain(a, rig, event)
    const answers = await Promise.all(visitors.map((_, i) => poll(i)))
    const byClaim = new Map(sent.map((s, i) => [s.body.claim.id as string, { i, answer: answers[i]! }]))
    const seatClaims = order.filter((id) => (byClaim.get(id)?.i ?? 1) % 2 === 0)
    const itemClaims = order.filter((id) => (byClaim.get(id)?.i ?? 0) % 2 === 1)
    // The seat: the first seat claim in the lane wins, every later one is told it is taken.
    expect(seatClaims.map((id) => byClaim.get(id)?.answer.status)).toEqual([201, ...seatClaims.slice(1).map(() => 409)])
    expect(byClaim.get(seatClaims[1] as string)?.answer.body.error.code).toBe('ERR_SEATS_TAKEN')
    // The items: the first five in the lane win, in the lane's order.
    expect(itemClaims.map((id) => byClaim.get(id)?.answer.status)).toEqual([
      ...itemClaims.slice(0, 5).map(() => 201),
      ...itemClaims.slice(5).map(() => 409),
    ])
    expect(byClaim.get(itemClaims[5] as string)?.answer.body.error.code).toBe('ERR_ITEMS_SHORT')
    const winner = byClaim.get(itemClaims[0] as string)?.answer.body
    expect(winner.hold).toMatchObject({ id: itemClaims[0], seats: [], items: [{ item: 'ga', quantity: 1 }] })
    // Memory refused the doomed ones: only the six winners were written.
    expect(a.stats).toMatchObject({ claims: 30, refused: 24, written: 6, overruled: 0 })
    expect(await rig.seats.itemMap(event)).toEqual([{ item: 'ga', name: 'ga', total: 5, free: 0, held: 5, sold: 0 }])
  })

  it('answers the waiting request when the allocator runs: winners in the lane order under concurrency', async () => {
    const { event, rig } = await sale({ seats: false, items: [{ id: 'ga', quantity: 10, buckets: 2 }], waitMs: 60_000 })
    // What the allocator reads, in the order it reads it (the stream's: the stream is trimmed as it goes).
    const read: string[] = []
    const own = await rig.lane.dedicated()
    const recording: LaneConsumer = {
      ...bind(own.lane),
      read: async (...args) => {
        const entries = await own.lane.read(...args)
        for (const e of entries) if (e.kind === 'claims') read.push(...e.claims.map((c) => c.holder))
        return entries
      },
    }
    const a = (await rig.allocator(event, { lane: recording })).start()
    const visitors = Array.from({ length: 60 }, (_, i) => `w${i}`)
    const sent = await Promise.all(
      visitors.map((v) => rig.send('POST', `/events/${event}/holds`, v, { items: [{ item: 'ga', quantity: 1 }] })),
    )
    const status = new Map(sent.map((s, i) => [visitors[i] as string, s.status]))
    expect(read).toHaveLength(60)
    // The ten holds are the first ten claims of the lane, every later one is short.
    expect(read.map((v) => status.get(v))).toEqual([...read.slice(0, 10).map(() => 201), ...read.slice(10).map(() => 409)])
    expect(a.stats.refused).toBe(50)
    await a.stop()
    own.close()
  })

  it('behind the claim gate: doomed claims end at the gate, what passes is decided in the lane under the id the gate marked', async () => {
    const event = `lane${Date.now().toString(36)}${seq++}`
    await seedEvent(db, { id: event, name: 'Lane night', room: 'sale', priceCents: 1000, rows: ['A'], seatsPerRow: 4 })
    const rig = await laneRig({
      db,
      redisUrl: inject('redisUrl'),
      tokens,
      room: 'sale',
      laneEvents: [event],
      gateEvents: [event],
      waitMs: 60_000,
    })
    rigs.push(rig)
    const a = (await rig.allocator(event)).start()
    const first = await rig.send('POST', `/events/${event}/holds`, 'g0', { seats: ['A1'] })
    expect(first.status).toBe(201)
    const rest = await Promise.all(
      Array.from({ length: 20 }, (_, i) => rig.send('POST', `/events/${event}/holds`, `g${i + 1}`, { seats: ['A1'] })),
    )
    expect(rest.map((r) => r.status)).toEqual(rest.map(() => 409))
    expect(rest[0]?.body.error.code).toBe('ERR_SEATS_TAKEN')
    // Only the winner went into the lane; the gate answered the rest.
    expect(a.stats.claims).toBe(1)
    // A release reaches both: the seat is claimed again through both.
    expect((await rig.send('DELETE', `/holds/${first.body.hold.id}`, 'g0')).status).toBe(200)
    expect((await rig.send('POST', `/events/${event}/holds`, 'g9', { seats: ['A1'] })).status).toBe(201)
    expect(a.stats.claims).toBe(2)
  })

  it('learns releases and sales through the lane, and expiries on its own clock', async () => {
    const clock = new ManualClock(Date.now())
    const { event, rig } = await sale({})
    ;(await rig.allocator(event, { clock: () => clock.now() })).start()
    const first = await rig.send('POST', `/events/${event}/holds`, 'r1', { seats: ['A1'] })
    expect(first.status).toBe(201)
    expect((await rig.send('POST', `/events/${event}/holds`, 'r2', { seats: ['A1'] })).status).toBe(409)
    expect((await rig.send('DELETE', `/holds/${first.body.hold.id}`, 'r1')).status).toBe(200)
    const second = await rig.send('POST', `/events/${event}/holds`, 'r2', { seats: ['A1'] })
    expect(second.status).toBe(201)
    // The hold runs out in PostgreSQL; the allocator's clock has not reached its end: still taken.
    await db.query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE event_id = $1 AND seat = 'A1'", [event])
    await db.query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = $1", [second.body.hold.id])
    expect((await rig.send('POST', `/events/${event}/holds`, 'r3', { seats: ['A1'] })).status).toBe(409)
    // Its clock passes the hold's end: the seat is claimed again.
    clock.advance(601_000)
    expect((await rig.send('POST', `/events/${event}/holds`, 'r3', { seats: ['A1'] })).status).toBe(201)
    // A sold seat stays sold.
    const bought = await rig.send('POST', `/events/${event}/holds`, 'r4', { seats: ['B1'] })
    expect((await rig.send('POST', `/holds/${bought.body.hold.id}/confirm`, 'r4')).status).toBe(200)
    clock.advance(601_000)
    expect((await rig.send('POST', `/events/${event}/holds`, 'r5', { seats: ['B1'] })).status).toBe(409)
    expect(await rig.send('GET', `/events/${event}/invariant`, 'r4').then((r) => r.body)).toEqual({
      sold: 1,
      tickets: 1,
      paid: 1,
      ok: true,
    })
  })

  it("answers what memory refuses while a batch's winners are being written, and decides the next batch meanwhile", async () => {
    const { event, rig } = await sale({ seats: false, items: [{ id: 'ga', quantity: 4 }], waitMs: 60_000 })
    // The first write is held at its transaction until the test lets it go.
    const writes: { holders: string[]; committed: boolean }[] = []
    const held = signal()
    const firstWrite = signal()
    const a = (
      await rig.allocator(event, {
        hooks: {
          beforeCommit: async (claims) => {
            writes.push({ holders: claims.map((c) => c.holder).sort(), committed: false })
            if (writes.length === 1) {
              firstWrite.give()
              await held.given
            }
          },
          afterCommit: async () => {
            const w = writes.at(-1)
            if (w !== undefined) w.committed = true
          },
        },
      })
    ).start()
    const claim = (v: string) => rig.send('POST', `/events/${event}/holds`, v, { items: [{ item: 'ga', quantity: 1 }] })
    // Three claims, all winners in memory: their write is held.
    const first = ['p1', 'p2', 'p3'].map(claim)
    await firstWrite.given
    // Four more, in a later batch: one winner (the last ticket), three refused.
    const second = ['q1', 'q2', 'q3', 'q4'].map((v) => claim(v).then((r) => ({ v, ...r })))
    const refused: { v: string; status: number }[] = []
    for (const p of second) void p.then((r) => r.status === 409 && refused.push(r))
    await until(() => refused.length === 3)
    // The refusals came while the first write was still held: no refusal waits behind a transaction.
    expect(refused.map((r) => r.status)).toEqual([409, 409, 409])
    expect(writes).toEqual([{ holders: ['p1', 'p2', 'p3'], committed: false }])
    held.give()
    const firstAnswers = await Promise.all(first)
    const secondAnswers = await Promise.all(second)
    expect(firstAnswers.map((r) => r.status)).toEqual([201, 201, 201])
    // The next batch's winner was written after the first write committed, in its own transaction.
    const winner = secondAnswers.find((r) => r.status === 201)
    expect(writes).toEqual([
      { holders: ['p1', 'p2', 'p3'], committed: true },
      { holders: [winner?.v], committed: true },
    ])
    expect(secondAnswers.filter((r) => r.status === 409).map((r) => r.body.error.code)).toEqual([
      'ERR_ITEMS_SHORT',
      'ERR_ITEMS_SHORT',
      'ERR_ITEMS_SHORT',
    ])
    expect(a.stats).toMatchObject({ claims: 7, refused: 3, written: 4, overruled: 0, failures: 0 })
    expect(await rig.seats.itemMap(event)).toEqual([{ item: 'ga', name: 'ga', total: 4, free: 0, held: 4, sold: 0 }])
  })

  it("answers a batch's winners once written, not when the allocator's next blocking read returns", async () => {
    const { event, rig } = await sale({ seats: false, items: [{ id: 'ga', quantity: 2 }], waitMs: 60_000 })
    // Its reads block for a minute when the lane is empty; the winners' answers go out on the same connection.
    const a = (await rig.allocator(event, { blockMs: 60_000 })).start()
    let answered: number | undefined
    void rig.send('POST', `/events/${event}/holds`, 'b1', { items: [{ item: 'ga', quantity: 1 }] }).then((r) => {
      answered = r.status
    })
    await until(() => answered !== undefined)
    expect(answered).toBe(201)
    expect(a.stats).toMatchObject({ claims: 1, written: 1 })
    // The allocator's read now blocks: an entry wakes it, so that it stops.
    const stopping = a.stop()
    await rig.lane.submit(event, { id: crypto.randomUUID(), holder: 'b2', seats: [], items: [{ item: 'ga', quantity: 1 }] })
    await stopping
  })

  it('a write that fails leaves its batch, and the batch decided behind it, to be decided again in order', async () => {
    const { event, rig } = await sale({ seats: false, items: [{ id: 'ga', quantity: 4 }], waitMs: 60_000 })
    let calls = 0
    const failing = signal()
    const firstWrite = signal()
    const a = (
      await rig.allocator(event, {
        hooks: {
          beforeCommit: async () => {
            if (++calls > 1) return
            firstWrite.give()
            await failing.given
            throw new Error('the database went away')
          },
        },
      })
    ).start()
    const claim = (v: string) => rig.send('POST', `/events/${event}/holds`, v, { items: [{ item: 'ga', quantity: 1 }] })
    const first = ['f1', 'f2', 'f3'].map(claim)
    await firstWrite.given
    const second = ['g1', 'g2', 'g3'].map(claim)
    // The second batch is decided (its two refusals answered) while the first write is in flight.
    const refusals: number[] = []
    for (const p of second) void p.then((r) => r.status === 409 && refusals.push(409))
    await until(() => refusals.length === 2)
    expect(refusals).toEqual([409, 409])
    expect(calls).toBe(1)
    failing.give()
    // The first batch's claims and the second's winner are decided again, in the lane's order: all four win.
    const answers = await Promise.all([...first, ...second])
    expect(answers.map((r) => r.status).sort()).toEqual([201, 201, 201, 201, 409, 409])
    expect(answers.slice(0, 3).map((r) => r.status)).toEqual([201, 201, 201])
    expect(a.stats.failures).toBe(1)
    expect(await rig.seats.itemMap(event)).toEqual([{ item: 'ga', name: 'ga', total: 4, free: 0, held: 4, sold: 0 }])
    expect((await rig.send('GET', `/events/${event}/invariant`, 'f1')).body).toMatchObject({ ok: true })
  })

  it("a claim answered while its entry's winner was being written is not decided again when that write fails", async () => {
    const clock = new ManualClock(Date.now())
    const { event, rig } = await sale({ waitMs: 60_000 })
    let writes = 0
    const failing = signal()
    const secondWrite = signal()
    const a = (
      await rig.allocator(event, {
        clock: () => clock.now(),
        hooks: {
          beforeCommit: async () => {
            if (++writes !== 2) return
            secondWrite.give()
            await failing.given
            throw new Error('the database went away')
          },
        },
      })
    ).start()
    const hold = (holder: string, seat: string, id = crypto.randomUUID()) =>
      rig.bookingLane.hold({ event, holder, seats: [seat], items: [], id })
    const early = await hold('h0', 'A1')
    expect(early.kind).toBe('held')
    // Two claims in one turn: one lane entry. w takes A2; r, for A1, is refused at once.
    const rId = crypto.randomUUID()
    const [w, r] = [hold('w', 'A2'), hold('r', 'A1', rId)]
    expect(await r).toMatchObject({ kind: 'taken', taken: ['A1'] })
    await secondWrite.given
    // Before w's write fails, h0's hold runs out (in PostgreSQL and on the allocator's clock): reloaded
    // from the database, A1 is free, and r would win it if it were decided again.
    const h0 = (early as { hold: { id: string } }).hold.id
    await db.query("UPDATE seats SET hold_expires_at = now() - interval '1 second' WHERE event_id = $1 AND seat = 'A1'", [event])
    await db.query("UPDATE holds SET expires_at = now() - interval '1 second' WHERE id = $1", [h0])
    clock.advance(601_000)
    failing.give()
    expect(await w).toMatchObject({ kind: 'held' })
    // r keeps the answer it was given (kept with its entry's answers), and holds nothing.
    const kept = await Promise.all((await rig.redis.keys(`${laneKeys(event).answers}*`)).map((key) => rig.redis.hget(key, rId)))
    expect(kept.flatMap((a) => (a === null ? [] : [JSON.parse(a)]))).toEqual([
      { claim: rId, holder: 'r', outcome: expect.objectContaining({ kind: 'taken' }) },
    ])
    expect(await rig.seats.getHold(rId)).toBeUndefined()
    expect(a.stats).toMatchObject({ claims: 4, refused: 1, failures: 1 })
  })

  it("an entry is not acknowledged with its winner when its refusals' answers were lost: they are decided again", async () => {
    const { event, rig } = await sale({ waitMs: 3000 })
    const own = await rig.lane.dedicated()
    let lost = 0
    const losing: LaneConsumer = {
      ...bind(own.lane),
      // The first settle of refusals alone fails (its connection went away with it in flight).
      settle: async (e, acks, answers, ttlMs) => {
        if (acks.length === 0 && answers.length > 0 && lost++ === 0) throw new Error('Connection is closed.')
        return own.lane.settle(e, acks, answers, ttlMs)
      },
    }
    const a = (await rig.allocator(event, { lane: losing })).start()
    // Two claims in one turn: one entry. w wins A1, r is refused; r's answer is lost once.
    const hold = (holder: string) => rig.bookingLane.hold({ event, holder, seats: ['A1'], items: [], id: crypto.randomUUID() })
    const [w, r] = await Promise.all([hold('w'), hold('r')])
    expect(w).toMatchObject({ kind: 'held' })
    // Decided again, r is answered (not left pending for ever, its entry acknowledged with w's answer).
    expect(r).toMatchObject({ kind: 'taken', taken: ['A1'] })
    expect(lost).toBeGreaterThan(1)
    expect(a.stats.failures).toBeGreaterThanOrEqual(1)
    expect(await rig.seats.seatMap(event).then((m) => m.filter((s) => s.status !== 'free').length)).toBe(1)
    await a.stop()
    own.close()
  })

  it('an entry whose winners span two writes is acknowledged with the last: a failed second write leaves it pending', async () => {
    const { event, rig } = await sale({ seats: false, items: [{ id: 'ga', quantity: 5 }], waitMs: 3000 })
    let writes = 0
    const a = (
      await rig.allocator(event, {
        batchSize: 2,
        hooks: {
          beforeCommit: async () => {
            if (++writes === 2) throw new Error('the database went away')
          },
        },
      })
    ).start()
    // Three winners in one turn: one entry, written two and one.
    const hold = (holder: string) => rig.bookingLane.hold({ event, holder, seats: [], items: [{ item: 'ga', quantity: 1 }] })
    const answers = await Promise.all(['x1', 'x2', 'x3'].map(hold))
    expect(answers.map((o) => o.kind)).toEqual(['held', 'held', 'held'])
    expect(a.stats.failures).toBe(1)
    expect(await rig.seats.itemMap(event)).toEqual([{ item: 'ga', name: 'ga', total: 5, free: 2, held: 3, sold: 0 }])
  })

  it('a batch written again (replayed after a crash) claims nothing twice: its holds are answered again', async () => {
    const { event, rig } = await sale({ items: [{ id: 'ga', quantity: 3 }] })
    const info = (await rig.seats.event(event))!
    const store = new PostgresLaneStore(db)
    const claims = ['x1', 'x2', 'x3', 'x4'].map((h) => ({
      id: crypto.randomUUID(),
      holder: h,
      seats: [],
      items: [{ item: 'ga', quantity: 1 }],
    }))
    const once = await store.writeBatch(info, claims)
    const twice = await store.writeBatch(info, claims)
    expect(once.map((o) => o.kind)).toEqual(['held', 'held', 'held', 'short'])
    expect(twice).toEqual(once)
    expect(await rig.seats.itemMap(event)).toEqual([{ item: 'ga', name: 'ga', total: 3, free: 0, held: 3, sold: 0 }])
  })

  it('runs on a Redis Cluster: every script of an event touches one slot ({lane:<event>}), answers are published', async () => {
    const started = await startSingleNodeCluster()
    try {
      const lane = new RedisClaimLane(started.cluster, luaScripts())
      const heard: LaneAnswer[] = []
      const unlisten = await lane.listen((_event, answer) => heard.push(answer))
      const claim = { id: crypto.randomUUID(), holder: 'k1', seats: ['A1'], items: [] }
      const entry = await lane.submit('cl-event', claim)
      expect(await lane.answer('cl-event', claim.id, entry)).toEqual({ claim: claim.id, holder: 'k1', status: 'pending' })
      // Not in that entry: nothing.
      expect(await lane.answer('cl-event', crypto.randomUUID(), entry)).toBeUndefined()
      expect(await lane.answer('cl-event', claim.id, '1-0')).toBeUndefined()
      await lane.ensureGroup('cl-event')
      expect(await lane.lease('cl-event', 'me', 1000)).toBe(true)
      expect(await lane.lease('cl-event', 'other', 1000)).toBe(false)
      const own = await lane.dedicated()
      const read = await own.lane.read('cl-event', 'me', 10, 100)
      expect(read).toEqual([{ id: read[0]?.id, kind: 'claims', claims: [claim] }])
      const decided: LaneAnswer = { claim: claim.id, holder: 'k1', outcome: { kind: 'taken', taken: ['A1'], nearest: [] } }
      expect(read[0]?.id).toBe(entry)
      await own.lane.settle('cl-event', [entry], [{ entry, answer: decided }], 60_000)
      expect(await lane.answer('cl-event', claim.id, entry)).toEqual(decided)
      for (let i = 0; i < 1000 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 10))
      expect(heard).toEqual([decided])
      // Settled entries are trimmed from the lane.
      expect(await started.cluster.xlen(laneKeys('cl-event').claims)).toBe(0)
      own.close()
      await unlisten()
    } finally {
      await started.stop()
    }
  })

  it('with Redis away a lane claim is a 503 with a code, never a 500', async () => {
    const event = `lane${Date.now().toString(36)}${seq++}`
    await seedEvent(db, { id: event, name: 'Lane night', room: 'sale', priceCents: 1000, rows: ['A'], seatsPerRow: 2 })
    const rig = await laneRig({
      db,
      redisUrl: `redis://127.0.0.1:${await freePort()}`,
      tokens,
      room: 'sale',
      laneEvents: [event],
      listen: false,
    })
    rigs.push(rig)
    const r = await rig.send('POST', `/events/${event}/holds`, 'd1', { seats: ['A1'] })
    expect(r.status).toBe(503)
    expect(r.body.error.code).toBe('ERR_LANE_UNAVAILABLE')
    expect(r.headers.get('retry-after')).not.toBeNull()
    // Nothing was claimed behind the lane's back.
    expect((await rig.seats.seatMap(event)).filter((x) => x.status !== 'free')).toEqual([])
  })
})
