// One round of measurement 7 (./crowd.ts): a fresh event, 2,000 concurrent claims for it from wrk (a
// separate process: one connection a claim, all opened first, all sent at one moment; bench/wrk.lua's
// burst mode), to the booking origin's child process (bench/booking-origin.ts) directly or through a
// Node edge; then, with the claim gate, the same 2,000 claims again once everything is held (all
// doomed); then the winners confirm. What each burst cost the origin's processes is read from /proc.
import { decodeJwt } from 'jose'
import { percentile } from '../../scripts/lib/stats.js'
import type { Db } from '../../src/adapters/postgres/db.js'
import { PostgresSeatStore } from '../../src/adapters/postgres/seat-store.js'
import { type EventSeed, seedEvent } from '../../src/adapters/postgres/seed.js'
import { type Aggregate, burst, burstWithAnswers, type Child, rawRequest, type Target } from '../lib.js'
import { bump, CEILING_SQL } from '../postgres.js'

export const CROWD = 2000
export const ROOM = 'sale'

/** A round's crowd: who claims, and how its requests carry the admission. */
export interface Crowd {
  /** Through the origin directly: the Anteroom-Admission header; through the edge: its admission cookie. */
  path: 'direct' | 'edge'
  /** Where the claims go: the origin's or the edge's address. */
  url: string
  /** Per visitor, the header that carries the admission, e.g. { 'anteroom-admission': token } or { cookie }. */
  admissions: Record<string, string>[]
  /** The admission token of each visitor (by sub), for the confirms, which go to the origin directly. */
  tokenOf: Map<string, string>
  /** The processes whose CPU is read, the server under test first (the edge's path: the edge). */
  pids: Record<string, number>
}

export interface Origin {
  child: Child
  gated: boolean
}

export interface Burst {
  p50: number
  p99: number
  max: number
  statuses: Record<string, number>
  /** µs of CPU per claim, per process (the origin's: its process's CPU time over the burst, by claims). */
  cpuUs: Record<string, number>
  /** Whether wrk used more CPU than the server under test (the first of the crowd's pids). */
  generatorBound: boolean
  /**
   * µs of CPU per claim from the burst's moment to its end only (its connections were opened before),
   * per process: wrk, the servers, Redis and PostgreSQL (each with its children), closing the
   * connections included (crowd.ts spreadMs).
   */
  burstCpuUs: Record<string, number>
}

export interface CrowdRound {
  event: string
  kind: string
  path: 'direct' | 'edge'
  holds: Burst
  errorCodes: Record<string, number>
  /** Seats (or units) held, by the 201 answers and by PostgreSQL. */
  heldByResponses: number
  distinctHeld: number
  heldInDb: number
  /** Items only (packages): units held a night. */
  perItem?: number[]
  fiveXx: number
  /** Statements the origin sent during the claims. */
  statements: number
  /** Gated origins: the same claims again once everything was held; statements by name. */
  doomed?: Burst & { statements: Record<string, number> }
  /**
   * The floor: 2,000 GETs of a bench route outside the origin's app (bench/booking-origin.ts's health)
   * by the same path and in the same way, just before the claims: what the HTTP exchanges alone cost.
   */
  floor?: Burst
  confirms: number
  confirmStatuses: Record<string, number>
  confirmP99: number
  charges: number
  invariant: { sold: number; tickets: number; paid: number }
  /** 2,000 concurrent one-row UPDATEs through the bench's own pool, run just before the claims (ms). */
  ceiling?: { p50: number; p99: number }
}

const SEAT_ROWS = ['A', 'B', 'C', 'D']
const ALL_SEATS = SEAT_ROWS.flatMap((r) => Array.from({ length: 10 }, (_, i) => `${r}${i + 1}`))

/** Half ask for one seat; the rest for two or three seats in random order (as in test/origin.test.ts). */
function crowdSeats(i: number): string[] {
  const n = i % 2 === 0 ? 1 : 2 + (i % 3 === 0 ? 1 : 0)
  const picked = new Set<string>()
  while (picked.size < n) picked.add(ALL_SEATS[Math.floor(Math.random() * ALL_SEATS.length)] as string)
  return [...picked]
}

/** A package: a room on nights 12 and 13, half clicked 12 then 13 and half 13 then 12. */
const packageItems = (i: number) =>
  (i % 2 === 0 ? ['night-12', 'night-13'] : ['night-13', 'night-12']).map((item) => ({ item, quantity: 1 }))

