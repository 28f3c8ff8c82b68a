// Scheduled rooms, the pre-queue and its draw (issue #13 §1–2; core/draw.ts, http/draws.ts), through
// the real edge on a manual clock: Node on the embedded store and on Redis, the Worker on Redis, and a
// Node and a Worker edge sharing one Redis. Before the pre-queue nobody gets a place; during it
// everybody joins, whenever they come, and nobody is let in; at the opening the pre-queue is in the
// order of the draw, later arrivals queue behind it, and admission runs at the room's rates. The
// published draw is checked with node:crypto alone and with the shipped script, and agrees with the
// order the edges used. A Redis loss during the pre-queue loses nobody.
import { execFile } from 'node:child_process'
import { createHash, createHmac, randomBytes } from 'node:crypto'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type EdgeRuntime, nodeRuntime, sharedClock, T0, type TestEdge, workerRuntime } from './support/runtimes.js'
import { rng } from './support/stepped.js'
import { Visitor } from './support/visitor.js'

const run = promisify(execFile)
const iso = (ms: number) => new Date(ms).toISOString()
const PREQUEUE_AT = T0 + 10_000
const OPENS_AT = T0 + 70_000
const ROOM = {
  totalActiveUsers: 1000,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 600,
  refreshSeconds: 5,
  // Long enough that visitors who joined early stay in the pre-queue without polling in this test.
  abandonAfterSeconds: 120,
  schedule: { prequeueAt: iso(PREQUEUE_AT).replace('Z', '+00:00'), opensAt: iso(OPENS_AT), closesAt: iso(T0 + 3600_000) },
}
const PREQUEUED = 40

type Status = Awaited<ReturnType<Visitor['status']>> & {
  ticket?: string
  schedule?: { prequeueAt: string; opensAt: string; prequeueInSeconds: number; opensInSeconds: number }
  draw?: { value: string; rank: number; check: string }
}
interface DrawAnswer {
  room: string
  state: string
  commitment: string | null
  seed?: string
  entrants?: number
  draw?: { rank: number; ticket: string; value: string }[]
}

/** The draw order as a third party works it out from the seed: node:crypto, not the edge's code. */
function expectedOrder(seed: string, room: string, tickets: string[]): string[] {
  const value = (t: string) => createHmac('sha256', Buffer.from(seed, 'hex')).update(`${room}:${t}`).digest('hex')
  return [...tickets].sort((a, b) => {
    const [va, vb] = [value(a).slice(0, 10), value(b).slice(0, 10)]
    return va < vb ? -1 : va > vb ? 1 : a < b ? -1 : 1
  })
}

interface Edges {
  edges: TestEdge[]
  /** Moves every edge's clock. */
  set(t: number): Promise<void>
}

