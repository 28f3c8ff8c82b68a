// The pace of a room's admissions and how many it may admit now (core/admission.ts, whose rule uses
// these, re-exports them): the emission interval, the admissions due (GCRA), the per-second cap, the
// last slot after a grant, and the budget (free slots, due, the cap). The Lua (poll-12.lua) computes the
// same, from the same CATCH_UP_US (npm run build:lua writes it in).

/** How far a room that was not polled may catch up on its pace: one second's worth. */
export const CATCH_UP_US = 1_000_000

/**
 * The gap between two admissions at `newUsersPerMinute`, µs (a whole number, so that Lua and
 * TypeScript compute the same; the rounding makes the rate a hair faster, never slower).
 */
export function emissionIntervalUs(newUsersPerMinute: number): number {
  return Math.floor(60_000_000 / newUsersPerMinute)
}

/**
 * The pace of admissions (GCRA): each admission has a slot on the room's timeline, one emission
 * interval after the one before; the next is due one interval after the last slot (`lastSlotUs`), at
 * the rate in force now (so a change of rate takes effect at once), and a room that was not polled
 * catches up on at most CATCH_UP_US. Returns how many are due now and the time they count from.
 */
export function dueAdmissions(lastSlotUs: number | undefined, nowUs: number, newUsersPerMinute: number): { due: number; fromUs: number } {
  const interval = emissionIntervalUs(newUsersPerMinute)
  // A room that has admitted nobody yet is like any idle room: one second's credit.
  const fromUs = lastSlotUs === undefined ? nowUs - CATCH_UP_US : Math.max(lastSlotUs + interval, nowUs - CATCH_UP_US)
  if (fromUs > nowUs) return { due: 0, fromUs }
  return { due: 1 + Math.floor((nowUs - fromUs) / interval), fromUs }
}

/** Most admissions in any one second: the per-second share of the rate, plus one. */
export function perSecondCap(newUsersPerMinute: number): number {
  return Math.floor(newUsersPerMinute / 60) + 1
}

/**
 * The last slot after `granted` admissions. What the per-second cap held back stays due: a later poll
 * may admit it, within the cap, as the second slides on. The pace never runs more than CATCH_UP_US
 * behind the time (dueAdmissions), so no more than a second's admissions are ever owed.
 */
export function paceAfter(
  lastSlotUs: number | undefined,
  pace: { due: number; fromUs: number },
  granted: number,
  newUsersPerMinute: number,
): number | undefined {
  return granted > 0 ? pace.fromUs + (granted - 1) * emissionIntervalUs(newUsersPerMinute) : lastSlotUs
}

export interface BudgetInput {
  totalActiveUsers: number
  newUsersPerMinute: number
  active: number
  /** Admissions due by the pace (dueAdmissions). */
  due: number
  /** Admitted in (now − 1 s, now]. */
  admittedLastSecond: number
}

/**
 * How many the room may admit now: free slots, what the pace has made due, and no more than the
 * per-second cap in any second. Not capped by MAX_STEP or by who is waiting; may be negative or
 * fractional (the simulator works with fluid visitors).
 */
export function grantBudget(b: BudgetInput): number {
  return Math.min(b.totalActiveUsers - b.active, b.due, perSecondCap(b.newUsersPerMinute) - b.admittedLastSecond)
}
