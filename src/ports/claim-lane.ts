// The ClaimLane port: one ordered lane per hot event (issue #32). Origins append the claims they
// admitted to the event's lane; one allocator reads them in the lane's order, decides each against the
// stock it holds in memory, writes a batch's winners to PostgreSQL in one transaction and answers every
// claim of the batch. Redis Streams implement it (src/adapters/redis/claim-lane.ts); the allocator is
// src/booking/lane/allocator.ts, the origin's side src/booking/lane/client.ts.
import type { GateUnit } from './claim-gate.js'
import type { HoldOutcome, ItemClaim } from './seat-store.js'

/** A claim as the lane carries it: its id is the hold's id if it wins. */
export interface LaneClaim {
  id: string
  holder: string
  seats: string[]
  items: ItemClaim[]
}

/** What the lane carries besides claims: a hold's units came back, or were sold. */
export type LaneNote = { kind: 'release'; hold: string } | { kind: 'sold'; hold: string; units: GateUnit[] }

/**
 * One entry of the lane, with its stream id (the lane's order). The claims an origin appends together
 * (a turn of its event loop) are one entry, in the order they came: one append, one read and one
 * acknowledgement for them all.
 */
export type LaneEntry = { id: string } & ({ kind: 'claims'; claims: LaneClaim[] } | LaneNote)

/** A claim's answer: the allocator's, or pending while it is in the lane undecided. */
export type LaneAnswer = { claim: string; holder: string; status: 'pending' } | { claim: string; holder: string; outcome: HoldOutcome }

export interface ClaimLane {
  /** Appends a claim (with others sent at the same moment: one entry). Returns the entry's id. */
  submit(event: string, claim: LaneClaim): Promise<string>
  /** Appends a release or a sale, so that the allocator's stock learns it in the lane's order. */
  note(event: string, note: LaneNote): Promise<void>
  /**
   * The claim's answer: the allocator's once it gave one, pending while the claim is still in the lane
   * entry `entry` (the id submit() returned), undefined if that entry holds no such claim (or its answer
   * was forgotten).
   */
  answer(event: string, claim: string, entry: string): Promise<LaneAnswer | undefined>
  /** Calls back with every answer the allocators publish (one subscription for the process). */
  listen(onAnswer: (event: string, answer: LaneAnswer) => void): Promise<() => Promise<void>>
}

/** An answer of the allocator, with the entry its claim came in. */
export interface SettledAnswer {
  entry: string
  answer: LaneAnswer
}

/** The allocator's side of the lane. */
export interface LaneConsumer {
  /** Creates the consumer group if it is missing (from the lane's first entry). */
  ensureGroup(event: string): Promise<void>
  /** Takes the event's lease, or renews it if `token` holds it; false if another allocator holds it. */
  lease(event: string, token: string, ms: number): Promise<boolean>
  /** Lets the lease go if `token` holds it. */
  unlease(event: string, token: string): Promise<void>
  /**
   * Entries pending on other consumers for at least minIdleMs, taken over by this one, in the lane's
   * order. Here and in own(), a claim that already has the allocator's answer is left out of its entry
   * (its entry was left pending for another claim of it, a winner whose write did not finish).
   */
  takeOver(event: string, consumer: string, minIdleMs: number, count: number): Promise<LaneEntry[]>
  /** Entries pending on this consumer (read before it stopped), in order. */
  own(event: string, consumer: string, count: number): Promise<LaneEntry[]>
  /** New entries, waiting at most blockMs for the first (0: not at all, what is there now). */
  read(event: string, consumer: string, count: number, blockMs: number): Promise<LaneEntry[]>
  /**
   * Keeps the answers by entry (ttlMs), publishes them and acknowledges the entries `acks`, in one step.
   * An entry's answers come one after another.
   */
  settle(event: string, acks: string[], answers: SettledAnswer[], ttlMs: number): Promise<void>
}
