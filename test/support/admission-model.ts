// A stepped sale that checks, at every step, that the edge grants what the admission rule allows
// (grantBudget in src/core/admission.ts, from the grants this test counted itself), capped by who is
// waiting, always to the earliest arrivals. Used on one edge (the HTTP suite) and across two edges.
import { expect } from 'vitest'
import { dueAdmissions, grantBudget, paceAfter, perSecondCap } from '../../src/core/admission.js'
import type { QueueStore } from '../../src/ports/queue-store.js'
import type { RequestTarget, TestClock } from './runtimes.js'
import { Visitor } from './visitor.js'

export interface StepLimit {
  /** How many the store may grant at `now`. */
  allowed: number
  /** Which limit bound this step (when somebody was waiting). */
  bound: 'cap' | 'rate' | 'both' | 'none'
  /** The pace's state after `granted` admissions at this step. */
  tatAfter(granted: number): number | undefined
}

/**
 * What the rule allows at `now`, from the grants this test counted itself and the pace it tracks
 * (tatUs: when the next admission is due, or undefined before the first).
 */
export function allowedAt(
  now: number,
  grants: readonly number[],
  limits: { totalActiveUsers: number; newUsersPerMinute: number },
  before: { active: number; waiting: number },
  tatUs: number | undefined,
): StepLimit {
  const pace = dueAdmissions(tatUs, now * 1000, limits.newUsersPerMinute)
  const budget = {
    ...limits,
    active: before.active,
    due: pace.due,
    admittedLastSecond: grants.filter((t) => t > now - 1000).length,
  }
  // The rate alone (no cap) and the free slots alone tell which limit bound.
  const rate = grantBudget({ ...budget, totalActiveUsers: Number.POSITIVE_INFINITY })
  const free = limits.totalActiveUsers - before.active
  const allowed = Math.max(0, Math.min(free, rate, before.waiting))
  let bound: StepLimit['bound'] = 'none'
  if (before.waiting > 0) bound = free < rate ? 'cap' : rate < free ? 'rate' : 'both'
  const tatAfter = (granted: number) => paceAfter(tatUs, pace, granted, limits.newUsersPerMinute)
  return { allowed, bound, tatAfter }
}

export interface SteppedSale {
  room: string
  totalActiveUsers: number
  newUsersPerMinute: number
  visitors: number
  clock: TestClock
  /** The store behind the edges, read for the numbers before and after each step. */
  store: QueueStore
  /** The edge a request goes to (one edge, or any of several). */
  pick(): RequestTarget
}

/**
 * Visitors arrive 10 ms apart, then every second everybody waiting polls at once while the admitted
 * browse for 12 s and leave without a word. Each step (an arrival, or a second of polls) must grant
 * exactly what the rule allows, never exceed the cap, and admit only the first k arrivals. Both
 * limits must bind at some step, and no second may see more than the per-second cap.
 */
export async function runSteppedSale(s: SteppedSale): Promise<void> {
  const limits = { totalActiveUsers: s.totalActiveUsers, newUsersPerMinute: s.newUsersPerMinute }
  const visitors = Array.from({ length: s.visitors }, () => new Visitor())
  const admittedAt = new Map<number, number>()
  const grants: number[] = []
  const bounds = { cap: 0, rate: 0 }
  let tatUs: number | undefined
  /** One step: what the rule allows now, the polls, and what the store then granted. */
  const step = async (label: string, polls: () => Promise<unknown>, joining: number) => {
    const now = s.clock.now()
    const before = await s.store.stats(s.room, now)
    const limit = allowedAt(now, grants, limits, { active: before.active, waiting: before.waiting + joining }, tatUs)
    if (limit.bound === 'cap' || limit.bound === 'rate') bounds[limit.bound]++
    await polls()
    const after = await s.store.stats(s.room, now)
    const granted = before.waiting + joining - after.waiting
    expect(granted, label).toBe(limit.allowed)
    expect(after.active, label).toBeLessThanOrEqual(s.totalActiveUsers)
    for (let g = 0; g < granted; g++) grants.push(now)
    tatUs = limit.tatAfter(granted)
  }
  for (const [i, v] of visitors.entries()) {
    await s.clock.advance(10)
    await step(
      `arrival ${i}`,
      async () => {
        if ((await v.status(s.pick(), s.room)).state === 'admitted') admittedAt.set(i, s.clock.now())
      },
      1,
    )
  }
  const stayFor = 12_000
  for (let n = 0; n < 300 && admittedAt.size < s.visitors; n++) {
    await s.clock.advance(1000)
    const now = s.clock.now()
    await step(
      `step ${n}`,
      () =>
        Promise.all(
          visitors.map(async (v, i) => {
            const since = admittedAt.get(i)
            if (since === undefined) {
              if ((await v.status(s.pick(), s.room)).state === 'admitted') admittedAt.set(i, now)
            } else if (now - since < stayFor) {
              expect((await v.request(s.pick(), '/shop')).status).toBe(200)
            }
          }),
        ),
      0,
    )
    const admitted = [...admittedAt.keys()].sort((a, b) => a - b)
    expect(admitted, `step ${n}`).toEqual([...Array(admitted.length).keys()])
  }
  expect(admittedAt.size).toBe(s.visitors)
  // Both limits bound at some step, so the run exercised each of them.
  expect(bounds.cap).toBeGreaterThan(0)
  expect(bounds.rate).toBeGreaterThan(0)
  // Paced: never more than the per-second share of the rate, plus one, in any second.
  for (const t of grants) expect(grants.filter((u) => u > t - 1000 && u <= t).length).toBeLessThanOrEqual(perSecondCap(s.newUsersPerMinute))
}