/** What a round's event is: 40 seats, or (packages) 40 rooms on each of two nights. */
export function eventSeed(id: string, packages: boolean, extra: Partial<EventSeed> = {}): EventSeed {
  return packages
    ? {
        id,
        name: 'Bench festival',
        room: ROOM,
        priceCents: 9000,
        items: [
          { id: 'night-12', name: 'Night of 12', quantity: 40 },
          { id: 'night-13', name: 'Night of 13', quantity: 40 },
        ],
        ...extra,
      }
    : { id, name: 'Bench night', room: ROOM, priceCents: 2500, rows: SEAT_ROWS, seatsPerRow: 10, ...extra }
}

function summary(a: Aggregate): Burst {
  const cpuUs: Record<string, number> = {}
  // Over the whole wrk run: its connections opened (the second and a half before the burst), then the
  // burst. Accepting a connection is part of what a claim costs its server.
  for (const [k, v] of Object.entries(a.cpu)) cpuUs[k] = v.usPerRequest
  return {
    p50: a.latencyMs.p50,
    p99: a.latencyMs.p99,
    max: a.latencyMs.max,
    statuses: a.statuses,
    cpuUs,
    generatorBound: a.generatorBound,
    burstCpuUs: a.burstCpuUs ?? {},
  }
}

async function getJson<T>(url: string, init?: RequestInit): Promise<T> {
  const res = await fetch(url, init)
  if (!res.ok) throw new Error(`${url}: ${res.status} ${await res.text()}`)
  return (await res.json()) as T
}

type Sent = { statements: number; byName: Record<string, number>; charges: number }
const statementsOf = async (origin: Origin) => getJson<Sent>(`${origin.child.url}/bench/statements`)

/** The statements sent between two counts, by name. */
function sentBetween(a: Sent, b: Sent): Record<string, number> {
  const out: Record<string, number> = {}
  for (const [k, v] of Object.entries(b.byName)) if (v - (a.byName[k] ?? 0) > 0) out[k] = v - (a.byName[k] ?? 0)
  return out
}

/**
 * The statement a doomed claim may cause without costing one: the event's row, read by the store at
 * most once every 5 s for all claims (PostgresSeatStore.event's cache), whichever claim comes first.
 */
export const EVENT_READ = 'event-get'

/** 2,000 concurrent single-row conditional UPDATEs through the pool; latency of each from one common start. */
async function ceilingBurst(db: Db): Promise<{ p50: number; p99: number }> {
  const t0 = performance.now()
  const ms = await Promise.all(
    Array.from({ length: CROWD }, async () => {
      await db.query(CEILING_SQL)
      return performance.now() - t0
    }),
  )
  return { p50: percentile(ms, 50), p99: percentile(ms, 99) }
}

export interface RoundOptions {
  /** The bench's own connection: seeding and checks. */
  admin: Db
  /** A pool of the bench's for the ceiling's UPDATEs; unset: no ceiling this round. */
  ceilingDb?: Db
  origin: Origin
  crowd: Crowd
  event: string
  /** The round kind's name (a variant of crowd.ts). */
  kind: string
  /** Also the floor burst (CrowdRound.floor). */
  floor?: boolean
  packages: boolean
  seed?: Partial<EventSeed>
}

