// The gate's reconciler: every few seconds, each event's stock as PostgreSQL has it (the record)
// is written over the gate (ClaimGate.reconcile), which counts what it had to repair. A gate that
// lost everything (Redis flushed, restarted, replaced) is rebuilt the same way, so it is never wrong
// for longer than one period plus one reconcile. While Redis is away the origin sells on PostgreSQL
// alone; the reconciler counts the failures and rebuilds the gate when Redis is back.
import type { ClaimGate } from '../ports/claim-gate.js'
import type { SeatStore } from '../ports/seat-store.js'

export interface ReconcilerStats {
  periodMs: number
  runs: number
  /** Repairs over all runs: units whose quantity left was wrong, holds added or dropped. */
  repairs: number
  /** Events the gate knew nothing about and was built for afresh. */
  rebuilds: number
  /** Runs that could not reach the gate or the database. */
  failures: number
  /** When the last run finished, ms (this process's clock); 0 before the first. */
  lastAt: number
}

export interface ReconcilerOptions {
  gate: ClaimGate
  store: SeatStore
  /** The events to keep in step; read again every run. */
  events: () => Promise<string[]>
  /** Default 2000. */
  periodMs?: number
  /**
   * A hold the gate marked less than this long ago that PostgreSQL does not have is a claim in
   * flight, and kept (default: one period). Tests that change PostgreSQL behind the gate set 0.
   */
  graceMs?: number
  log?: (event: string, fields: Record<string, unknown>) => void
}

export class Reconciler {
  readonly stats: ReconcilerStats
  private timer: ReturnType<typeof setInterval> | undefined
  private running: Promise<void> | undefined

  constructor(private readonly o: ReconcilerOptions) {
    this.stats = { periodMs: o.periodMs ?? 2000, runs: 0, repairs: 0, rebuilds: 0, failures: 0, lastAt: 0 }
  }

  start(): this {
    this.timer ??= setInterval(() => void this.run(), this.stats.periodMs)
    ;(this.timer as { unref?: () => void }).unref?.()
    return this
  }

  /**
   * One run over every event (runs do not overlap: a call during a run waits for it). A claim the
   * gate marked within the last period and PostgreSQL has not written yet is in flight, and kept.
   */
  run(): Promise<void> {
    this.running ??= this.runOnce().finally(() => {
      this.running = undefined
    })
    return this.running
  }

  private async runOnce(): Promise<void> {
    let events: string[]
    try {
      events = await this.o.events()
    } catch (err) {
      this.failed(undefined, err)
      return
    }
    for (const event of events) {
      try {
        const snapshot = await this.o.store.stockSnapshot(event)
        const r = await this.o.gate.reconcile(event, snapshot, this.o.graceMs ?? this.stats.periodMs)
        this.stats.repairs += r.repairs
        if (r.rebuilt) {
          this.stats.rebuilds++
          this.o.log?.('gate_rebuilt', { event })
        } else if (r.repairs > 0) this.o.log?.('gate_repaired', { event, repairs: r.repairs })
      } catch (err) {
        this.failed(event, err)
      }
    }
    this.stats.runs++
    this.stats.lastAt = Date.now()
  }

  private failed(event: string | undefined, err: unknown): void {
    this.stats.failures++
    this.o.log?.('gate_reconcile_failed', { event, message: err instanceof Error ? err.message : String(err) })
  }

  async stop(): Promise<void> {
    if (this.timer !== undefined) clearInterval(this.timer)
    this.timer = undefined
    await this.running
  }
}
