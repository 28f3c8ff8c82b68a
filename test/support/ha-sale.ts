// The sale the high-availability tests run on real processes (issue #12 §1; test/redis-sentinel.test.ts,
// test/redis-cluster.test.ts and their shared failover suite, test/contract/failover.ts): two Node edges
// over one store, visitors who arrive in a known order, poll while waiting and browse through the edges
// to a real origin once admitted. Checked at every step: admission in arrival order, the cap (the
// store's count and the visitors browsing at once), and places that only ever move forward; what broke a
// rule is collected in `findings` and asserted at the end, one rule at a time (expectTheRules).
// ANTEROOM_HA_TRACE=1 prints, step by step, the room's numbers and the sessions of the visitors whose
// admission a lossy failover lost.
import { afterAll, afterEach, beforeAll, expect } from 'vitest'
import { generateSigningJwk } from '../../src/core/admission-token.js'
import type { Edge } from '../../src/entry/build.js'
import { ManualClock } from './clock.js'
import { testEdge } from './edge.js'
import { type OriginServer, startOrigin } from './origin-server.js'
import { T0 } from './runtimes.js'
import { Visitor } from './visitor.js'

// The sale: every visitor arrives (in a known order), polls once per second while waiting, and once
// admitted browses for BROWSE_MS (one request a second through either edge to the origin), then leaves
// without a word. Sessions of SESSION_S are renewed at half time, so the browsers renew once.

const SESSION_S = 20
const ABANDON_S = 10
const REFRESH_S = 5
const BROWSE_MS = 15_000

export interface RoomPlan {
  id: string
  cap: number
  perMinute: number
  /** Visitors who arrive before the first step, 10 ms apart. */
  initial: number
  /** One more arrives at each of the first `late` steps, before that step's polls. */
  late: number
}

export class Tracked {
  readonly v = new Visitor()
  admittedAt: number | undefined
  lastPosition = Number.POSITIVE_INFINITY
  sub: string | undefined
  constructor(
    readonly room: string,
    readonly index: number,
  ) {}
}

/** What the sale saw that breaks a rule; empty lists when everything held. */
export interface Findings {
  /** A waiting visitor's place moved back. */
  positionRises: string[]
  /** Admitted out of arrival order: somebody admitted while an earlier arrival still waited. */
  fifoBreaks: string[]
  /** The store counted more active sessions than the cap. */
  storeOverCap: string[]
  /** More admitted visitors browsed in one second than the cap. */
  browsingOverCap: string[]
  /** Visitors never admitted by the end. */
  neverAdmitted: string[]
  /** Anything else unexpected: a browse that did not reach the origin, a state that should not be. */
  unexpected: string[]
}

export interface Counts {
  busyPolls: number
  /** Answers 'recovering': the store noticed a loss and holds admissions back for a while. */
  recovering: number
  polls: number
  browses: number
  /** Per room: the polls answered 503 (busy). */
  busyByRoom: Map<string, number>
}

function jwtSub(token: string | undefined): string | undefined {
  if (token === undefined) return undefined
  const payload = token.split('.')[1]
  return payload === undefined ? undefined : (JSON.parse(Buffer.from(payload, 'base64url').toString()) as { sub: string }).sub
}

export class Sale {
  readonly visitors = new Map<string, Tracked[]>()
  readonly findings: Findings = {
    positionRises: [],
    fifoBreaks: [],
    storeOverCap: [],
    browsingOverCap: [],
    neverAdmitted: [],
    unexpected: [],
  }
  readonly counts: Counts = { busyPolls: 0, recovering: 0, polls: 0, browses: 0, busyByRoom: new Map() }
  step = 0

  constructor(
    readonly rooms: RoomPlan[],
    readonly edges: Edge[],
    readonly clock: ManualClock,
  ) {
    for (const r of rooms) this.visitors.set(r.id, [])
  }

  pick(): Edge {
    return this.edges[Math.floor(Math.random() * this.edges.length)] as Edge
  }

  now(): number {
    return this.clock.now()
  }

