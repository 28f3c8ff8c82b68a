// The booking origin's Prometheus metrics: holds and confirms by outcome, PostgreSQL statement
// latency (by SQL file), and what the claim gate and its reconciler counted. Declared once here,
// written by prom-client on Node (src/adapters/prom/exporter.ts), as the edge's are (core/metrics.ts).
import { type CounterCell, type HistogramCell, LATENCY_BUCKETS, MetricRegistry } from '../core/metrics.js'
import type { BookingGate } from './gate.js'
import type { Reconciler } from './reconciler.js'

/** How a hold ended: held, or why not (`gate`: the claim gate knew the units were gone; PostgreSQL was not asked). */
export type HoldOutcome = 'held' | 'taken' | 'limit' | 'unknown_seats' | 'short' | 'unknown_items' | 'gate' | 'error'

/** How a confirm ended: booked, declined, the hold lost (refunded, or never charged), still running elsewhere, or failed. */
export type ConfirmOutcome = 'booked' | 'declined' | 'hold_lost' | 'refunded' | 'in_progress' | 'error'

export class BookingMeters {
  readonly registry = new MetricRegistry()
  private readonly holds = this.registry.counter(
    'anteroom_origin_holds_total',
    'Hold requests by outcome: held, taken (a seat was taken), limit (over the per-visitor limit), unknown_seats, short (items), unknown_items, gate (refused by the claim gate without the database), error.',
    ['event', 'outcome'],
  )
  private readonly confirms = this.registry.counter(
    'anteroom_origin_confirms_total',
    'Confirm requests by outcome: booked (a repeat of a booked Idempotency-Key too), declined, hold_lost (nothing charged), refunded (charged, then the hold was lost), in_progress (the first request for the key is still running), error.',
    ['outcome'],
  )
  private readonly statements = this.registry.histogram(
    'anteroom_origin_db_statement_duration_seconds',
    'PostgreSQL statements by SQL file (src/adapters/postgres/sql), seconds; failed ones too.',
    ['statement'],
    LATENCY_BUCKETS,
  )
  private readonly statementErrors = this.registry.counter(
    'anteroom_origin_db_statement_errors_total',
    'PostgreSQL statements that failed, by SQL file.',
    ['statement'],
  )
  private readonly holdCells = new Map<string, CounterCell>()
  private readonly statementCells = new Map<string, HistogramCell>()

  hold(event: string, outcome: HoldOutcome): void {
    const key = `${event}\u0000${outcome}`
    let cell = this.holdCells.get(key)
    // Only events that exist get here, so the cells stay few.
    if (cell === undefined) this.holdCells.set(key, (cell = this.holds.cell(event, outcome)))
    cell.value++
  }

  confirm(outcome: ConfirmOutcome): void {
    this.confirms.cell(outcome).value++
  }

  /** One statement: which SQL file, how long (seconds), and whether it failed. */
  statement(name: string, seconds: number, ok: boolean): void {
    let cell = this.statementCells.get(name)
    if (cell === undefined) this.statementCells.set(name, (cell = this.statements.cell(name)))
    cell.observe(seconds)
    if (!ok) this.statementErrors.cell(name).value++
  }

  /** What the claim gate and its reconciler counted, read when scraped. */
  watch(gate: BookingGate | undefined, reconciler: Reconciler | undefined): void {
    const r = this.registry
    const read = (value: () => number | undefined) =>
      function* () {
        const v = value()
        if (v !== undefined) yield [[], v] as const
      }
    r.read(
      'anteroom_origin_gate_refusals_total',
      'Claims the claim gate refused (the units were gone): answered 409 without the database.',
      'counter',
      [],
      read(() => gate?.stats.refused),
    )
    r.read(
      'anteroom_origin_gate_passes_total',
      'Claims the claim gate let through to PostgreSQL.',
      'counter',
      [],
      read(() => gate?.stats.passed),
    )
    r.read(
      'anteroom_origin_gate_errors_total',
      'Claim gate calls that failed (the claim went to PostgreSQL alone).',
      'counter',
      [],
      read(() => gate?.stats.failures),
    )
    r.read(
      'anteroom_origin_gate_repairs_total',
      "Units the reconciler corrected in the claim gate from PostgreSQL's stock.",
      'counter',
      [],
      read(() => reconciler?.stats.repairs),
    )
    r.read(
      'anteroom_origin_gate_rebuilds_total',
      'Times the reconciler rebuilt an event in the claim gate (Redis had lost it).',
      'counter',
      [],
      read(() => reconciler?.stats.rebuilds),
    )
    r.read(
      'anteroom_origin_gate_reconcile_failures_total',
      'Reconciler runs that failed for an event.',
      'counter',
      [],
      read(() => reconciler?.stats.failures),
    )
  }
}
