// The claim gate's refusals (409) written straight to their JSON, for the doomed claims of a rush: the
// same body and headers as src/http/errors.ts renders for the AnteroomError the database path throws
// (ERR_SEATS_TAKEN from app.ts's taken409, ERR_ITEMS_SHORT from claims.ts's shortItems), without making
// that error. An Error captures a stack trace when made, and that was the largest part of a doomed
// claim's own work. test/doomed-claims.test.ts holds the two equal, field by field and header by header.
//
//   {"error": {"code": "ERR_SEATS_TAKEN", "message": "Taken: A1, A2", "taken": ["A1", "A2"], "nearest": ["A3", "B1"]}}
//   {"error": {"code": "ERR_ITEMS_SHORT", "message": "Not enough left: night-12 (1 wanted, 0 left)", "field": "items",
//              "short": [{"item": "night-12", "wanted": 1, "left": 0}]}}
import { AnteroomError, problemOf } from '../core/errors.js'

/** The headers of a 409 from the registry (none of its own today), as renderError sets them for JSON. */
function headersOf(code: 'ERR_SEATS_TAKEN' | 'ERR_ITEMS_SHORT'): Readonly<Record<string, string>> {
  return Object.freeze({
    'cache-control': 'no-store',
    ...problemOf(new AnteroomError(code, code)).headers,
    'content-type': 'application/json; charset=utf-8',
  })
}

export const TAKEN_HEADERS = headersOf('ERR_SEATS_TAKEN')
export const SHORT_HEADERS = headersOf('ERR_ITEMS_SHORT')

/** ERR_SEATS_TAKEN's message, on both paths (the gate's and the database's). */
export function takenMessage(taken: readonly string[]): string {
  return `Taken: ${taken.join(', ') || 'some of these seats'}`
}

/** ERR_ITEMS_SHORT's message, on both paths. */
export function shortMessage(short: readonly { item: string; wanted: number; left: number }[]): string {
  return `Not enough left: ${short.map((s) => `${s.item} (${s.wanted} wanted, ${s.left} left)`).join(', ')}`
}

/** ERR_SEATS_TAKEN's body: the seats asked for that are taken (at least one), and free ones near them. */
export function seatsTakenBody(taken: readonly string[], nearest: readonly string[]): string {
  return JSON.stringify({ error: { code: 'ERR_SEATS_TAKEN', message: takenMessage(taken), taken, nearest } })
}

/** ERR_ITEMS_SHORT's body: the items with fewer units left than asked for. */
export function itemsShortBody(short: readonly { item: string; wanted: number; left: number }[]): string {
  return JSON.stringify({ error: { code: 'ERR_ITEMS_SHORT', message: shortMessage(short), field: 'items', short } })
}
