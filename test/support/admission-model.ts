// A stepped sale that checks, at every step, that the edge grants what the admission rule allows
// (grantBudget in src/core/admission.ts, from the grants this test counted itself), capped by who is
// waiting, always to the earliest arrivals. Used on one edge (the HTTP suite) and across two edges.
import { expect } from 'vitest'
import { grantBudget } from '../../src/core/admission.js'
import type { QueueStore } from '../../src/ports/queue-store.js'
import type { RequestTarget, TestClock } from './runtimes.js'
import { Visitor } from './visitor.js'

export interface StepLimit {
  /** How many the store may grant at `now`. */
  allowed: number
  /** Which limit bound this step (when somebody was waiting). */
  bound: 'cap' | 'rate' | 'both' | 'none'
}

export function allowedAt(
  now: number,
  grants: readonly number[],
  limits: { totalActiveUsers: number; newUsersPerMinute: number },
  before: { active: number; waiting: number },
): StepLimit {
  const budget = {
    ...limits,
    active: before.active,
    admittedLastMinute: grants.filter((t) => t > now - 60_000).length,
    admittedLastTenSeconds: grants.filter((t) => t > now - 10_000).length,
  }
  // The rate alone (no cap) and the free slots alone tell which limit bound.
  const rate = grantBudget({ ...budget, totalActiveUsers: Number.POSITIVE_INFINITY })
  const free = limits.totalActiveUsers - before.active
  const allowed = Math.max(0, Math.min(free, rate, before.waiting))
  let bound: StepLimit['bound'] = 'none'
  if (before.waiting > 0) bound = free < rate ? 'cap' : rate < free ? 'rate' : 'both'
  return { allowed, bound }
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
 * browse for 12 s and leave without a word. Each step must grant exactly what the rule allows, never
 * exceed the cap, and admit only the first k arrivals. Both limits must bind at some step.
 */
export async function runSteppedSale(s: SteppedSale): Promise<void> {
  const limits = { totalActiveUsers: s.totalActiveUsers, newUsersPerMinute: s.newUsersPerMinute }
  const visitors = Array.from({ length: s.visitors }, () => new Visitor())
  const admittedAt = new Map<number, number>()
  const grants: number[] = []
  const bounds = { cap: 0, rate: 0 }
  for (const [i, v] of visitors.entries()) {
    await s.clock.advance(10)
    if ((await v.status(s.pick(), s.room)).state === 'admitted') {
      admittedAt.set(i, s.clock.now())
      grants.push(s.clock.now())
    }
  }
  expect(admittedAt.size).toBe(Math.ceil(s.newUsersPerMinute / 6))
  const stayFor = 12_000
  for (let step = 0; step < 300 && admittedAt.size < s.visitors; step++) {
    await s.clock.advance(1000)
    const now = s.clock.now()
    const before = await s.store.stats(s.room, now)
    const { allowed, bound } = allowedAt(now, grants, limits, before)
    if (bound === 'cap' || bound === 'rate') bounds[bound]++
    await Promise.all(
      visitors.map(async (v, i) => {
        const since = admittedAt.get(i)
        if (since === undefined) {
          if ((await v.status(s.pick(), s.room)).state === 'admitted') admittedAt.set(i, now)
        } else if (now - since < stayFor) {
          expect((await v.request(s.pick(), '/shop')).status).toBe(200)
        }
      }),
    )
    const after = await s.store.stats(s.room, now)
    const granted = before.waiting - after.waiting
    expect(granted, `step ${step}`).toBe(allowed)
    expect(after.active).toBeLessThanOrEqual(s.totalActiveUsers)
    for (let g = 0; g < granted; g++) grants.push(now)
    const admitted = [...admittedAt.keys()].sort((a, b) => a - b)
    expect(admitted, `step ${step}`).toEqual([...Array(admitted.length).keys()])
  }
  expect(admittedAt.size).toBe(s.visitors)
  // Both limits bound at some step, so the run exercised each of them.
  expect(bounds.cap).toBeGreaterThan(0)
  expect(bounds.rate).toBeGreaterThan(0)
}
