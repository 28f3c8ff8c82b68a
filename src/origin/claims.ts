// What a hold claims at the booking origin: numbered seats, counted items (a room type on one night,
// a general-admission tier), or both in one hold, all or nothing. The body of POST
// /events/:event/holds is read strictly, and every 400 names the field that is wrong:
//
//   {"seats": ["A1", "A2"], "items": [{"item": "night-12", "quantity": 1}, {"item": "night-13", "quantity": 1}]}
//
// Either list may be left out (or empty) when the other names something. Each seat and each unit of
// an item's quantity counts one toward the event's per-visitor limit (holds and purchases together),
// so a package of nights 12 and 13 counts 2; a single hold asking for more than the limit is a 400.
// Every unit costs the event's price.
import { AnteroomError } from '../core/errors.js'
import { type EventInfo, type Hold, ITEM_KEY, type ItemClaim } from '../ports/seat-store.js'

export const MAX_SEATS_PER_REQUEST = 50
export const MAX_ITEMS_PER_REQUEST = 20
const SEAT_NAME = /^[A-Za-z0-9-]{1,16}$/
const FIELDS = ['seats', 'items']
const ITEM_FIELDS = ['item', 'quantity']

const utf8 = new TextDecoder('utf-8', { fatal: true })
const badBody = (message: string, field?: string) => new AnteroomError('ERR_BODY', message, { field })
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

export interface Claim {
  seats: string[]
  items: ItemClaim[]
}

/** Parses a hold's body; a 400 (ERR_BODY) names the problem and the field. */
export function readClaim(bytes: Uint8Array, event: EventInfo): Claim {
  let body: unknown
  try {
    body = JSON.parse(utf8.decode(bytes))
  } catch {
    throw badBody('The body must be JSON like {"seats": ["A1", "A2"]} or {"items": [{"item": "night-12", "quantity": 1}]}')
  }
  const o = isObject(body) ? body : {}
  for (const key of Object.keys(o)) {
    if (!FIELDS.includes(key)) throw badBody(`${key}: not a field of a hold, which takes seats and items`, key)
  }
  if (!('seats' in o) && !('items' in o)) {
    throw badBody('seats: must be a list of seat names (or items: a list like [{"item": "night-12", "quantity": 1}])', 'seats')
  }
  const seats = 'seats' in o ? readSeats(o.seats, event, 'items' in o) : []
  const items = 'items' in o ? readItems(o.items, event, seats.length > 0) : []
  const units = seats.length + items.reduce((n, i) => n + i.quantity, 0)
  if (units > event.maxPerVisitor) {
    throw badBody(`items: at most ${event.maxPerVisitor} in one hold, seats and item units together, got ${units}`, 'items')
  }
  return { seats, items }
}

function readSeats(seats: unknown, event: EventInfo, itemsToo: boolean): string[] {
  if (!Array.isArray(seats)) throw badBody('seats: must be a list of seat names', 'seats')
  if (seats.length === 0 && !itemsToo) throw badBody('seats: must name at least one seat', 'seats')
  const max = Math.min(MAX_SEATS_PER_REQUEST, event.maxPerVisitor)
  if (seats.length > max) throw badBody(`seats: at most ${max} seats in one hold, got ${seats.length}`, 'seats')
  for (const [i, s] of seats.entries()) {
    if (typeof s !== 'string' || !SEAT_NAME.test(s)) throw badBody(`seats[${i}]: must be a seat name like "A12"`, `seats[${i}]`)
  }
  if (new Set(seats).size !== seats.length) throw badBody('seats: names a seat twice', 'seats')
  return seats as string[]
}

function readItems(items: unknown, event: EventInfo, seatsToo: boolean): ItemClaim[] {
  if (!Array.isArray(items)) throw badBody('items: must be a list like [{"item": "night-12", "quantity": 1}]', 'items')
  if (items.length === 0 && !seatsToo) throw badBody('items: must name at least one item', 'items')
  if (items.length > MAX_ITEMS_PER_REQUEST) {
    throw badBody(`items: at most ${MAX_ITEMS_PER_REQUEST} items in one hold, got ${items.length}`, 'items')
  }
  const out: ItemClaim[] = []
  const seen = new Set<string>()
  for (const [i, entry] of items.entries()) {
    const at = `items[${i}]`
    if (!isObject(entry)) throw badBody(`${at}: must be an object like {"item": "night-12", "quantity": 1}`, at)
    for (const key of Object.keys(entry)) {
      if (!ITEM_FIELDS.includes(key))
        throw badBody(`${at}.${key}: not a field of an item claim, which takes item and quantity`, `${at}.${key}`)
    }
    const { item, quantity } = entry
    if (typeof item !== 'string' || !ITEM_KEY.test(item)) throw badBody(`${at}.item: must be an item key like "night-12"`, `${at}.item`)
    if (typeof quantity !== 'number' || !Number.isInteger(quantity) || quantity < 1 || quantity > event.maxPerVisitor) {
      throw badBody(`${at}.quantity: must be a whole number from 1 to ${event.maxPerVisitor}`, `${at}.quantity`)
    }
    if (seen.has(item)) throw badBody(`items: names ${item} twice`, 'items')
    seen.add(item)
    out.push({ item, quantity })
  }
  return out
}

/** The 201 answer of a hold. */
export function heldBody(hold: Hold) {
  return { hold: { id: hold.id, seats: hold.seats, items: hold.items, expiresAt: hold.expiresAt } }
}

/** Some items have fewer units left than the hold asked for: a 409 saying what is left of each. */
export function shortItems(short: { item: string; wanted: number; left: number }[]): AnteroomError {
  const what = short.map((s) => `${s.item} (${s.wanted} wanted, ${s.left} left)`).join(', ')
  return new AnteroomError('ERR_ITEMS_SHORT', `Not enough left: ${what}`, { field: 'items', extra: { short } })
}

export function unknownItems(unknown: string[]): AnteroomError {
  return new AnteroomError('ERR_UNKNOWN_ITEMS', `No such items: ${unknown.join(', ')}`, { field: 'items', extra: { unknown } })
}

/** What a hold costs: the event's price for each seat and each unit of an item. */
export function holdAmount(hold: Hold): number {
  return hold.priceCents * (hold.seats.length + hold.items.reduce((n, i) => n + i.quantity, 0))
}

/**
 * The answer of a release: the seats freed, and for a hold with items the items it gave back (all of
 * them while the hold was live; an expired hold's units may have gone to another claim already).
 */
export function releasedBody(hold: Hold, released: string[]) {
  return hold.items.length === 0 ? { released } : { released, items: hold.live ? hold.items : [] }
}
