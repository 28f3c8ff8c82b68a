// A room linked to an event (the `event` setting) knows when the event has nothing left: the origin
// keeps the event's stock in the ClaimGate (free, held, sold), and every edge reads it once a second
// with its rooms (src/rooms/stock.ts). Nothing here asks a store: the edge hands in the counts of
// its last look.
//
// When nothing is free there is nothing to buy, so nobody new is let in. The admission rule is not
// told anything new: the edge polls the store as for a paused room (the rule, core/admission.ts and
// poll-12.lua, grants nobody and keeps the line), and says why to the visitor:
//   - all_held (free 0, held > 0): everything is held by buyers who may still not pay; the line
//     stays, newcomers still join it, and admissions resume as soon as a hold lapses or is released;
//   - sold_out (free 0, held 0): everything is sold. Visitors in line keep their places (stock can
//     come back: a refund, a repaired count) and are told so; a newcomer gets the sold-out page
//     without a place and without a store call, and joins the line if they come back once stock has.
// Admitted visitors keep their sessions either way (they may be paying), and a turn the store granted
// before is still collected. Counts the edge does not have (no gate for the event, the store away)
// change nothing: a sale is never stopped on a missing count.
import type { StockCounts } from '../ports/claim-gate.js'
import { type AdmissionLimits, admissionLimits, type RoomSettings, schedulePhase } from './settings.js'

/** Why a linked room lets nobody new in; undefined: it admits as usual. */
export type StockStop = 'all_held' | 'sold_out'

/** What the edge knows of a linked room's event: the counts of its last look, or undefined (unknown). */
export interface StockView {
  event: string
  counts: StockCounts | undefined
  /** When the edge last looked, ms on the edge's clock. */
  at: number
}

/** What counts say: available, everything held, everything sold, or unknown. */
export type StockState = 'available' | StockStop | 'unknown'
/** Every StockState, for the API description (src/http/api-description.ts). */
export const STOCK_STATES: readonly StockState[] = ['available', 'all_held', 'sold_out', 'unknown']

export function stockState(counts: StockCounts | undefined): StockState {
  if (counts === undefined) return 'unknown'
  if (counts.free > 0) return 'available'
  return counts.held > 0 ? 'all_held' : 'sold_out'
}

/**
 * Whether, and why, a room lets nobody new in for its event's stock at `now` (ms): only a room
 * linked to an event whose counts the edge has, with nothing free, that is open (a closed room and a
 * scheduled room before its opening let nobody in anyway, and say so themselves).
 */
export function stockStop(room: RoomSettings, stock: StockView | undefined, now: number): StockStop | undefined {
  if (room.event === null || stock === undefined || stock.event !== room.event) return undefined
  const state = stockState(stock.counts)
  if (state !== 'all_held' && state !== 'sold_out') return undefined
  if (room.mode === 'closed' || schedulePhase(room, now) !== 'open') return undefined
  return state
}

/** The limits a poll hands the rule: the room's, paused while its stock stops admissions (as an admin's pause). */
export function pollLimits(room: RoomSettings, stop: StockStop | undefined): AdmissionLimits {
  const limits = admissionLimits(room)
  return stop === undefined ? limits : { ...limits, mode: 'paused' }
}
