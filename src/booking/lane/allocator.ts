// The allocator of one event's ordered lane (issue #32, docs/architecture.md "The ordered lane"): it
// holds the event's lease, reads the lane in order, decides each claim against the stock it holds in
// memory (a MemoryClaimGate loaded from PostgreSQL), answers at once the claims memory refuses, and
// writes the batch's winners in one transaction with the single claim's conditional writes
// (PostgresLaneStore), answering them after the commit. An entry (the claims an origin appended in one
// turn) is acknowledged at once when memory refused all its claims, else with its last winner's answer. While winners are being written it reads and
// decides the next batches; their winners are written after, together (one transaction at a time, so
// winners reach PostgreSQL in the lane's order). A crash anywhere loses nothing: unacknowledged entries
// stay pending, the next allocator takes them over (XAUTOCLAIM) and decides them again, and a claim
// whose batch had committed is answered from its hold (anteroom_claim_batch), never claimed twice.
import { randomUUID } from 'node:crypto'
import type { ClaimGate, GateClaim } from '../../ports/claim-gate.js'
import type { LaneClaim, LaneConsumer, LaneEntry, SettledAnswer } from '../../ports/claim-lane.js'
import type { EventInfo, HoldOutcome, SeatStore } from '../../ports/seat-store.js'
import { claimUnits, ITEM_UNIT, itemUnit, NearestSeats, SEAT_UNIT } from '../gate.js'

/** Writes a batch of claims in one transaction, one answer per claim in order (PostgresLaneStore). */
export interface LaneBatches {
  writeBatch(event: EventInfo, claims: LaneClaim[]): Promise<HoldOutcome[]>
}

/** Test hooks around a batch's transaction (the crash tests stop an allocator there). */
export interface AllocatorHooks {
  beforeCommit?(claims: LaneClaim[]): Promise<void>
  afterCommit?(claims: LaneClaim[]): Promise<void>
}

export interface AllocatorOptions {
  event: string
  lane: LaneConsumer
  store: Pick<SeatStore, 'event' | 'seatMap' | 'stockSnapshot'>
  batches: LaneBatches
  /**
   * The stock it decides against: a gate of its own in this process's memory (MemoryClaimGate), loaded
   * from PostgreSQL when it takes the lease and again every resyncMs. Its clock is the allocator's.
   */
  stock: ClaimGate
  /** This allocator's name in the consumer group and its lease token; default random. */
  consumer?: string
  /** The allocator's clock, ms (the stock's should be the same: holds lapse on it). */
  clock?: () => number
  /** Most entries a batch takes (default 256). */
  batchSize?: number
  /** How long a read waits for a first entry, ms (default 200; under the Redis client's command timeout). */
  blockMs?: number
  /** The lease's length, ms (default 3000): a dead allocator's event is taken over after it. */
  leaseMs?: number
  /** Entries pending this long on another consumer are taken over (default: the lease's length). */
  idleMs?: number
  /** How long answers are kept for polls, ms (default 600,000). */
  answerTtlMs?: number
  /** The memory stock is reloaded from PostgreSQL at least this often, ms (default 5000). */
  resyncMs?: number
  hooks?: AllocatorHooks
  log?: (event: string, fields: Record<string, unknown>) => void
}

export interface AllocatorStats {
  batches: number
  claims: number
  /** Claims the memory stock refused: answered without the database. */
  refused: number
  /** Claims written to PostgreSQL (winners in memory, and claims memory knew nothing of). */
  written: number
  /** Written claims PostgreSQL refused although memory let them through: memory was wrong. */
  overruled: number
  resyncs: number
  /** Entries taken over from a stopped allocator (or this one's own, after a restart). */
  takenOver: number
  failures: number
}

/** A refusal of the memory stock, in the words the database would use: seats taken first, else items short. */
export function goneOutcome(gone: Extract<GateClaim, { kind: 'gone' }>, claim: LaneClaim): HoldOutcome {
  const taken = gone.gone.filter((g) => g.unit.startsWith(SEAT_UNIT)).map((g) => g.unit.slice(SEAT_UNIT.length))
  if (taken.length > 0) return { kind: 'taken', taken: taken.sort(), nearest: gone.nearest.map((u) => u.slice(SEAT_UNIT.length)) }
  const wanted = new Map(claim.items.map((i) => [itemUnit(i.item), i.quantity]))
  const short = gone.gone.map((g) => ({ item: g.unit.slice(ITEM_UNIT.length), wanted: wanted.get(g.unit) ?? 0, left: Math.max(0, g.left) }))
  return { kind: 'short', short }
}

