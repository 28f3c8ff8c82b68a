// The QueueStore contract: one suite, run against every implementation (memory, Redis).
// Time is always passed in explicitly, so rates, expiries and FIFO are checked without sleeping.
// The tests are in test/contract/queue-store/, one file a topic; this file names the suite and runs them.
import { describe } from 'vitest'
import type { QueueStore } from '../../src/ports/queue-store.js'
import { absenceContract } from './queue-store/absence.js'
import { lateEdgeContract } from './queue-store/late-edge.js'
import { lineContract } from './queue-store/line.js'
import { modesContract } from './queue-store/modes.js'
import { paceContract } from './queue-store/pace.js'
import { recoveryContract } from './queue-store/recovery.js'
import { sessionsContract } from './queue-store/sessions.js'

export interface StoreHarness {
  store: QueueStore
  /** Makes the store forget everything, as a Redis flush or failover would. */
  forget(): Promise<void>
}

export function queueStoreContract(name: string, makeHarness: () => Promise<StoreHarness>): void {
  describe(`QueueStore contract: ${name}`, () => {
    lineContract(makeHarness)
    paceContract(makeHarness)
    absenceContract(makeHarness)
    sessionsContract(makeHarness)
    recoveryContract(makeHarness)
    modesContract(makeHarness)
    lateEdgeContract(makeHarness)
  })
}