function scheduleSuite(
  name: string,
  start: (room: Record<string, unknown>, origin: string) => Promise<Edges>,
  flush?: () => Promise<void>,
) {
  describe(`a scheduled sale (${name})`, () => {
    let origin: OriginServer
    const all: TestEdge[] = []
    beforeAll(async () => {
      origin = await startOrigin()
    })
    afterAll(async () => {
      for (const e of all) await e.close()
      await origin.close()
    })

    it('countdown, pre-queue, the draw at the opening, FIFO behind it; the published draw checks out', async () => {
      const id = `sched-${randomBytes(4).toString('hex')}`
      const { edges, set } = await start({ ...ROOM, id, paths: [`/${id}`] }, origin.url)
      all.push(...edges)
      const edge = (i: number) => edges[i % edges.length] as TestEdge
      const random = rng(7)

      // Before the pre-queue: the times and a countdown, no place.
      await set(T0)
      const early = new Visitor()
      const s0 = (await early.status(edge(0).app, id)) as Status
      expect(s0).toMatchObject({
        state: 'scheduled',
        position: null,
        schedule: { prequeueAt: ROOM.schedule.prequeueAt, opensAt: ROOM.schedule.opensAt },
      })
      expect(s0.schedule?.prequeueInSeconds).toBe(10)
      expect(s0.schedule?.opensInSeconds).toBe(70)
      expect(s0.nextPollSeconds).toBeLessThanOrEqual(10)
      expect(early.cookies.size).toBe(0)
      const page0 = await (await early.request(edge(0).app, `/${id}/`)).text()
      expect(page0).toContain('This sale has not opened yet')
      expect(page0).toContain('id="countdown" data-in="10"')
      const d0 = (await (await early.request(edge(0).app, `/_anteroom/draw?room=${id}`, { json: true })).json()) as DrawAnswer
      expect(d0).toMatchObject({ state: 'scheduled', commitment: null })

      // The pre-queue: visitors join over 50 s, on every edge; nobody is let in, nobody sees a position.
      const visitors: { v: Visitor; joined: number; ticket: string }[] = []
      const joins = Array.from({ length: PREQUEUED }, () => PREQUEUE_AT + Math.floor(random() * 50_000)).sort((a, b) => a - b)
      for (const [i, at] of joins.entries()) {
        await set(at)
        const v = new Visitor()
        const s = (await v.status(edge(i).app, id)) as Status
        expect(s).toMatchObject({ state: 'prequeue', position: null, ahead: null, etaSeconds: null })
        expect(s.waiting).toBe(i + 1)
        expect(typeof s.ticket).toBe('string')
        expect(s.draw).toBeUndefined()
        visitors.push({ v, joined: at, ticket: s.ticket as string })
      }
      const d1 = (await (await early.request(edge(0).app, `/_anteroom/draw?room=${id}`, { json: true })).json()) as DrawAnswer
      expect(d1).toMatchObject({ state: 'prequeue', entrants: PREQUEUED })
      expect(d1.commitment).toMatch(/^[0-9a-f]{64}$/)
      expect(d1.seed).toBeUndefined()
      const page1 = await (await visitors[0]?.v.request(edge(0).app, `/${id}/`))?.text()
      expect(page1).toContain('You are in the pre-queue')
      expect(page1).toContain('Arriving earlier gains nothing')
      // Just before the opening: still nobody in, whatever the rate would allow.
      await set(OPENS_AT - 1)
      for (const [i, x] of visitors.entries()) expect(((await x.v.status(edge(i).app, id)) as Status).state).toBe('prequeue')
      if (flush) {
        // A loss during the pre-queue: everybody comes back to their drawn place with their token.
        await flush()
        await set(OPENS_AT - 1)
        for (const [i, x] of visitors.entries()) expect(((await x.v.status(edge(i + 1).app, id)) as Status).state).toMatch(/prequeue/)
      }

      // The opening. Later arrivals queue behind the whole pre-queue. (After a loss, the room first
      // recovers: two refreshes and a second without admissions, while everybody comes back.)
      const waitingState = flush ? 'recovering' : 'queued'
      await set(OPENS_AT + 1)
      const late: Visitor[] = []
      for (let i = 0; i < 5; i++) {
        const v = new Visitor()
        const s = (await v.status(edge(i).app, id)) as Status
        expect([waitingState, 'admitted']).toContain(s.state)
        late.push(v)
      }
      const d2 = (await (await early.request(edge(1).app, `/_anteroom/draw?room=${id}`, { json: true })).json()) as DrawAnswer
      expect(d2.state).toBe('drawn')
      expect(
        createHash('sha256')
          .update(Buffer.from(d2.seed as string, 'hex'))
          .digest('hex'),
      ).toBe(d1.commitment)
      const order = expectedOrder(
        d2.seed as string,
        id,
        visitors.map((x) => x.ticket),
      )
      expect(d2.draw?.map((e) => e.ticket)).toEqual(order)
      // The edges used that order: positions (or admission) at the first poll after the opening.
      const seen: { ticket: string; position: number }[] = []
      for (const [i, x] of visitors.entries()) {
        const s = (await x.v.status(edge(i).app, id)) as Status
        expect(s.draw?.rank).toBe(order.indexOf(x.ticket) + 1)
        expect(s.draw?.value).toBe(d2.draw?.find((e) => e.ticket === x.ticket)?.value)
        seen.push({ ticket: x.ticket, position: s.state === 'admitted' ? 0 : (s.position as number) })
      }
      const admittedFirst = seen.filter((x) => x.position === 0).map((x) => x.ticket)
      const byPosition = seen.filter((x) => x.position > 0).sort((a, b) => a.position - b.position)
      expect([...order.filter((t) => admittedFirst.includes(t)), ...byPosition.map((x) => x.ticket)]).toEqual(order)
      expect(order.slice(0, admittedFirst.length).sort()).toEqual([...admittedFirst].sort())
      for (const [i, v] of late.entries()) {
        const s = (await v.status(edge(i).app, id)) as Status
        expect(s.state).toBe(waitingState)
        expect(s.position as number).toBeGreaterThan(PREQUEUED - admittedFirst.length)
        expect(s.draw).toBeUndefined()
      }
      // A visitor's rank does not follow when they joined (40 joins: |ρ| well under what order would give).
      const ranks = visitors.map((x) => order.indexOf(x.ticket))
      expect(
        Math.abs(
          spearman(
            visitors.map((_, i) => i),
            ranks,
          ),
        ),
      ).toBeLessThan(0.5)

      // The shipped script agrees.
      const dir = mkdtempSync(join(tmpdir(), 'anteroom-draw-'))
      writeFileSync(join(dir, 'draw.json'), JSON.stringify(d2))
      const { stdout, stderr } = await run(process.execPath, ['scripts/verify-draw.mjs', join(dir, 'draw.json'), '--list'])
      expect(stderr).toContain('OK')
      expect(stdout.trim().split('\n')).toEqual(order)
      // A tampered draw fails it.
      const swapped = structuredClone(d2)
      const [a, b] = [swapped.draw?.[0], swapped.draw?.[1]] as [{ ticket: string }, { ticket: string }]
      ;[a.ticket, b.ticket] = [b.ticket, a.ticket]
      writeFileSync(join(dir, 'bad.json'), JSON.stringify(swapped))
      await expect(run(process.execPath, ['scripts/verify-draw.mjs', join(dir, 'bad.json')])).rejects.toMatchObject({ code: 1 })
    })
  })
}