export class Allocator {
  readonly stats: AllocatorStats = { batches: 0, claims: 0, refused: 0, written: 0, overruled: 0, resyncs: 0, takenOver: 0, failures: 0 }
  readonly consumer: string
  private readonly stock: ClaimGate
  private readonly clock: () => number
  private info: EventInfo | undefined
  /** The event's seat layout, for the nearest seats a refusal offers. */
  private nearest = new NearestSeats([])
  /** Holds the lease and has loaded the stock and taken over what was pending. */
  private leading = false
  private syncedAt = 0
  /** When the lease was last taken or renewed (performance.now()). */
  private leasedAt = 0
  private stopped = false
  /** The last batch's settle, in flight. */
  private settling: Promise<void> | undefined
  /** Winners decided in memory and waiting for the write in flight, in the lane's order. */
  private queued: Winner[] = []
  /** The writes in flight, one transaction at a time, until the queue is empty (never rejects: see `failure`). */
  private writing: Promise<void> | undefined
  /** Why the last write or its answers failed: the next step starts over from PostgreSQL. */
  private failure: { err: unknown } | undefined
  /** A write found memory and the database at odds: memory is reloaded before the next batch. */
  private stale = false
  private loop: Promise<void> | undefined

  constructor(private readonly o: AllocatorOptions) {
    this.consumer = o.consumer ?? `allocator-${randomUUID()}`
    this.clock = o.clock ?? Date.now
    this.stock = o.stock
  }

