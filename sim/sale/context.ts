// The state a running sale shares: its options and clock, the edge's address and the connections to it,
// the counts of requests, errors and checkouts, the joins, and the store fault once it happens. The
// parts of a run (visitors.ts, shoppers.ts, bots.ts, samplers.ts) read and write it; simulate.ts makes it.
import { Agent, request } from 'undici'
import type { RoomLimits } from '../predict.js'
import type { JoinRecord, StoreFault, VisitorRecord } from '../verdicts.js'
import { CLIENT_KEEP_ALIVE_MS, type SimOptions, tally } from './basics.js'
import type { Started } from './stack.js'

export interface Jar {
  cookies: Map<string, string>
  /** The client's own connections (its loopback address, i.e. its network); default: the simulator's. */
  agent?: Agent
}

function cookieHeader(jar: Jar): string | undefined {
  return jar.cookies.size === 0 ? undefined : [...jar.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
}

function absorb(jar: Jar, setCookie: string | string[] | undefined) {
  if (setCookie === undefined) return
  for (const line of Array.isArray(setCookie) ? setCookie : [setCookie]) {
    const [pair = ''] = line.split(';')
    const eq = pair.indexOf('=')
    if (/Max-Age=0/i.test(line)) jar.cookies.delete(pair.slice(0, eq))
    else jar.cookies.set(pair.slice(0, eq), pair.slice(eq + 1))
  }
}

/** A queue token's fields (q1.room.visitor.arrival36.expires36.mac), if it is one. */
function tokenParts(token: string | undefined): string[] | undefined {
  if (token === undefined) return undefined
  const parts = decodeURIComponent(token).split('.')
  return parts[0] === 'q1' && parts.length >= 6 ? parts : undefined
}

/** The arrival (µs) in a queue token. */
export function tokenArrival(token: string | undefined): number | undefined {
  const n = Number.parseInt(tokenParts(token)?.[3] ?? '', 36)
  return Number.isFinite(n) ? n : undefined
}

/** The visitor id in a queue token, if it has one: a new one means the edge saw a newcomer. */
export function tokenVisitor(token: string | undefined): string | undefined {
  return tokenParts(token)?.[2]
}

/** What a run is given: its options, the stack, the settings in real time, and the sale's wall times. */
export interface RunSetup {
  o: SimOptions
  stack: Started
  real: RoomLimits
  random: () => number
  /** A scheduled sale's pre-queue and opening, ms on the wall clock (0 otherwise). */
  prequeueWall: number
  opensWall: number
}

export class RunContext {
  readonly o: SimOptions
  readonly stack: Started
  readonly room: string
  readonly log: (line: string) => void
  readonly real: RoomLimits
  readonly random: () => number
  readonly scheduled: boolean
  readonly leadSeconds: number
  /** The connections of the simulator's own clients (a visitor with a network of its own brings its agent). */
  readonly agent: Agent
  readonly t0: number
  /** Store times (ms on the wall clock, Redis TIME on this host) to run time: subtract this. */
  readonly wallAtZero: number
  readonly sessionMs: number
  readonly admissionCookie: string
  readonly queueCookie: string
  /** Run ms after which the visitors stop. */
  readonly deadline: number
  /** A scheduled sale's times in run ms (the sale's zero is `leadSeconds` before the pre-queue). */
  readonly prequeueAtRun: number
  readonly opensAtRun: number
  requests = 0
  errors = 0
  readonly errorKinds: Record<string, number> = {}
  readonly checkouts: Record<string, number> = {}
  /** Every join: a request without a queue token that could take a place (past the proof of work, if asked). */
  readonly joins: JoinRecord[] = []
  /** The fault, mid-sale: the visitors' polls are sorted by it into before and after (verdicts.ts). */
  fault: StoreFault | undefined
  faultStarted = false
  /** Visitors admitted before the fault who made a request after it: whether a renewal came back yet. */
  readonly usedAfterFault = new Map<number, boolean>()
  lastAdmittedJar: Jar | undefined
  observedRefresh: number | undefined
  /** The samplers run while this holds. */
  sampling = true

  constructor(s: RunSetup) {
    const o = s.o
    this.o = o
    this.stack = s.stack
    this.room = o.room ?? 'demo'
    this.log = o.log ?? (() => {})
    this.real = s.real
    this.random = s.random
    this.scheduled = o.curve.kind === 'scheduled'
    this.leadSeconds = o.leadSeconds ?? 30
    this.agent = new Agent({ connections: o.connections ?? 64, keepAliveTimeout: CLIENT_KEEP_ALIVE_MS })
    this.t0 = performance.now()
    this.wallAtZero = Date.now() - this.now()
    this.sessionMs = s.real.sessionDurationSeconds * 1000
    this.admissionCookie = `anteroom_a_${this.room}`
    this.queueCookie = `anteroom_q_${this.room}`
    this.deadline = (o.maxRealSeconds ?? 300) * 1000
    this.prequeueAtRun = s.prequeueWall - this.wallAtZero
    this.opensAtRun = s.opensWall - this.wallAtZero
  }

  /** Run ms. */
  readonly now = (): number => performance.now() - this.t0

  readonly checkout = (kind: string): void => {
    tally(this.checkouts, kind)
  }

  readonly failed = (kind: string): void => {
    this.errors++
    tally(this.errorKinds, kind)
  }

  /** A request of a visitor's page after admission: keeps the session's end and the fault's counts. */
  readonly browse = async (
    v: VisitorRecord,
    jar: Jar,
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const sent = this.now()
    const before = jar.cookies.get(this.admissionCookie)
    try {
      return await this.call(jar, method, path, body, headers)
    } finally {
      v.lastActivityReceived = this.now()
      // A new admission cookie: the session was renewed (past half of it, or re-registered after a loss).
      const after = jar.cookies.get(this.admissionCookie)
      if (after !== undefined && after !== before) v.sessionEnd = Math.max(v.sessionEnd ?? 0, sent + this.sessionMs)
      // A session from before the fault, used after it: the edge should re-register it (once).
      const fault = this.fault
      if (
        fault !== undefined &&
        fault.end > fault.start &&
        sent > fault.end &&
        (v.admittedReceived ?? Number.POSITIVE_INFINITY) < fault.start
      ) {
        const renewed = this.usedAfterFault.get(v.id)
        if (renewed === undefined) fault.browsingAfter++
        if (renewed !== true && after !== undefined && after !== before) fault.reregistered++
        this.usedAfterFault.set(v.id, renewed === true || (after !== undefined && after !== before))
      }
    }
  }

  /** One request to the edge with the jar's cookies, through the jar's agent (or the simulator's). */
  readonly call = async (jar: Jar, method: string, path: string, body?: unknown, headers: Record<string, string> = {}) => {
    this.requests++
    const h: Record<string, string> = { accept: 'application/json', ...headers }
    const ck = cookieHeader(jar)
    if (ck) h.cookie = ck
    // The booking origin takes JSON only, and a POST must say so even without a body.
    if (body !== undefined || method === 'POST') h['content-type'] = 'application/json'
    const res = await request(`${this.stack.edgeUrl}${path}`, {
      method: method as 'GET',
      headers: h,
      body: body === undefined ? undefined : JSON.stringify(body),
      dispatcher: jar.agent ?? this.agent,
    })
    absorb(jar, res.headers['set-cookie'])
    const text = await res.body.text()
    let json: unknown
    try {
      json = JSON.parse(text)
    } catch {
      json = undefined
    }
    const retryAfter = res.headers['retry-after']
    return {
      status: res.statusCode,
      json: json as Record<string, unknown> | undefined,
      retryAfter: retryAfter === undefined ? undefined : Number(retryAfter),
    }
  }
}
