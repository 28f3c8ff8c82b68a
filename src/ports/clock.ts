// A clock the edge reads for token expiry. Tests inject a manual one; production leaves it out
// and the store's own clock (Redis TIME) decides admission.

export interface Clock {
  now(): number
}

export const systemClock: Clock = { now: () => Date.now() }

/** A clock that moves only when told to: lets tests drive expiries and rates without sleeping. */
export class ManualClock implements Clock {
  constructor(private t: number) {}
  now(): number {
    return this.t
  }
  advance(ms: number): void {
    this.t += ms
  }
  set(t: number): void {
    this.t = t
  }
}