export async function crowdRound(o: RoundOptions): Promise<CrowdRound> {
  const { admin, origin, crowd, event } = o
  await seedEvent(admin, eventSeed(event, o.packages, o.seed))
  // The gate is built for the new event before the rush, as the origin's reconciler does at start.
  await getJson(`${origin.child.url}/bench/ready/${event}`, { method: 'POST' })
  const requests = crowd.admissions.map((admission, i) =>
    rawRequest(
      'POST',
      `${crowd.url}/events/${event}/holds`,
      { ...admission, 'content-type': 'application/json' },
      JSON.stringify(o.packages ? { items: packageItems(i) } : { seats: crowdSeats(i) }),
    ),
  )
  const target: Target = { name: `${o.kind} ${crowd.path} ${event}`, url: crowd.url, headers: {}, requests, pids: crowd.pids }
  const ceiling = o.ceilingDb === undefined ? undefined : await ceilingBurst(o.ceilingDb)
  const floor = o.floor
    ? summary(
        await burst(
          {
            ...target,
            name: `${target.name} floor`,
            requests: crowd.admissions.map((admission) => rawRequest('GET', `${crowd.url}/bench/health`, admission)),
          },
          CROWD,
        ),
      )
    : undefined

  const s0 = await statementsOf(origin)
  const { aggregate, answers } = await burstWithAnswers(target, CROWD)
  const s1 = await statementsOf(origin)
  const errorCodes: Record<string, number> = {}
  const held: string[] = []
  const holdIds: string[] = []
  for (const a of answers) {
    let body: { hold?: { id: string; seats: string[]; items: { item: string; quantity: number }[] }; error?: { code: string } }
    try {
      body = JSON.parse(a.body)
    } catch {
      bump(errorCodes, `not JSON (${a.status})`)
      continue
    }
    if (body.error) bump(errorCodes, body.error.code)
    if (a.status === 201 && body.hold !== undefined) {
      holdIds.push(body.hold.id)
      held.push(...body.hold.seats, ...body.hold.items.flatMap((i) => Array.from({ length: i.quantity }, (_, n) => `${i.item}#${n}`)))
    }
  }
  const store = new PostgresSeatStore(admin)
  let heldInDb: number
  let perItem: number[] | undefined
  if (o.packages) {
    const items = await store.itemMap(event)
    perItem = ['night-12', 'night-13'].map((n) => items.find((i) => i.item === n)?.held ?? -1)
    heldInDb = perItem.reduce((a, b) => a + b, 0)
  } else {
    const [r] = await admin.query<{ n: number }>(
      "SELECT count(*)::int AS n FROM seats WHERE event_id = $1 AND status = 'held' AND hold_expires_at > now()",
      [event],
    )
    heldInDb = r?.n ?? 0
  }

  // With the gate: every seat is held now, so the same claims again are all doomed; they should cost
  // the database nothing, and their CPU is the doomed path's.
  let doomed: CrowdRound['doomed']
  if (origin.gated) {
    const before = await statementsOf(origin)
    const d = await burst({ ...target, name: `${target.name} doomed` }, CROWD)
    doomed = { ...summary(d), statements: sentBetween(before, await statementsOf(origin)) }
  }

  // The winners confirm, all at once, at the origin directly (as themselves: the token of the hold's holder).
  const winners =
    holdIds.length === 0
      ? []
      : await admin.query<{ id: string; holder: string }>('SELECT id::text AS id, holder FROM holds WHERE id = ANY($1::uuid[])', [holdIds])
  const c0 = performance.now()
  const confirms = await Promise.all(
    winners.map(async (w) => {
      const res = await fetch(`${origin.child.url}/holds/${w.id}/confirm`, {
        method: 'POST',
        headers: {
          'anteroom-admission': crowd.tokenOf.get(w.holder) ?? '',
          'content-type': 'application/json',
          'idempotency-key': `pay-${event}-${w.id}`,
        },
      })
      await res.arrayBuffer()
      return { status: res.status, ms: performance.now() - c0 }
    }),
  )
  const confirmStatuses: Record<string, number> = {}
  for (const c of confirms) bump(confirmStatuses, String(c.status))
  const charges = (await statementsOf(origin)).charges - s1.charges

  return {
    event,
    kind: o.kind,
    path: crowd.path,
    holds: summary(aggregate),
    errorCodes,
    heldByResponses: held.length,
    // Units of an item have no names: only seats can be told apart.
    distinctHeld: o.packages ? held.length : new Set(held).size,
    heldInDb,
    perItem,
    fiveXx: answers.filter((a) => a.status >= 500).length + aggregate.errors,
    statements: s1.statements - s0.statements,
    doomed,
    confirms: confirms.length,
    confirmStatuses,
    confirmP99: percentile(
      confirms.map((c) => c.ms),
      99,
    ),
    charges,
    invariant: await store.invariant(event),
    ceiling,
    floor,
  }
}

/** The processes besides the servers whose CPU a round reads: the gate's Redis, PostgreSQL's postmaster. */
export type Stores = { redis: number; postgres: number }

/** The direct path's crowd: tokens signed by the bench with the edge's key, sent as Anteroom-Admission. */
export function directCrowd(origin: Child, tokens: string[], stores: Stores): Crowd {
  return {
    path: 'direct',
    url: origin.url,
    admissions: tokens.map((t) => ({ 'anteroom-admission': t })),
    tokenOf: new Map(tokens.map((t) => [decodeJwt(t).sub as string, t])),
    pids: { origin: origin.pid, ...stores },
  }
}

/** The edge's path: admission cookies the edge gave (name=token), forwarded by it as Anteroom-Admission. */
export function edgeCrowd(edge: Child, origin: Child, cookies: string[], stores: Stores): Crowd {
  const tokens = cookies.map((c) => c.slice(c.indexOf('=') + 1))
  return {
    path: 'edge',
    url: edge.url,
    admissions: cookies.map((cookie) => ({ cookie })),
    tokenOf: new Map(tokens.map((t) => [decodeJwt(t).sub as string, t])),
    pids: { edge: edge.pid, origin: origin.pid, ...stores },
  }
}
