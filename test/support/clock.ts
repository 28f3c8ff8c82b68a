// A clock that moves only when told to: lets tests drive expiries and rates without sleeping.
import type { Clock } from '../../src/ports/clock.js'

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
