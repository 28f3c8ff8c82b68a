// The parts of a simulated sale (sim/sale/*.ts) alone, without a sale: the samplers and the record of
// admissions against a stack of plain data and a clock the test moves, the run context's counts, and the
// visitors' plans drawn from the seed.
import { describe, expect, it } from 'vitest'
import type { RoomLimits } from '../sim/predict.js'
import { arrivalTimes, rng, type SimOptions } from '../sim/sale/basics.js'
import { RunContext } from '../sim/sale/context.js'
import { AdmissionRecord, type SamplerContext, sampleGate, sampleStore } from '../sim/sale/samplers.js'
import type { Started } from '../sim/sale/stack.js'
import { humanAgents, planVisitors } from '../sim/sale/visitors.js'
import type { GateSample, StoreSample } from '../sim/verdicts.js'

const limits: RoomLimits = {
  totalActiveUsers: 10,
  newUsersPerMinute: 60,
  sessionDurationSeconds: 60,
  refreshSeconds: 10,
  abandonAfterSeconds: 30,
}
const options: SimOptions = {
  visitors: 6,
  curve: { kind: 'ramp', durationSeconds: 60 },
  limits,
  scale: 2,
  abandonShare: 0.5,
  patienceSeconds: 20,
  buyShare: 0.5,
  seed: 7,
}

/** A sampler's context over `stack`, its clock stepping 10 ms a reading. */
function samplerContext(stack: Started, o: SimOptions = options): SamplerContext {
  let t = 0
  return { o, stack, room: 'demo', agent: undefined as never, now: () => (t += 10), sampling: true }
}

describe('sale samplers', () => {
  it('records the store numbers with the time halfway through the reading, and its reservation', async () => {
    const samples: StoreSample[] = []
    const ctx = samplerContext({
      edgeUrl: 'http://127.0.0.1:9',
      stop: async () => {},
      stats: async (room) => {
        expect(room).toBe('demo')
        return { waiting: 5, active: 2, admittedLastMinute: 3 } as never
      },
      reserved: async () => {
        ctx.sampling = false
        return 1
      },
    })
    await sampleStore(ctx, samples)
    expect(samples).toEqual([{ t: 15, waiting: 5, active: 2, admittedLastMinute: 3, reserved: 1 }])
  })

  it('keeps a gap when the store does not answer, and a time without counts when the gate has none', async () => {
    const samples: StoreSample[] = []
    const away = samplerContext({
      edgeUrl: 'http://127.0.0.1:9',
      stop: async () => {},
      stats: async () => {
        away.sampling = false
        throw new Error('store away')
      },
    })
    await sampleStore(away, samples)
    expect(samples).toEqual([])

    const gate: GateSample[] = []
    const counts = [{ free: 3, held: 1, sold: 36, reconciledAt: 0, repairs: 0 }, undefined]
    const ctx = samplerContext(
      {
        edgeUrl: 'http://127.0.0.1:9',
        stop: async () => {},
        stock: async (event) => {
          expect(event).toBe('demo')
          const c = counts.shift()
          if (counts.length === 0) ctx.sampling = false
          return c
        },
      },
      { ...options, soldOut: true },
    )
    await sampleGate(ctx, gate)
    expect(gate).toEqual([{ t: 15, free: 3, held: 1, sold: 36 }, { t: 35 }])
  })

  it('reads the admissions record from where it left off, and keeps it while the store is away', async () => {
    const store: [string, number][] = [
      ['a:1', 1000],
      ['b:1', 1200],
    ]
    const asked: number[] = []
    let away = false
    const record = new AdmissionRecord(
      samplerContext({
        edgeUrl: 'http://127.0.0.1:9',
        stop: async () => {},
        admissions: async (_room, since) => {
          asked.push(since)
          if (away) throw new Error('store away')
          return store.filter(([, at]) => at >= since)
        },
      }),
    )
    await record.collect()
    store.push(['c:1', 1500])
    await record.collect()
    away = true
    await record.collect()
    expect(asked).toEqual([0, 1200, 1500])
    expect([...record.recorded]).toEqual([
      ['a:1', 1000],
      ['b:1', 1200],
      ['c:1', 1500],
    ])
  })
})

describe('run context and plans', () => {
  const stack: Started = { edgeUrl: 'http://127.0.0.1:9', stop: async () => {} }

  it('counts errors and checkouts by kind', async () => {
    const ctx = new RunContext({ o: options, stack, real: limits, random: rng(1), prequeueWall: 0, opensWall: 0 })
    ctx.failed('poll 500 no state')
    ctx.failed('poll 500 no state')
    ctx.checkout('paid')
    expect(ctx.errors).toBe(2)
    expect(ctx.errorKinds).toEqual({ 'poll 500 no state': 2 })
    expect(ctx.checkouts).toEqual({ paid: 1 })
    expect(ctx.admissionCookie).toBe('anteroom_a_demo')
    await ctx.agent.close()
  })

  it('draws the same plans from the same seed, at the arrivals scaled to real ms', async () => {
    const plansOf = async (seed: number) => {
      const random = rng(seed)
      const o = { ...options, seed }
      const ctx = new RunContext({ o, stack, real: limits, random, prequeueWall: 0, opensWall: 0 })
      const arrivals = arrivalTimes(o.visitors, o.curve, random)
      const plans = planVisitors(ctx, arrivals, humanAgents(o))
      await ctx.agent.close()
      return { arrivals, plans: plans.map(({ jitter: _, ...p }) => p) }
    }
    const a = await plansOf(7)
    expect(await plansOf(7)).toEqual(a)
    expect((await plansOf(8)).plans).not.toEqual(a.plans)
    expect(a.plans.map((p) => p.at)).toEqual(a.arrivals.map((s) => (s / options.scale) * 1000))
    expect(a.plans.every((p) => p.network === '127.0.0.0/24' && p.agent === undefined && !p.bot)).toBe(true)
  })
})