  /** Runs steps until stop(). */
  start(): this {
    this.loop ??= this.run()
    return this
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      try {
        await this.step()
      } catch (err) {
        this.stats.failures++
        this.leading = false
        this.o.log?.('lane_allocator_error', { event: this.o.event, message: err instanceof Error ? err.message : String(err) })
        await new Promise((r) => setTimeout(r, this.o.blockMs ?? 200))
      }
    }
  }

  /** Stops after the current step and lets the lease go. */
  async stop(): Promise<void> {
    this.stopped = true
    await this.loop
    await this.writing
    await this.settling?.catch(() => {})
    await this.o.lane.unlease(this.o.event, this.consumer).catch(() => {})
  }

  /**
   * One step: keep (or take) the lease; on taking it, load the stock and decide what was pending;
   * otherwise decide the next batch. Returns how many entries it decided (0 without the lease).
   */
  async step(): Promise<number> {
    const { event, lane } = this.o
    const leaseMs = this.o.leaseMs ?? 3000
    // A write (or its answers) failed: its batch is still pending, and so is every batch decided behind
    // it; the lease is taken again, memory reloaded and the pending entries decided again, in order.
    this.throwFailure()
    if (this.stale) {
      this.stale = false
      await this.resync(false)
    }
    // The last batch's answers may still be on their way (see decide): a plain read goes out behind them
    // on the same connection; anything else waits for them first.
    const settling = this.settling
    this.settling = undefined
    const plainRead = this.leading && performance.now() - this.leasedAt < leaseMs / 3
    if (!plainRead) await settling
    // The lease is renewed a third of the way through (not every batch: a round trip less per batch).
    if (!this.leading || performance.now() - this.leasedAt >= leaseMs / 3) {
      const at = performance.now()
      if (!(await lane.lease(event, this.consumer, leaseMs))) {
        this.leading = false
        await new Promise((r) => setTimeout(r, Math.min(this.o.blockMs ?? 200, leaseMs)))
        return 0
      }
      this.leasedAt = at
    }
    const count = this.o.batchSize ?? 256
    if (!this.leading) {
      await lane.ensureGroup(event)
      await this.resync(true)
      const pending = [
        ...(await lane.own(event, this.consumer, count)),
        ...(await lane.takeOver(event, this.consumer, this.o.idleMs ?? leaseMs, count)),
      ]
      this.leading = true
      if (pending.length > 0) {
        this.stats.takenOver += pending.length
        pending.sort((a, b) => compareIds(a.id, b.id))
        await this.decide(pending)
        return pending.length
      }
    }
    // With winners being written the read does not wait: their answers go out on this connection, and
    // a blocking read would hold them up until it returned.
    const reading = lane.read(event, this.consumer, count, this.writing === undefined ? (this.o.blockMs ?? 200) : 0)
    if (plainRead && settling !== undefined) {
      // A failed settle leaves its batch pending on this consumer: the next step decides it again,
      // with whatever this read took, from its own pending entries in order.
      reading.catch(() => {})
      await settling
    }
    const entries = await reading
    if (entries.length > 0) {
      await this.decide(entries)
      // A note the lane lost (a release appended while Redis was away) is repaired here, under load too.
      if (this.clock() - this.syncedAt >= (this.o.resyncMs ?? 5000)) await this.resync(false)
      return entries.length
    }
    // Nothing new while winners are being written: look again in a moment (Redis times a blocking read
    // out on its own clock, ~100 ms coarse), or as soon as they are written.
    if (this.writing !== undefined) {
      let timer: ReturnType<typeof setTimeout> | undefined
      await Promise.race([this.writing, new Promise((r) => (timer = setTimeout(r, WRITING_POLL_MS)))])
      clearTimeout(timer)
      return 0
    }
    // A quiet moment: entries another consumer read and never acknowledged (a second allocator that
    // lost the lease, or one that stopped just before its lease was taken) are taken over now.
    const stray = await lane.takeOver(event, this.consumer, this.o.idleMs ?? leaseMs, count)
    if (stray.length > 0) {
      this.stats.takenOver += stray.length
      await this.resync(false)
      await this.decide(stray.sort((a, b) => compareIds(a.id, b.id)))
      return stray.length
    }
    if (this.clock() - this.syncedAt >= (this.o.resyncMs ?? 5000)) await this.resync(false)
    return 0
  }

  /** Loads the event and its stock from PostgreSQL (the record) over the memory stock. */
  private async resync(withLayout: boolean): Promise<void> {
    const { event, store } = this.o
    // A snapshot taken with winners in flight would not have them, and memory would forget them.
    await this.writing
    const info = await store.event(event)
    if (info === undefined) throw new Error(`no such event: ${event}`)
    this.info = info
    if (withLayout) {
      this.nearest = new NearestSeats((await store.seatMap(event)).map(({ seat, row, number }) => ({ seat, row, number })))
    }
    await this.stock.reconcile(event, await store.stockSnapshot(event), 0)
    this.syncedAt = this.clock()
    this.stats.resyncs++
  }

  /**
   * Decides a batch in the lane's order. What memory refuses is answered at once, and an entry with no
   * winner (and every note) acknowledged; the winners are queued for writing (writeQueued) and answered
   * once their transaction commits, each entry acknowledged with its last winner.
   */
  private async decide(entries: LaneEntry[]): Promise<void> {
    const { event, lane } = this.o
    const info = this.info as EventInfo
    const refusals: SettledAnswer[] = []
    const toWrite: Winner[] = []
    const now: string[] = []
    this.stats.batches++
    for (const entry of entries) {
      if (entry.kind === 'release') await this.stock.release(event, entry.hold)
      else if (entry.kind === 'sold') await this.stock.sold(event, entry.hold, entry.units)
      else {
        let last: Winner | undefined
        for (const claim of entry.claims) {
          this.stats.claims++
          const seen = await this.stock.claim({
            event,
            hold: claim.id,
            units: claimUnits(claim.seats, claim.items),
            ttlMs: info.holdSeconds * 1000,
            candidates: claim.seats.length > 0 ? this.nearest.candidateUnits(claim.seats) : [],
            nearest: Math.max(claim.seats.length, 4),
          })
          if (seen.kind !== 'gone') {
            last = { claim, passed: seen.kind === 'pass', entry: entry.id, ack: false }
            toWrite.push(last)
            continue
          }
          this.stats.refused++
          refusals.push({ entry: entry.id, answer: { claim: claim.id, holder: claim.holder, outcome: goneOutcome(seen, claim) } })
        }
        // An entry with winners is acknowledged with its last winner's answer, after their write.
        if (last !== undefined) {
          last.ack = true
          continue
        }
      }
      now.push(entry.id)
    }
    // Not awaited here: the next step's read goes out right behind it (one round trip less per batch).
    if (now.length > 0 || refusals.length > 0) {
      this.settling = lane.settle(event, now, refusals, this.o.answerTtlMs ?? 600_000)
      // An entry's winners acknowledge it after their write: its refusals must have been kept by then.
      for (const w of toWrite) w.refused = this.settling
    }
    // A write failed: this batch was decided on memory that counted that write's winners. Its own
    // winners stay pending, and are decided again with them once memory is reloaded.
    this.throwFailure()
    if (toWrite.length === 0) return
    // The winners wait for the write in flight (PostgreSQL gets them in the lane's order, and those
    // decided meanwhile in one transaction); the next batch is read meanwhile.
    this.queued.push(...toWrite)
    this.writing ??= this.writeQueued()
    // Memory runs ahead of PostgreSQL by a few batches at most.
    if (this.queued.length >= 4 * (this.o.batchSize ?? 256)) await this.writing
  }

  /** Writes the queued winners, a batch at a time, until none are left or a write fails. */
  private async writeQueued(): Promise<void> {
    try {
      while (this.queued.length > 0) if (!(await this.write(this.queued.splice(0, this.o.batchSize ?? 256)))) break
    } finally {
      // After a failure the rest stay pending in the lane: they are decided again.
      this.queued = []
      this.writing = undefined
    }
  }

  /** Throws (once) why the last write failed; run() then starts over. */
  private throwFailure(): void {
    const failure = this.failure
    this.failure = undefined
    if (failure !== undefined) throw failure.err
  }

  /**
   * Writes a batch's winners in one transaction, answers them and acknowledges the entries whose last
   * winner it wrote; false if that failed (the failure is kept for the loop to throw).
   */
  private async write(toWrite: Winner[]): Promise<boolean> {
    const { event, lane } = this.o
    const claims = toWrite.map((w) => w.claim)
    try {
      await this.o.hooks?.beforeCommit?.(claims)
      const outcomes = await this.o.batches.writeBatch(this.info as EventInfo, claims)
      await this.o.hooks?.afterCommit?.(claims)
      this.stats.written += claims.length
      const answers: SettledAnswer[] = []
      for (const [i, { claim, passed, entry }] of toWrite.entries()) {
        const outcome = outcomes[i] as HoldOutcome
        if (outcome.kind !== 'held' && passed) await this.stock.release(event, claim.id)
        // Memory and the database disagreed (a claim memory did not know, or one it had wrong).
        if (passed && (outcome.kind === 'taken' || outcome.kind === 'short')) {
          this.stats.overruled++
          this.stale = true
        }
        if (outcome.kind === 'held' && !passed) this.stale = true
        answers.push({ entry, answer: { claim: claim.id, holder: claim.holder, outcome } })
      }
      // The refusals answered beside these winners are kept before their entries are acknowledged: if
      // that failed, the entries stay pending and are decided again (their kept answers left out).
      for (const refused of new Set(toWrite.map((w) => w.refused))) await refused
      await lane.settle(
        event,
        toWrite.flatMap((w) => (w.ack ? [w.entry] : [])),
        answers,
        this.o.answerTtlMs ?? 600_000,
      )
      return true
    } catch (err) {
      // Nothing of this batch is acknowledged: it stays pending and is decided again from a fresh stock.
      this.failure = { err }
      return false
    }
  }
}

/** How often the lane is looked at while winners are being written (its reads do not block then), ms. */
const WRITING_POLL_MS = 2

/**
 * A claim memory let through (`passed`: it knew all its units), to be written, with the lane entry it
 * came in. The entry is acknowledged (`ack`) with its last winner's answer.
 */
interface Winner {
  claim: LaneClaim
  passed: boolean
  entry: string
  ack: boolean
  /** The settle of the refusals decided in the same batch, if there were any. */
  refused?: Promise<void>
}

/** Stream ids in order. */
function compareIds(a: string, b: string): number {
  const [am = 0, as = 0] = a.split('-').map(Number)
  const [bm = 0, bs = 0] = b.split('-').map(Number)
  return am - bm || as - bs
}
