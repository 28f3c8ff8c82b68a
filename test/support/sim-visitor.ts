// A visitor record for the simulator's verdict tests: who arrived when, and when their polls saw them queued and admitted.
import type { VisitorRecord } from '../../sim/verdicts.js'

/** A visitor who arrived at `arrivedAt`, polled queued at `lo` and saw admitted at `hi` (sent hi - 5). */
export function admitted(id: number, arrivedAt: number, lo: number, hi: number, serverArrival = arrivedAt * 1000): VisitorRecord {
  return {
    id,
    arrivedAt,
    serverArrival,
    lastQueuedSent: lo,
    admittedSent: hi - 5,
    admittedReceived: hi,
    abandoned: false,
    lastPollSent: hi - 5,
    tickets: [],
  }
}
