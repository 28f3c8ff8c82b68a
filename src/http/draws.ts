// A scheduled room's draw at the edge (core/draw.ts): the seed and its commitment per room and
// schedule (derived once, no store call), a joiner's drawn arrival, a visitor's draw value, and the
// published draw (GET /_anteroom/draw), which reads the room's draw from the store.

import { BoundedMap } from '../core/bounded-map.js'
import { drawCommitment, drawnArrivalUs, drawSeed, drawValue } from '../core/draw.js'
import { AnteroomError } from '../core/errors.js'
import { type RoomSettings, type Schedule, schedulePhase } from '../core/settings.js'
import type { Digests, Mac } from '../ports/crypto.js'
import type { QueueStore } from '../ports/queue-store.js'

interface Seeded {
  seed: string
  commitment: string
}

export class Draws {
  private readonly seeds = new BoundedMap<string, Promise<Seeded>>(1024)

  constructor(
    private readonly mac: Mac,
    private readonly digests: Digests,
  ) {}

  /** The room's seed and commitment (the schedule is part of the seed: a new schedule, a new draw). */
  seeded(room: string, schedule: Schedule): Promise<Seeded> {
    const key = `${room}|${Date.parse(schedule.prequeueAt)}|${Date.parse(schedule.opensAt)}`
    let s = this.seeds.get(key)
    if (s === undefined) {
      s = drawSeed(this.mac, room, schedule).then(async (seed) => ({ seed, commitment: await drawCommitment(this.digests, seed) }))
      this.seeds.set(key, s)
    }
    return s
  }

  async value(room: RoomSettings & { schedule: Schedule }, visitor: string): Promise<string> {
    const { seed } = await this.seeded(room.id, room.schedule)
    return drawValue(this.digests, seed, room.id, visitor)
  }

  /** The arrival (µs) that gives this visitor their place in the draw. */
  async arrival(room: RoomSettings & { schedule: Schedule }, visitor: string): Promise<number> {
    return drawnArrivalUs(await this.value(room, visitor), Date.parse(room.schedule.opensAt))
  }
}

/** Most entries one GET /_anteroom/draw lists. */
export const DRAW_PAGE_MAX = 1000

/** How a third party recomputes the draw (README, "Checking a draw"). */
const FORMULA = {
  seed: '32 bytes, given as hex once the sale opened',
  commitment: 'SHA-256(seed bytes), hex, published from the start of the pre-queue',
  value: 'HMAC-SHA256(key = seed bytes, message = "<room>:<ticket>"), hex',
  order: 'ascending by the first 10 hex digits (40 bits) of the value, then by ticket',
}

/**
 * GET /_anteroom/draw?room=ID[&offset=N&limit=M]: the room's commitment from the start of its
 * pre-queue; after the opening, the seed and the draw in rank order (M at most DRAW_PAGE_MAX).
 */
export async function drawAnswer(
  draws: Draws,
  queue: QueueStore,
  room: RoomSettings,
  now: number,
  query: { offset?: string; limit?: string },
): Promise<{ body: Record<string, unknown>; maxAge: number }> {
  const schedule = room.schedule
  if (schedule === null) throw new AnteroomError('ERR_NOT_FOUND', 'This room is not scheduled: it has no draw', { field: 'room' })
  const phase = schedulePhase(room, now)
  const head = { room: room.id, prequeueAt: schedule.prequeueAt, opensAt: schedule.opensAt }
  if (phase === 'scheduled') return { body: { ...head, state: 'scheduled', commitment: null }, maxAge: 1 }
  const { seed, commitment } = await draws.seeded(room.id, schedule)
  const whole = (name: 'offset' | 'limit', given: string | undefined, fallback: number, max: number) => {
    if (given === undefined) return fallback
    const n = Number(given)
    if (!/^\d+$/.test(given) || n > max) {
      throw new AnteroomError('ERR_BAD_REQUEST', `${name} must be a whole number from 0 to ${max}`, { field: name })
    }
    return n
  }
  const offset = whole('offset', query.offset, 0, Number.MAX_SAFE_INTEGER)
  const limit = whole('limit', query.limit, DRAW_PAGE_MAX, DRAW_PAGE_MAX)
  if (phase === 'prequeue') {
    const { total } = await queue.draw(room.id, 0, 0)
    return { body: { ...head, state: 'prequeue', commitment, entrants: total, formula: FORMULA }, maxAge: 1 }
  }
  const page = await queue.draw(room.id, offset, limit)
  const draw = await Promise.all(
    page.entries.map(async ([ticket], i) => ({ rank: offset + i + 1, ticket, value: await draws.value({ ...room, schedule }, ticket) })),
  )
  return { body: { ...head, state: 'drawn', commitment, seed, formula: FORMULA, entrants: page.total, offset, limit, draw }, maxAge: 5 }
}