  /** One arrival: its first poll must succeed, so its place in the order is known. */
  async arrive(room: RoomPlan): Promise<void> {
    const list = this.visitors.get(room.id) as Tracked[]
    const t = new Tracked(room.id, list.length)
    list.push(t)
    const res = await t.v.request(this.pick().app, `/_anteroom/status?room=${room.id}`, { json: true })
    expect(res.status, `arrival ${t.index} in ${room.id}`).toBe(200)
    this.record(t, (await res.json()) as { state: string; position: number | null })
  }

  /** Every time a waiting visitor was told a later place: by how much, and whether the store was recovering. */
  readonly rises: { amount: number; recovering: boolean }[] = []

  private record(t: Tracked, body: { state: string; position: number | null }): void {
    if (body.state === 'admitted') {
      t.admittedAt = this.now()
      t.sub = jwtSub(t.v.cookies.get(`anteroom_a_${t.room}`))
    } else if ((body.state === 'queued' || body.state === 'recovering') && body.position !== null) {
      // recovering: the store noticed it forgot the room and admits nobody for a while; places hold.
      if (body.state === 'recovering') this.counts.recovering++
      if (body.position > t.lastPosition) {
        this.rises.push({ amount: body.position - t.lastPosition, recovering: body.state === 'recovering' })
        this.findings.positionRises.push(
          `${t.room} #${t.index} at step ${this.step}: place ${t.lastPosition} -> ${body.position} (+${body.position - t.lastPosition})`,
        )
      }
      t.lastPosition = body.position
    } else {
      this.findings.unexpected.push(`${t.room} #${t.index} at step ${this.step}: state ${body.state}`)
    }
  }

  async arrivals(): Promise<void> {
    for (const r of this.rooms) {
      for (let i = 0; i < r.initial; i++) {
        this.clock.advance(10)
        await this.arrive(r)
      }
    }
  }

  /**
   * Everybody acts once at the current time: the waiting poll, the admitted browse. Polls may answer
   * 503 (busy) only when `storeMayFail`; browses must reach the origin whatever the store does.
   */
  async round(storeMayFail: boolean): Promise<void> {
    const now = this.now()
    const browsing = new Map<string, number>()
    await Promise.all(
      [...this.visitors.values()].flat().map(async (t) => {
        if (t.admittedAt === undefined) {
          this.counts.polls++
          const res = await t.v.request(this.pick().app, `/_anteroom/status?room=${t.room}`, { json: true })
          const body = (await res.json()) as { state: string; position: number | null }
          if (res.status === 503) {
            this.counts.busyPolls++
            this.counts.busyByRoom.set(t.room, (this.counts.busyByRoom.get(t.room) ?? 0) + 1)
            if (!storeMayFail) this.findings.unexpected.push(`${t.room} #${t.index} at step ${this.step}: 503 with the store up`)
            return
          }
          this.record(t, body)
          // Admitted by this poll: browsing from now on.
          if (t.admittedAt === now) browsing.set(t.room, (browsing.get(t.room) ?? 0) + 1)
        } else if (now - t.admittedAt < BROWSE_MS) {
          this.counts.browses++
          const res = await t.v.request(this.pick().app, `/${t.room}/page`)
          const seen = res.status === 200 ? ((await res.json()) as { headers?: Record<string, string> }) : undefined
          if (seen?.headers?.['anteroom-admission'] === undefined)
            this.findings.unexpected.push(`${t.room} #${t.index} at step ${this.step}: browse answered ${res.status}, not by the origin`)
          else browsing.set(t.room, (browsing.get(t.room) ?? 0) + 1)
        }
      }),
    )
    for (const r of this.rooms) {
      const n = browsing.get(r.id) ?? 0
      if (n > r.cap) this.findings.browsingOverCap.push(`${r.id} at step ${this.step}: ${n} admitted visitors browsing, cap ${r.cap}`)
    }
    this.checkFifo()
  }

  /** The admitted are always the first arrivals: nobody admitted while an earlier arrival waits. */
  checkFifo(): void {
    for (const [room, list] of this.visitors) {
      const firstWaiting = list.findIndex((t) => t.admittedAt === undefined)
      if (firstWaiting < 0) continue
      const passed = list.slice(firstWaiting + 1).filter((t) => t.admittedAt !== undefined)
      if (passed.length > 0)
        this.findings.fifoBreaks.push(
          `${room} at step ${this.step}: #${passed.map((t) => t.index).join(', #')} admitted while #${firstWaiting} waits`,
        )
    }
  }

