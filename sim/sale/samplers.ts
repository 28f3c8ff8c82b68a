// What a sale records beside its visitors while it runs: the store's numbers every 250 ms, the claim
// gate's counts (a sold-out sale) every 250 ms, the stock state the edge acts on once a second, and the
// store's own record of its admissions twice a second. Each loop runs while `ctx.sampling` holds.
import { request } from 'undici'
import type { GateSample, StoreSample } from '../verdicts.js'
import { SEATS_EVENT, sleep, tally } from './basics.js'
import type { RunContext } from './context.js'

/** The part of a run the samplers read: its clock, the stack, the room and whether to go on. */
export type SamplerContext = Pick<RunContext, 'o' | 'stack' | 'room' | 'agent' | 'now' | 'sampling'>

/** The store's waiting, active and admitted counts (and its reservation, when it says), every 250 ms. */
export async function sampleStore(ctx: SamplerContext, samples: StoreSample[]): Promise<void> {
  const { o, stack, room, now } = ctx
  while (ctx.sampling) {
    const a = now()
    try {
      let s: { waiting: number; active: number; admittedLastMinute: number } | undefined
      let reserved: number | undefined
      if (stack.stats) {
        s = await stack.stats(room)
        reserved = await stack.reserved?.(room)
      } else if (o.adminToken) {
        const res = await request(`${stack.edgeUrl}/_anteroom/api/rooms/${room}/stats`, {
          headers: { authorization: `Bearer ${o.adminToken}` },
          dispatcher: ctx.agent,
        })
        const j = (await res.body.json()) as { waiting: number; active: number; admittedLastMinute: number }
        if (res.statusCode === 200) s = j
      }
      if (s) {
        const sample: StoreSample = { t: (a + now()) / 2, waiting: s.waiting, active: s.active, admittedLastMinute: s.admittedLastMinute }
        if (reserved !== undefined) sample.reserved = reserved
        samples.push(sample)
      }
    } catch {
      // A missed sample is only a gap in the chart.
    }
    await sleep(250)
  }
}

/** A sold-out sale: the event's counts in the claim gate, as the edges read them, every 250 ms. */
export async function sampleGate(ctx: SamplerContext, gateSamples: GateSample[]): Promise<void> {
  const { o, stack, now } = ctx
  if (!o.soldOut || !stack.stock) return
  while (ctx.sampling) {
    const a = now()
    try {
      const c = await stack.stock(SEATS_EVENT)
      gateSamples.push(c === undefined ? { t: (a + now()) / 2 } : { t: (a + now()) / 2, free: c.free, held: c.held, sold: c.sold })
    } catch {
      gateSamples.push({ t: (a + now()) / 2 })
    }
    await sleep(250)
  }
}

/** What the edge acts on, once a second (its admin stats): how often it knew the counts. */
export async function sampleEdgeStock(ctx: SamplerContext, edgeStates: Record<string, number>): Promise<void> {
  const { o, stack, room } = ctx
  if (!o.soldOut || !stack.edgeStock) return
  while (ctx.sampling) {
    let state: string
    try {
      state = (await stack.edgeStock(room)) ?? 'not linked'
    } catch {
      state = 'stats failed'
    }
    tally(edgeStates, state)
    await sleep(1000)
  }
}

/** The store's record of its admissions, read twice a second (it keeps a minute) and before a fault. */
export class AdmissionRecord {
  /** Member ("visitor:ms") → store ms. */
  readonly recorded = new Map<string, number>()
  private from = 0
  private readonly ctx: SamplerContext

  constructor(ctx: SamplerContext) {
    this.ctx = ctx
  }

  /** Reads what the store recorded since the last read. */
  async collect(): Promise<void> {
    const { stack, room } = this.ctx
    if (!stack.admissions) return
    try {
      for (const [member, at] of await stack.admissions(room, this.from)) {
        this.recorded.set(member, at)
        if (at > this.from) this.from = at
      }
    } catch {
      // The store is away: what it recorded meanwhile is read next time (or lost with it).
    }
  }

  async run(): Promise<void> {
    while (this.ctx.sampling) {
      await this.collect()
      await sleep(500)
    }
  }
}
