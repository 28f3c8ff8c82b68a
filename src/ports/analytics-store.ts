// The AnalyticsStore port: a room's minutes, kept 30 days for the post-event report (core/report.ts).
// Redis and the memory store implement it; test/contract/analytics-store.ts holds them to it.
//
// A minute is floor(ms / 60000) on the store's clock. Its first record (from whichever edge comes
// first) takes the minute's state sample: the line, the active sessions, the running totals of
// admitted and abandoned visitors (the QueueStore's), of refused joins by reason (the DefenceStore's),
// and the linked event's stock as that edge saw it. Later records in the minute leave the state alone.
// Every record adds its edge's admissions since its last one, by time in queue (one count per
// histogram bucket), so the minute holds every edge's sum.
import type { StockState } from '../core/stock.js'
import type { RefusalReason } from './defence-store.js'

/** A linked room's stock as the sampling edge saw it (core/stock.ts stockState); 'none': not linked to an event. */
export type SampledStock = StockState | 'none'
export const SAMPLED_STOCKS: readonly SampledStock[] = ['available', 'all_held', 'sold_out', 'unknown', 'none']

/** The room as the minute's first record found it. Running totals count from the room's life in the store. */
export interface MinuteState {
  waiting: number
  active: number
  /** Running totals: visitors admitted, and dropped for not polling (a store that lost the room starts again at 0). */
  admitted: number
  abandoned: number
  /** Running totals of refused joins, by reason. */
  refused: Record<RefusalReason, number>
  stock: SampledStock
}

/**
 * Admissions by time in queue: [upper bound in seconds (Infinity: above the largest bound), count],
 * bound ascending, counts above 0. Buckets are named by their bound, so edges with other bounds (a
 * rolling deploy) add up without mixing.
 */
export type WaitCounts = [bound: number, count: number][]

export interface MinuteSample {
  /** floor(ms / 60000) on the store's clock. */
  minute: number
  /** The minute's state sample; null for a minute that holds only admissions. */
  state: MinuteState | null
  /** The admissions the edges reported in this minute, by time in queue. */
  queueWait: WaitCounts
}

export interface AnalyticsInput {
  room: string
  stock: SampledStock
  /** This edge's admissions since its last successful record, by time in queue (counts of 0 are skipped). */
  queueWait: WaitCounts
  /** Time in ms. Leave it out and the store uses its own clock (Redis TIME). */
  now?: number
}

export interface AnalyticsRecord {
  /** Whether this record took the minute's state sample (it was the minute's first). */
  sampled: boolean
  minute: number
  /** The store's time of the record, ms. */
  now: number
}

export interface AnalyticsStore {
  /** One edge's record for the current minute: the state sample if the minute has none, and its admissions. */
  record(input: AnalyticsInput): Promise<AnalyticsRecord>
  /** The minutes that start in [from, to) (ms) and hold anything, oldest first. */
  minutes(room: string, from: number, to: number): Promise<MinuteSample[]>
}

export const MINUTE_MS = 60_000
/** The store keeps a room's minutes by the hour (one Redis hash an hour). */
export const ANALYTICS_HOUR_MS = 3_600_000
/** How long an hour is kept after it ends: 30 days. Every minute is kept 30 days to 30 days and an hour. */
export const ANALYTICS_KEEP_MS = 30 * 24 * ANALYTICS_HOUR_MS

/** Until when (ms, the store's clock) a minute is kept: ANALYTICS_KEEP_MS after the end of its hour. */
export function keptUntil(minute: number): number {
  return (Math.floor((minute * MINUTE_MS) / ANALYTICS_HOUR_MS) + 1) * ANALYTICS_HOUR_MS + ANALYTICS_KEEP_MS
}

/** The minutes that start in [from, to): [first, last] (last < first when none does). */
export function minutesIn(from: number, to: number): [first: number, last: number] {
  return [Math.ceil(from / MINUTE_MS), Math.ceil(to / MINUTE_MS) - 1]
}
