// What a hold claims at the booking origin: numbered seats, counted items (a room type on one night,
// a general-admission tier), or both in one hold, all or nothing. The body of POST
// /events/:event/holds is read strictly, and every 400 names the field that is wrong:
//
//   {"seats": ["A1", "A2"], "items": [{"item": "night-12", "quantity": 1}, {"item": "night-13", "quantity": 1}]}
//
// Either list may be left out (or empty) when the other names something. Each seat and each unit of
// an item's quantity counts one toward the event's per-visitor limit (holds and purchases together),
// so a package of nights 12 and 13 counts 2; a single hold asking for more than the limit is a 400.
// Every unit costs the event's price. The body's rules are one schema value (holdBody): readClaim
// checks with it, and the origin's OpenAPI document (./api-description.ts) shows it.
import { type ObjectNode, readBody } from '../core/body-schema.js'
import { AnteroomError } from '../core/errors.js'
import { type EventInfo, type Hold, ITEM_KEY, type ItemClaim } from '../ports/seat-store.js'
import { shortMessage } from './refusals.js'

export const MAX_SEATS_PER_REQUEST = 50
export const MAX_ITEMS_PER_REQUEST = 20
/** A seat's name, as clients send it ("A12"). */
export const SEAT_NAME = /^[A-Za-z0-9-]{1,16}$/
/** A hold's id. */
export const HOLD_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/
/** A lane entry's id (a Redis Stream id, "ms-seq"): where a pending lane claim's answer is found. */
export const LANE_ENTRY_ID = /^\d{1,20}-\d{1,20}$/
/** A checkout's Idempotency-Key header. */
export const IDEMPOTENCY_KEY = /^[A-Za-z0-9_.:-]{8,200}$/

const utf8 = new TextDecoder('utf-8', { fatal: true })

export interface Claim {
  seats: string[]
  items: ItemClaim[]
}

const holdBodies = new Map<number | undefined, ObjectNode>()

/**
 * The body of a hold, as a schema value (core/body-schema.ts): readClaim checks it, and the origin's
 * API description (./api-description.ts) shows it. Its bounds depend on the event's per-visitor limit;
 * left out, the description's: any event's.
 */
export function holdBody(maxPerVisitor?: number): ObjectNode {
  let node = holdBodies.get(maxPerVisitor)
  if (node !== undefined) return node
  const limit = maxPerVisitor === undefined ? 'the event’s per-visitor limit' : String(maxPerVisitor)
  const missing = 'must be a list of seat names (or items: a list like [{"item": "night-12", "quantity": 1}])'
  node = {
    type: 'object',
    unknown: 'not a field of a hold, which takes seats and items',
    // A body that is not an object names nothing: it is told what a hold takes.
    wrong: { field: 'seats', text: missing },
    properties: {
      seats: {
        type: 'array',
        wrong: 'must be a list of seat names',
        maxItems: Math.min(MAX_SEATS_PER_REQUEST, maxPerVisitor ?? MAX_SEATS_PER_REQUEST),
        tooLong: (max, got) => `at most ${max} seats in one hold, got ${got}`,
        items: { type: 'string', pattern: SEAT_NAME, wrong: 'must be a seat name like "A12"' },
        unique: 'names a seat twice',
        description: 'Seat names; at most the event’s per-visitor limit.',
      },
      items: {
        type: 'array',
        wrong: 'must be a list like [{"item": "night-12", "quantity": 1}]',
        maxItems: MAX_ITEMS_PER_REQUEST,
        tooLong: (max, got) => `at most ${max} items in one hold, got ${got}`,
        uniqueBy: { key: 'item', text: (item) => `names ${item} twice` },
        items: {
          type: 'object',
          unknown: 'not a field of an item claim, which takes item and quantity',
          wrong: 'must be an object like {"item": "night-12", "quantity": 1}',
          required: ['item', 'quantity'],
          properties: {
            item: { type: 'string', pattern: ITEM_KEY, wrong: 'must be an item key like "night-12"' },
            quantity: {
              type: 'integer',
              minimum: 1,
              ...(maxPerVisitor === undefined ? {} : { maximum: maxPerVisitor }),
              wrong: `must be a whole number from 1 to ${limit}`,
              description: maxPerVisitor === undefined ? `At most ${limit}.` : undefined,
            },
          },
        },
        description: 'Counted items and how many of each.',
      },
    },
    rules: [
      {
        rule: 'some',
        keys: ['seats', 'items'],
        missing: { field: 'seats', text: missing },
        empty: { seats: 'must name at least one seat', items: 'must name at least one item' },
      },
      ...(maxPerVisitor === undefined
        ? []
        : [
            {
              rule: 'total' as const,
              max: maxPerVisitor,
              of: [{ key: 'seats' }, { key: 'items', sum: 'quantity' }],
              field: 'items',
              text: (max: number, total: number) => `at most ${max} in one hold, seats and item units together, got ${total}`,
              description: `Seats and item units together: at most ${maxPerVisitor}.`,
            },
          ]),
    ],
    description: `Seats, items or both, all or nothing. Each seat and each unit of an item counts one toward ${limit} (holds and purchases together).`,
  }
  holdBodies.set(maxPerVisitor, node)
  return node
}

/** Parses a hold's body; a 400 (ERR_BODY) names the problem and the field. */
export function readClaim(bytes: Uint8Array, event: EventInfo): Claim {
  let body: unknown
  try {
    body = JSON.parse(utf8.decode(bytes))
  } catch {
    throw new AnteroomError(
      'ERR_BODY',
      'The body must be JSON like {"seats": ["A1", "A2"]} or {"items": [{"item": "night-12", "quantity": 1}]}',
    )
  }
  const claim = readBody<Partial<Claim>>(holdBody(event.maxPerVisitor), body, 'ERR_BODY')
  return { seats: claim.seats ?? [], items: (claim.items ?? []).map(({ item, quantity }) => ({ item, quantity })) }
}

/** The 201 answer of a hold. */
export function heldBody(hold: Hold) {
  return { hold: { id: hold.id, seats: hold.seats, items: hold.items, expiresAt: hold.expiresAt } }
}

/** Some items have fewer units left than the hold asked for: a 409 saying what is left of each. */
export function shortItems(short: { item: string; wanted: number; left: number }[]): AnteroomError {
  return new AnteroomError('ERR_ITEMS_SHORT', shortMessage(short), { field: 'items', extra: { short } })
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
