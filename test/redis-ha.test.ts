// High availability on real processes (issue #12 §1): two Node edges over a Redis Sentinel set (a
// primary, a replica, three redis-sentinel) and over a six-node Redis Cluster (three masters with a
// replica each, three rooms on three masters). Mid-sale, while visitors poll and admitted visitors
// browse through the edges to a real origin, a master is killed by pid; the replica is promoted, the
// edges follow it, and the sale goes on to the end. Checked at every step: admission in arrival order,
// the cap (the store's count and the visitors browsing at once), and places that only ever move forward.
//
// Replication is asynchronous, so a failover can lose the last writes. The lossy variants make that
// happen on purpose (the replica is frozen and cut off for one step, then the master dies) and hold
// the edges to the same rules, except that places may move back while the store recovers from the
// loss (expectPlacesAcrossALoss says by how much and why). ANTEROOM_HA_TRACE=1
// prints, step by step, the room's numbers and the sessions of the visitors whose admission was lost.
import { type Cluster, Redis } from 'ioredis'
import { afterAll, afterEach, beforeAll, describe, expect, inject, it } from 'vitest'
import { loadConfig } from '../src/config/index.js'
import { parseRedisUrl } from '../src/config/redis-url.js'
import { generateSigningJwk } from '../src/core/admission-token.js'
import type { Edge } from '../src/entry/build.js'
import { ManualClock } from './support/clock.js'
import { testEdge } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { type SixNodeCluster, startSixNodeCluster } from './support/redis-cluster.js'
import { ask, startSentinelSet, type TestSentinelSet, until } from './support/redis-sentinel.js'
import type { RedisServer } from './support/redis-server.js'
import { T0, workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

describe('ANTEROOM_REDIS_URL names one server, a Sentinel set or a Cluster', () => {
  it('parses the three forms', () => {
    expect(parseRedisUrl('redis://127.0.0.1:6379/2')).toEqual({ kind: 'single', url: 'redis://127.0.0.1:6379/2' })
    expect(parseRedisUrl('redis+sentinel://10.0.0.1:26379,10.0.0.2,[::1]:26380/mymaster')).toEqual({
      kind: 'sentinel',
      sentinels: [
        { host: '10.0.0.1', port: 26379 },
        { host: '10.0.0.2', port: 26379 },
        { host: '::1', port: 26380 },
      ],
      name: 'mymaster',
      db: 0,
    })
    expect(parseRedisUrl('redis+sentinel://:p%40ss@s1:26379/main/3')).toMatchObject({ password: 'p@ss', name: 'main', db: 3 })
    expect(parseRedisUrl('redis+cluster://app:secret@n1:7000,n2:7001,n3')).toEqual({
      kind: 'cluster',
      nodes: [
        { host: 'n1', port: 7000 },
        { host: 'n2', port: 7001 },
        { host: 'n3', port: 6379 },
      ],
      username: 'app',
      password: 'secret',
    })
  })

  it.each([
    ['http://x:1', /ANTEROOM_REDIS_URL: must start with redis:\/\/, rediss:\/\/, redis\+sentinel:\/\//],
    ['not a url', /ANTEROOM_REDIS_URL: must be a URL/],
    ['redis+sentinel://s1:26379,s2:26379', /ANTEROOM_REDIS_URL: redis\+sentinel:\/\/ needs the master name after the hosts/],
    ['redis+sentinel://s1:26379/main/x', /ANTEROOM_REDIS_URL: the database after the master name must be a number/],
    ['redis+sentinel://s1:99999/main', /ANTEROOM_REDIS_URL: host 1 \("s1:99999"\): the port must be from 1 to 65535/],
    ['redis+sentinel://s1:1,,s2:2/main', /ANTEROOM_REDIS_URL: host 2 \(""\) must be host or host:port/],
    ['redis+cluster://n1:7000,n2:7001/1', /ANTEROOM_REDIS_URL: a Redis Cluster has only database 0/],
    ['redis+cluster://', /ANTEROOM_REDIS_URL: redis\+cluster:\/\/ needs at least one host:port/],
    ['redis+cluster://n1:7000?tls=1', /ANTEROOM_REDIS_URL: redis\+cluster:\/\/ takes no query/],
  ])('refuses %s, naming the field', (url, message) => {
    expect(() => loadConfig({ ANTEROOM_REDIS_URL: url })).toThrow(message)
  })

  it('never repeats the password in an error', () => {
    expect(() => loadConfig({ ANTEROOM_REDIS_URL: 'redis+cluster://u:hunter2@n1:70000' })).toThrow(/port must be/)
    try {
      loadConfig({ ANTEROOM_REDIS_URL: 'redis+cluster://u:hunter2@n1:70000' })
    } catch (err) {
      expect(String(err)).not.toContain('hunter2')
    }
  })
})

// ---------------------------------------------------------------------------------------------------
// The sale: every visitor arrives (in a known order), polls once per second while waiting, and once
// admitted browses for BROWSE_MS (one request a second through either edge to the origin), then leaves
// without a word. Sessions of SESSION_S are renewed at half time, so the browsers renew once.

const SESSION_S = 20
const ABANDON_S = 10
const REFRESH_S = 5
const BROWSE_MS = 15_000

interface RoomPlan {
  id: string
  cap: number
  perMinute: number
  /** Visitors who arrive before the first step, 10 ms apart. */
  initial: number
  /** One more arrives at each of the first `late` steps, before that step's polls. */
  late: number
}

class Tracked {
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
interface Findings {
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

interface Counts {
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

class Sale {
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

/** How many of these admitted visitors the replica on `port` has no session for (read before its promotion). */
async function missingOn(port: number, room: string, admitted: Tracked[]): Promise<number> {
  const replica = new Redis({ host: '127.0.0.1', port, maxRetriesPerRequest: 0 })
  replica.on('error', () => {})
  try {
    // A cluster replica serves reads of its master's slots only after READONLY; elsewhere it is refused.
    await replica.call('READONLY').catch(() => {})
    let missing = 0
    for (const t of admitted) if ((await replica.zscore(`anteroom:{${room}}:act`, t.sub as string)) === null) missing++
    return missing
  } finally {
    replica.disconnect()
  }
}

/**
 * Makes the next failover lose writes, as asynchronous replication can: freezes the replica (SIGSTOP by
 * pid) and cuts its link on the primary (CLIENT KILL TYPE replica), so what follows reaches the primary
 * alone; runs steps until one admits somebody in `room` (at most 5, well inside the sentinels' and the
 * cluster's 1-s down-after); then kills the primary, thaws the replica, reads on it what it lacks, and
 * lets the sale ride out the failover.
 */
async function loseTheLastSteps(
  sale: Sale,
  room: RoomPlan,
  o: { primary: number; replica: RedisServer; kill(afterKill: () => void): Promise<unknown> },
): Promise<{ lostSteps: number; lost: { admitted: number; missing: number }; failover: unknown; edgesAnsweredAfterMs: number[] }> {
  process.kill(o.replica.pid, 'SIGSTOP')
  let thawed = false
  const thaw = () => {
    if (!thawed) process.kill(o.replica.pid, 'SIGCONT')
    thawed = true
  }
  try {
    await ask(o.primary, 'CLIENT', 'KILL', 'TYPE', 'replica')
    const admitted: Tracked[] = []
    let lostSteps = 0
    while (admitted.length === 0 && lostSteps < 5) {
      await sale.nextStep() // written to the primary alone
      lostSteps++
      admitted.push(...(sale.visitors.get(room.id) as Tracked[]).filter((t) => t.admittedAt === sale.now()))
    }
    const killedAt = Date.now()
    const failing = o.kill(thaw)
    await until('the primary killed and the replica thawed', async () => thawed)
    // The replica, about to be promoted, never saw those steps: their admissions are not there.
    const lost = { admitted: admitted.length, missing: await missingOn(o.replica.port, room.id, admitted) }
    sale.traced.push(...admitted)
    const edgesAnsweredAfterMs = await sale.rideOut(room.id, killedAt, failing)
    return { lostSteps, lost, failover: await failing, edgesAnsweredAfterMs }
  } finally {
    thaw()
  }
}

function roomSettings(r: RoomPlan) {
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

let origin: OriginServer
const toClose: { close(): Promise<void> }[] = []

beforeAll(async () => {
  origin = await startOrigin()
})
afterAll(async () => {
  await origin.close()
})
afterEach(async () => {
  for (const c of toClose.splice(0)) await c.close()
})

async function twoEdges(rooms: RoomPlan[], redisUrl: string): Promise<{ edges: Edge[]; clock: ManualClock }> {
  const clock = new ManualClock(T0)
  const signingKeys = [await generateSigningJwk(`ha-${Date.now().toString(36)}`)]
  const make = () => testEdge({ rooms: rooms.map(roomSettings), originUrl: origin.url, redisUrl, clock, signingKeys })
  const edges = [await make(), await make()]
  toClose.push(...edges)
  return { edges, clock }
}

function report(label: string, sale: Sale, extra: Record<string, unknown>): void {
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
function expectPlaces(sale: Sale): void {
  expect(sale.findings.positionRises, 'places only move forward').toEqual([])
}

/** The cap, as the store counts and as the visitors browsing at once. */
function expectTheCap(sale: Sale): void {
  const f = sale.findings
  expect(f.storeOverCap, 'the cap, as the store counts').toEqual([])
  expect(f.browsingOverCap, 'the cap, as visitors browsing at once').toEqual([])
}

/** Every rule, one assertion each, so a failure says which one broke and where. */
function expectTheRules(sale: Sale): void {
  expectOrder(sale)
  expectPlaces(sale)
  expectTheCap(sale)
}

/** Arrival order and the end of the sale. */
function expectOrder(sale: Sale): void {
  const f = sale.findings
  expect(f.unexpected, 'unexpected answers').toEqual([])
  expect(f.fifoBreaks, 'admitted in arrival order').toEqual([])
  expect(f.neverAdmitted, 'everybody admitted in the end').toEqual([])
}

/**
 * What a lossy failover costs: the visitors whose admissions the promoted replica lost are back at the
 * head of its line, and the store cannot know they were admitted until their sessions come back (their
 * renewal takes them out of the line). So a waiting visitor's place may move back, but only while the
 * store is recovering from the loss (it admits nobody meanwhile) and by no more than the lost admissions.
 */
function expectPlacesAcrossALoss(sale: Sale, lostAdmissions: number): void {
  for (const rise of sale.rises) {
    expect(rise.recovering, 'a place moves back only while the store recovers').toBe(true)
    expect(rise.amount, 'by no more than the admissions the store lost').toBeLessThanOrEqual(lostAdmissions)
  }
}

// ---------------------------------------------------------------------------------------------------

describe('Redis Sentinel: a primary, a replica, three sentinels', () => {
  let set: TestSentinelSet | undefined
  afterEach(async () => {
    await set?.stop()
    set = undefined
  })

  const room: RoomPlan = { id: 'ha-sentinel', cap: 10, perMinute: 60, initial: 50, late: 20 }

  it('the primary dies mid-sale: the replica is promoted, both edges follow it, and the sale keeps every rule', async () => {
    set = await startSentinelSet()
    const { edges, clock } = await twoEdges([room], set.url)
    const sale = new Sale([room], edges, clock)
    await sale.arrivals()
    while (sale.step < 25) await sale.nextStep()
    // The kill lands among this step's polls and browses; visitors go on polling and browsing meanwhile.
    const killedAt = Date.now()
    const failing = set.killMaster()
    await sale.nextStep(undefined, true)
    const followedMs = await sale.rideOut(room.id, killedAt, failing)
    const failover = await failing
    // Both edges are connected to the promoted replica, the master the sentinels name now.
    expect(failover.newPort).not.toBe(failover.oldPort)
    expect(await set.master()).toBe(failover.newPort)
    expect(edges.map((e) => (e.redis as Redis).stream.remotePort)).toEqual([failover.newPort, failover.newPort])
    await sale.toTheEnd()
    report('sentinel failover', sale, { failover, edgesAnsweredAfterMs: followedMs })
    expect(sale.counts.busyPolls).toBeGreaterThan(0) // the outage was real
    expectTheRules(sale)
  })

  // A lossy failover: the last steps' writes reach only the primary (the replica is frozen and its link
  // cut), then the primary dies and the replica, those steps behind, is promoted. One sale, two verdicts.
  describe('a lossy failover: the last steps before the kill never reached the replica', () => {
    let lossySet: TestSentinelSet | undefined
    let sale: Sale
    let lossy: Awaited<ReturnType<typeof loseTheLastSteps>>
    beforeAll(async () => {
      lossySet = await startSentinelSet()
      const s = lossySet
      const { edges, clock } = await twoEdges([room], s.url)
      sale = new Sale([room], edges, clock)
      await sale.arrivals()
      while (sale.step < 25 || !(await sale.willAdmit(room))) await sale.nextStep()
      const primary = await s.master()
      const replica = s.nodes.find((n) => n.port !== primary) as RedisServer
      lossy = await loseTheLastSteps(sale, room, { primary, replica, kill: (afterKill) => s.killMaster({ afterKill }) })
      await sale.toTheEnd()
      report('sentinel lossy failover', sale, lossy)
    })
    afterAll(async () => {
      await lossySet?.stop()
    })

    it('the promoted replica lacks those steps; arrival order holds and everybody is admitted', () => {
      expect(lossy.lost.admitted).toBeGreaterThan(0)
      expect(lossy.lost.missing, 'the failover lost those steps: their admissions are not on the promoted replica').toBe(
        lossy.lost.admitted,
      )
      expectOrder(sale)
    })

    it('the cap holds across it (the store notices it went back in time and recovers)', () => {
      expect(sale.counts.recovering).toBeGreaterThan(0)
      expectTheCap(sale)
    })

    it('a place moves back only while the store recovers, by no more than the admissions it lost', () => {
      expectPlacesAcrossALoss(sale, lossy.lost.admitted)
    })
  })

  it('a primary that hangs (frozen, its connections open): the edges drop it at +switch-master and follow the promotion', async () => {
    set = await startSentinelSet()
    const hang: RoomPlan = { ...room, id: 'ha-hang', cap: 1 }
    const { edges } = await twoEdges([hang], set.url)
    const [a, b] = edges as [Edge, Edge]
    const first = new Visitor()
    const second = new Visitor()
    expect(await first.status(a.app, hang.id)).toMatchObject({ state: 'admitted' })
    expect(await second.status(b.app, hang.id)).toMatchObject({ state: 'queued', position: 1 })
    let frozen = false
    const freezing = set.freezeMaster({ afterFreeze: () => (frozen = true) })
    await until('the primary frozen', async () => frozen)
    const frozenAt = Date.now()
    let busy = 0
    const answeredMs = [-1, -1]
    await until('both edges answering from the promoted replica', async () => {
      for (const [i, e] of edges.entries()) {
        if ((answeredMs[i] as number) >= 0) continue
        const res = await second.request(e.app, `/_anteroom/status?room=${hang.id}`, { json: true })
        if (res.status === 503) busy++
        if (res.status !== 200) continue
        expect(await res.json()).toMatchObject({ state: 'queued', position: 1, waiting: 1 })
        answeredMs[i] = Date.now() - frozenAt
      }
      return answeredMs.every((t) => t >= 0)
    })
    const failover = await freezing
    console.log(`[redis-ha] frozen primary: ${busy} polls answered 503 busy; edges answered again after ${answeredMs} ms`, failover)
    expect(busy).toBeGreaterThan(0)
    expect((await first.request(b.app, `/${hang.id}/page`)).status).toBe(200)
    // The old primary wakes up: the sentinels make it a replica; the edges stay on the new master.
    await failover.thaw()
    await until('the old primary turned replica', async () => ((await ask(failover.oldPort, 'ROLE')) as unknown[])[0] === 'slave')
    for (const e of edges) expect(await second.status(e.app, hang.id)).toMatchObject({ state: 'queued', position: 1 })
  })

  it('a Worker edge over Sentinel: its StoreRelay finds the master through the sentinels and follows a failover', async () => {
    set = await startSentinelSet()
    const worker = await workerRuntime(() => inject('redisUrl')).start({
      rooms: [roomSettings({ ...room, id: 'ha-worker', cap: 1 })],
      originUrl: origin.url,
      redisUrl: set.url,
    })
    toClose.push(worker)
    const first = new Visitor()
    const second = new Visitor()
    expect(await first.status(worker.app, 'ha-worker')).toMatchObject({ state: 'admitted' })
    expect(await second.status(worker.app, 'ha-worker')).toMatchObject({ state: 'queued', position: 1 })
    let killed = false
    const failing = set.killMaster({ afterKill: () => (killed = true) })
    await until('the primary killed', async () => killed)
    const killedAt = Date.now()
    let busy = 0
    let answeredMs = -1
    await until('the Worker answering from the promoted replica', async () => {
      const res = await second.request(worker.app, '/_anteroom/status?room=ha-worker', { json: true })
      if (res.status === 503) busy++
      if (res.status !== 200) return false
      expect(await res.json()).toMatchObject({ state: 'queued', position: 1, waiting: 1 })
      answeredMs = Date.now() - killedAt
      return true
    })
    const failover = await failing
    console.log(
      `[redis-ha] Worker over Sentinel: ${busy} polls answered 503 busy; answered again ${answeredMs} ms after the kill`,
      failover,
    )
    expect(busy).toBeGreaterThan(0)
    // The admitted visitor browses on through the failover: the Worker checks the token, not Redis.
    expect((await first.request(worker.app, '/ha-worker/page')).status).toBe(200)
    const master = await set.masterClient()
    expect(await master.zcard('anteroom:{ha-worker}:q')).toBe(1)
    master.disconnect()
  })
})

// ---------------------------------------------------------------------------------------------------

describe('Redis Cluster: three masters with a replica each, three rooms on three masters', () => {
  let cluster: SixNodeCluster | undefined
  afterEach(async () => {
    await cluster?.stop()
    cluster = undefined
  })

  /** Three room ids whose hash tags land on three different masters. */
  async function roomsOnThreeMasters(c: SixNodeCluster): Promise<{ rooms: RoomPlan[]; masters: number[] }> {
    const rooms: RoomPlan[] = []
    const masters: number[] = []
    for (let i = 0; rooms.length < 3 && i < 100; i++) {
      const id = `ha-c${i}`
      const master = await c.masterOf(await c.keySlot(`anteroom:{${id}}:q`))
      if (masters.includes(master)) continue
      masters.push(master)
      rooms.push({ id, cap: 6, perMinute: 36, initial: 24, late: 12 })
    }
    expect(new Set(masters).size).toBe(3)
    return { rooms, masters }
  }

  it("one master fails over mid-sale: its room rides it out, the others don't notice, every rule holds", async () => {
    cluster = await startSixNodeCluster()
    const { rooms, masters } = await roomsOnThreeMasters(cluster)
    const { edges, clock } = await twoEdges(rooms, cluster.url)
    const sale = new Sale(rooms, edges, clock)
    await sale.arrivals()
    while (sale.step < 25) await sale.nextStep()
    const failing = rooms[0] as RoomPlan
    const busyBefore = new Map(sale.counts.busyByRoom)
    const killedAt = Date.now()
    const failingOver = cluster.failMaster(masters[0] as number)
    await sale.nextStep(undefined, true)
    const followedMs = await sale.rideOut(failing.id, killedAt, failingOver)
    const failover = await failingOver
    const busyDuring = Object.fromEntries(rooms.map((r) => [r.id, (sale.counts.busyByRoom.get(r.id) ?? 0) - (busyBefore.get(r.id) ?? 0)]))
    // The promoted replica serves the room's slot, and both edges' slot maps say so.
    const slot = await cluster.keySlot(`anteroom:{${failing.id}}:q`)
    expect(await cluster.masterOf(slot)).toBe(failover.newPort)
    for (const e of edges) expect((e.redis as Cluster).slots[slot]?.[0]).toBe(`127.0.0.1:${failover.newPort}`)
    await sale.toTheEnd()
    report('cluster failover', sale, { failover, edgesAnsweredAfterMs: followedMs, busyPollsDuringFailover: busyDuring })
    expect(busyDuring[failing.id]).toBeGreaterThan(0) // the outage was real for its room
    // The rooms on the other masters answered throughout (cluster-require-full-coverage no).
    expect(rooms.slice(1).map((r) => busyDuring[r.id])).toEqual([0, 0])
    expectTheRules(sale)
  })

  describe('a lossy failover of one master: the last steps before the kill never reached its replica', () => {
    let lossyCluster: SixNodeCluster | undefined
    let sale: Sale
    let lossy: Awaited<ReturnType<typeof loseTheLastSteps>>
    beforeAll(async () => {
      lossyCluster = await startSixNodeCluster()
      const c = lossyCluster
      const { rooms, masters } = await roomsOnThreeMasters(c)
      const { edges, clock } = await twoEdges(rooms, c.url)
      sale = new Sale(rooms, edges, clock)
      const failing = rooms[0] as RoomPlan
      await sale.arrivals()
      while (sale.step < 25 || !(await sale.willAdmit(failing))) await sale.nextStep()
      const primary = masters[0] as number
      const replicaPort = await c.replicaOf(primary)
      const replica = c.nodes.find((n) => n.port === replicaPort)?.server as RedisServer
      lossy = await loseTheLastSteps(sale, failing, { primary, replica, kill: (afterKill) => c.failMaster(primary, { afterKill }) })
      await sale.toTheEnd()
      report('cluster lossy failover', sale, lossy)
    })
    afterAll(async () => {
      await lossyCluster?.stop()
    })

    it('the promoted replica lacks those steps; arrival order holds in every room and everybody is admitted', () => {
      expect(lossy.lost.admitted).toBeGreaterThan(0)
      expect(lossy.lost.missing, 'the failover lost those steps: their admissions are not on the promoted replica').toBe(
        lossy.lost.admitted,
      )
      expectOrder(sale)
    })

    it('the cap holds across it (the store notices it went back in time and recovers)', () => {
      expect(sale.counts.recovering).toBeGreaterThan(0)
      expectTheCap(sale)
    })

    it('a place moves back only while the store recovers, by no more than the admissions it lost', () => {
      expectPlacesAcrossALoss(sale, lossy.lost.admitted)
    })
  })

  it('a Worker edge over the Cluster: its StoreRelay runs the rooms on their masters', async () => {
    cluster = await startSixNodeCluster()
    const { rooms, masters } = await roomsOnThreeMasters(cluster)
    const worker = await workerRuntime(() => inject('redisUrl')).start({
      rooms: rooms.map((r) => roomSettings({ ...r, cap: 1 })),
      originUrl: origin.url,
      redisUrl: cluster.url,
    })
    toClose.push(worker)
    for (const [i, r] of rooms.entries()) {
      expect(await new Visitor().status(worker.app, r.id)).toMatchObject({ state: 'admitted' })
      expect(await new Visitor().status(worker.app, r.id)).toMatchObject({ state: 'queued', position: 1 })
      const node = new Redis({ host: '127.0.0.1', port: masters[i] as number, maxRetriesPerRequest: 0 })
      expect([await node.zcard(`anteroom:{${r.id}}:act`), await node.zcard(`anteroom:{${r.id}}:q`)]).toEqual([1, 1])
      node.disconnect()
    }
  })
})