  /** The store's count after a step; skipped for a room whose store does not answer. */
  async checkStore(): Promise<Map<string, { active: number; waiting: number } | undefined>> {
    const out = new Map<string, { active: number; waiting: number } | undefined>()
    for (const r of this.rooms) {
      try {
        const s = await (this.edges[0] as Edge).deps.queue.stats(r.id, this.now())
        out.set(r.id, s)
        if (s.active > r.cap)
          this.findings.storeOverCap.push(`${r.id} at step ${this.step}: the store counts ${s.active} active, cap ${r.cap}`)
      } catch {
        out.set(r.id, undefined)
      }
    }
    return out
  }

  /** Visitors whose sessions ANTEROOM_HA_TRACE=1 follows step by step, with the room's numbers. */
  readonly traced: Tracked[] = []

  /** One second of the sale: late arrivals, then everybody at once, then the store's count. */
  async nextStep(concurrently?: () => Promise<unknown>, storeMayFail = false): Promise<void> {
    this.step++
    this.clock.advance(1000)
    for (const r of this.rooms) if (this.step <= r.late) await this.arrive(r)
    await Promise.all([this.round(storeMayFail || concurrently !== undefined), concurrently?.()])
    const stats = await this.checkStore()
    if (process.env.ANTEROOM_HA_TRACE && this.traced.length > 0) {
      const room = (this.traced[0] as Tracked).room
      const redis = (this.edges[0] as Edge).redis
      const sessions = await Promise.all(
        this.traced.map(
          async (t) => `#${t.index}:${(await redis?.zscore(`anteroom:{${room}}:act`, t.sub as string).catch(() => 'err')) ?? '-'}`,
        ),
      )
      const admitted = (this.visitors.get(room) as Tracked[]).filter((t) => t.admittedAt === this.now()).map((t) => t.index)
      console.log(`step ${this.step} t=${this.now() - T0} ${JSON.stringify(stats.get(room))} admitted ${admitted} sessions ${sessions}`)
    }
  }

  /** Whether the next step will admit somebody in `room`: somebody waits and a slot is free then. */
  async willAdmit(room: RoomPlan): Promise<boolean> {
    const s = await (this.edges[0] as Edge).deps.queue.stats(room.id, this.now() + 1000)
    return s.waiting > 0 && s.active < room.cap
  }

  done(): boolean {
    return [...this.visitors.values()].flat().every((t) => t.admittedAt !== undefined)
  }

  async toTheEnd(maxSteps = 600): Promise<void> {
    while (!this.done() && this.step < maxSteps) await this.nextStep()
    for (const t of [...this.visitors.values()].flat())
      if (t.admittedAt === undefined) this.findings.neverAdmitted.push(`${t.room} #${t.index} (place ${t.lastPosition})`)
  }

  /**
   * Rounds at the frozen time while the master is failing over (visitors keep polling and browsing),
   * until the failover is done and every edge answers for `room` again. Returns when each edge first
   * answered, in ms since `since` (the kill).
   */
  async rideOut(room: string, since: number, failover: Promise<unknown>): Promise<number[]> {
    let over = false
    let failed: unknown
    void failover.then(
      () => {
        over = true
      },
      (err) => {
        failed = err
      },
    )
    const answered = this.edges.map(() => -1)
    const deadline = Date.now() + 45_000
    while (!over || answered.some((t) => t < 0)) {
      if (failed !== undefined) throw new Error(`the failover failed: ${String(failed)}`)
      if (Date.now() > deadline)
        throw new Error(
          `the edges did not answer within 45 s of the kill (failover done: ${over}; clients ${this.edges.map((e) => e.redis?.status)})`,
        )
      await this.round(true)
      await new Promise((r) => setTimeout(r, 50))
      if (!over) continue
      await Promise.all(
        this.edges.map(async (e, i) => {
          if (answered[i] !== -1) return
          try {
            await e.deps.queue.stats(room, this.now())
            answered[i] = Date.now() - since
          } catch {
            // still away
          }
        }),
      )
    }
    await this.checkStore()
    return answered
  }
}

