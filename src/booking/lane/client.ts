// The booking origin's side of the ordered lane (./allocator.ts): a claim for a lane event is appended
// to the event's lane (with the others of the same turn: one entry) and its answer awaited (published
// by the allocator; one subscription per process), at most waitMs; then the claim is pending, and the
// client polls it at GET /events/:event/claims/:id?entry=<its entry>. Releases and sales are appended too, so that the allocator's stock
// learns them in the lane's order.
import { randomUUID } from 'node:crypto'
import { AnteroomError } from '../../core/errors.js'
import type { GateUnit } from '../../ports/claim-gate.js'
import type { ClaimLane, LaneAnswer } from '../../ports/claim-lane.js'
import type { HoldOutcome, ItemClaim } from '../../ports/seat-store.js'

/** A claim the allocator has not decided yet: the client polls it (by its id and its lane entry's). */
export interface PendingClaim {
  kind: 'pending'
  claim: string
  entry: string
}

export interface BookingLaneOptions {
  lane: ClaimLane
  /** Whether an event's claims go through the lane (off for every event unless chosen). */
  events: (event: string) => boolean
  /** How long a claim waits for its answer before it is answered 202, ms (default 2000). */
  waitMs?: number
  /** How long answers are kept for polls, ms (default 600,000: the allocator's too). */
  answerTtlMs?: number
  log?: (event: string, fields: Record<string, unknown>) => void
}

export class BookingLane {
  /** Requests waiting in this process, by claim id. */
  private readonly waiting = new Map<string, (answer: LaneAnswer) => void>()
  private unlisten: (() => Promise<void>) | undefined

  constructor(private readonly o: BookingLaneOptions) {}

  on(event: string): boolean {
    return this.o.events(event)
  }

  /** Subscribes to the allocators' answers; claims wait for them from then on. */
  async start(): Promise<this> {
    this.unlisten ??= await this.o.lane.listen((_event, answer) => this.waiting.get(answer.claim)?.(answer))
    return this
  }

  async close(): Promise<void> {
    await this.unlisten?.()
    this.unlisten = undefined
  }

  /**
   * Appends the claim and waits for its answer; a lane it cannot reach is ERR_LANE_UNAVAILABLE (a 503).
   * `id` is the claim's (and its hold's) id: the one the claim gate marked its units under, if it did.
   */
  async hold(input: {
    event: string
    holder: string
    seats: string[]
    items: ItemClaim[]
    id?: string
  }): Promise<HoldOutcome | PendingClaim> {
    const claim = { id: input.id ?? randomUUID(), holder: input.holder, seats: input.seats, items: input.items }
    // The answer, or undefined once waitMs have passed (one promise for both: one of these a claim).
    let resolve: (answer: LaneAnswer | undefined) => void = () => {}
    const answered = new Promise<LaneAnswer | undefined>((r) => {
      resolve = r
    })
    this.waiting.set(claim.id, resolve)
    let timer: ReturnType<typeof setTimeout> | undefined
    try {
      const entry = await this.o.lane.submit(input.event, claim).catch((cause: unknown) => {
        throw new AnteroomError('ERR_LANE_UNAVAILABLE', 'The claim lane is unavailable; nothing was claimed', { cause })
      })
      timer = setTimeout(() => resolve(undefined), this.o.waitMs ?? 2000)
      const heard = await answered
      if (heard !== undefined && 'outcome' in heard) return heard.outcome
      // Waited long enough: unless it was answered while this process was not listening (answers are
      // kept with their entry), it is pending, and its polls name the claim and its entry. It is in the
      // lane either way, so a lane unreachable here is a 202 too: its answer will be kept for the polls.
      const kept = await this.o.lane.answer(input.event, claim.id, entry).catch(() => undefined)
      return kept !== undefined && 'outcome' in kept ? kept.outcome : { kind: 'pending', claim: claim.id, entry }
    } finally {
      clearTimeout(timer)
      this.waiting.delete(claim.id)
    }
  }

  /** The claim's answer for its holder; undefined if there is none (or it is another visitor's). */
  async answer(event: string, claim: string, entry: string, holder: string): Promise<HoldOutcome | PendingClaim | undefined> {
    const answer = await this.o.lane.answer(event, claim, entry).catch((cause: unknown) => {
      throw new AnteroomError('ERR_LANE_UNAVAILABLE', 'The claim lane is unavailable', { cause })
    })
    if (answer === undefined || answer.holder !== holder) return undefined
    return 'outcome' in answer ? answer.outcome : { kind: 'pending', claim, entry }
  }

  /** A hold's units came back (released, lost, refunded); best effort: the allocator resyncs anyway. */
  async released(event: string, hold: string): Promise<void> {
    if (!this.on(event)) return
    await this.o.lane.note(event, { kind: 'release', hold }).catch((err) => this.failed('release', err))
  }

  /** A hold was sold; best effort. */
  async sold(event: string, hold: string, units: GateUnit[]): Promise<void> {
    if (!this.on(event)) return
    await this.o.lane.note(event, { kind: 'sold', hold, units }).catch((err) => this.failed('sold', err))
  }

  private failed(call: string, err: unknown): void {
    this.o.log?.('lane_unavailable', { call, message: err instanceof Error ? err.message : String(err) })
  }
}