function spearman(x: number[], y: number[]): number {
  const n = x.length
  const rank = (a: number[]) => {
    const r = new Array<number>(n)
    a.map((v, i) => [v, i] as const)
      .sort((p, q) => p[0] - q[0])
      .forEach(([, i], k) => {
        r[i] = k
      })
    return r
  }
  const [rx, ry] = [rank(x), rank(y)]
  let d2 = 0
  for (let i = 0; i < n; i++) d2 += ((rx[i] as number) - (ry[i] as number)) ** 2
  return 1 - (6 * d2) / (n * (n * n - 1))
}

const single =
  (runtime: EdgeRuntime, redisUrl?: () => string) =>
  async (room: Record<string, unknown>, origin: string): Promise<Edges> => {
    const edge = await runtime.start({ rooms: [room], originUrl: origin, t0: T0, redisUrl: redisUrl?.() })
    return { edges: [edge], set: (t) => edge.clock.set(t) }
  }

let db = 960
const dbUrl = () => `${inject('redisUrl')}/${db++}`

scheduleSuite('node, embedded store', single(nodeRuntime))
scheduleSuite(
  'node, Redis',
  single(nodeRuntime, () => inject('redisUrl')),
)
scheduleSuite('worker, Redis', single(workerRuntime(() => inject('redisUrl'))))
{
  // A Node and a Worker edge on one Redis: they must agree on the draw, and on everybody's place.
  let url = ''
  scheduleSuite(
    'a Node and a Worker edge sharing Redis, Redis flushed during the pre-queue',
    async (room, origin) => {
      url = dbUrl()
      const node = await nodeRuntime.start({ rooms: [room], originUrl: origin, t0: T0, redisUrl: url })
      const worker = await workerRuntime(() => inject('redisUrl')).start({ rooms: [room], originUrl: origin, t0: T0, redisUrl: url })
      const clock = sharedClock([node.clock, worker.clock])
      return { edges: [node, worker], set: (t) => clock.set(t) }
    },
    async () => {
      const r = new Redis(url)
      await r.flushdb()
      r.disconnect()
    },
  )
}
