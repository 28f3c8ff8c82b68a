// The Worker in workerd for tests: built and started as the bench and the simulator do (scripts/lib),
// plus a clock the test moves inside it.

import type { WorkerInstance } from '../../scripts/lib/worker.js'
import type { Clock } from '../../src/ports/clock.js'

export { buildWorker, startWorker, type WorkerInstance, type WorkerOptions } from '../../scripts/lib/worker.js'

/** A clock in the Worker that the test moves: the test entry's /__test/clock route. */
export class WorkerClock implements Clock {
  constructor(
    private readonly worker: WorkerInstance,
    private t: number,
  ) {}
  now(): number {
    return this.t
  }
  async set(t: number): Promise<void> {
    this.t = t
    const res = await this.worker.request(`/__test/clock?set=${t}`)
    const { now } = (await res.json()) as { now: number }
    if (now !== t) throw new Error(`the Worker clock is at ${now}, not ${t}`)
  }
  advance(ms: number): Promise<void> {
    return this.set(this.t + ms)
  }
}