export function roomSettings(r: RoomPlan) {
  return {
    id: r.id,
    paths: [`/${r.id}`],
    totalActiveUsers: r.cap,
    newUsersPerMinute: r.perMinute,
    sessionDurationSeconds: SESSION_S,
    abandonAfterSeconds: ABANDON_S,
    refreshSeconds: REFRESH_S,
    onStoreError: 'closed',
  }
}

/** What the sale's tests share: the origin the edges proxy to, and what is closed after each test. */
export interface SaleEnvironment {
  /** The echoing origin, started before the tests of the block that made the environment. */
  readonly origin: OriginServer
  /** Two Node edges over `redisUrl` with one manual clock and one signing key, closed after the test. */
  twoEdges(rooms: RoomPlan[], redisUrl: string): Promise<{ edges: Edge[]; clock: ManualClock }>
  /** Closes `c` after the current test (a Worker edge). */
  closeAfterTest(c: { close(): Promise<void> }): void
}

/** Registers the hooks of a block of sale tests (call it at the top of a file or a describe). */
export function saleEnvironment(): SaleEnvironment {
  let origin: OriginServer | undefined
  const toClose: { close(): Promise<void> }[] = []
  beforeAll(async () => {
    origin = await startOrigin()
  })
  afterAll(async () => {
    for (const c of toClose.splice(0)) await c.close()
    await origin?.close()
  })
  afterEach(async () => {
    for (const c of toClose.splice(0)) await c.close()
  })
  const started = (): OriginServer => {
    if (origin === undefined) throw new Error('the origin starts in beforeAll')
    return origin
  }
  return {
    get origin() {
      return started()
    },
    async twoEdges(rooms, redisUrl) {
      const clock = new ManualClock(T0)
      const signingKeys = [await generateSigningJwk(`ha-${Date.now().toString(36)}`)]
      const make = () => testEdge({ rooms: rooms.map(roomSettings), originUrl: started().url, redisUrl, clock, signingKeys })
      const edges = [await make(), await make()]
      toClose.push(...edges)
      return { edges, clock }
    },
    closeAfterTest(c) {
      toClose.push(c)
    },
  }
}

export function report(label: string, sale: Sale, extra: Record<string, unknown>): void {
  const f = sale.findings
  console.log(
    `[redis-ha] ${label}: ${sale.step} steps, ${sale.counts.polls} polls (${sale.counts.busyPolls} answered 503 busy), ` +
      `${sale.counts.browses} browses, ${sale.counts.recovering} answers 'recovering'; ${JSON.stringify(extra)}\n` +
      Object.entries(f)
        .map(([k, v]) => `  ${k}: ${v.length}${v.length > 0 ? ` — ${(v as string[]).slice(0, 6).join('; ')}` : ''}`)
        .join('\n'),
  )
}

/** Places only move forward: no waiting visitor is ever told a later place than before. */
export function expectPlaces(sale: Sale): void {
  expect(sale.findings.positionRises, 'places only move forward').toEqual([])
}

/** The cap, as the store counts and as the visitors browsing at once. */
export function expectTheCap(sale: Sale): void {
  const f = sale.findings
  expect(f.storeOverCap, 'the cap, as the store counts').toEqual([])
  expect(f.browsingOverCap, 'the cap, as visitors browsing at once').toEqual([])
}

/** Every rule, one assertion each, so a failure says which one broke and where. */
export function expectTheRules(sale: Sale): void {
  expectOrder(sale)
  expectPlaces(sale)
  expectTheCap(sale)
}

/** Arrival order and the end of the sale. */
export function expectOrder(sale: Sale): void {
  const f = sale.findings
  expect(f.unexpected, 'unexpected answers').toEqual([])
  expect(f.fifoBreaks, 'admitted in arrival order').toEqual([])
  expect(f.neverAdmitted, 'everybody admitted in the end').toEqual([])
}
