// An ordered lane's batches on PostgreSQL (src/booking/lane/allocator.ts): the claims an allocator let
// through, written in the lane's order in one statement and so one transaction (lane-batch.sql,
// anteroom_claim_batch in migrations/005), each by the same conditional writes as a single claim.
import { AnteroomError } from '../../core/errors.js'
import type { LaneClaim } from '../../ports/claim-lane.js'
import type { EventInfo, HoldOutcome } from '../../ports/seat-store.js'
import { type Db, sqlState } from './db.js'
import { byKey, claimRefusal } from './seat-store.js'
import { statement as sql } from './statements.js'

/** A claim's answer from the database: a 'conflict' is a claim id another visitor's hold has (never expected). */
function outcomeOf(r: Record<string, unknown>, claim: LaneClaim, event: EventInfo): HoldOutcome {
  switch (r.kind) {
    case 'held':
      return {
        kind: 'held',
        hold: {
          id: claim.id,
          eventId: event.id,
          holder: claim.holder,
          seats: claim.seats,
          items: byKey(claim.items),
          expiresAt: new Date(r.expires_at as string).toISOString(),
          status: 'active',
          live: true,
          priceCents: event.priceCents,
          room: event.room,
        },
      }
    default: {
      const refused = claimRefusal(r)
      if (refused === undefined) throw new AnteroomError('ERR_INTERNAL', `Lane claim ${claim.id}: the database answered ${String(r.kind)}`)
      return refused
    }
  }
}

export class PostgresLaneStore {
  constructor(
    private readonly db: Db,
    private readonly lockTimeoutMs = 2000,
  ) {}

  /**
   * Writes a batch's claims in their order, in one transaction; one answer per claim, in order. Two
   * allocators writing the same claim at once (one lost its lease without knowing) meet on the hold's
   * primary key: the later batch fails with a unique violation and is written again, now answering
   * that claim from its hold.
   */
  async writeBatch(event: EventInfo, claims: LaneClaim[]): Promise<HoldOutcome[]> {
    if (claims.length === 0) return []
    const body = JSON.stringify(
      claims.map((c) => ({ id: c.id, holder: c.holder, seats: c.seats, items: c.items.map(({ item, quantity }) => ({ item, quantity })) })),
    )
    for (let attempt = 1; ; attempt++) {
      try {
        const [row] = await this.db.query<{ results: unknown }>(sql('lane-batch'), [event.id, body, `${this.lockTimeoutMs}ms`, 4])
        const results = (typeof row?.results === 'string' ? JSON.parse(row.results) : row?.results) as Record<string, unknown>[]
        return claims.map((c, i) => outcomeOf(results[i] ?? {}, c, event))
      } catch (err) {
        const state = sqlState(err)
        if (attempt < 5 && (state === '23505' || state === '40001' || state === '40P01')) continue
        if (state === '55P03' || state === '57014')
          throw new AnteroomError('ERR_DB_BUSY', 'The seats are busy; please try again', { cause: err })
        throw err
      }
    }
  }
}
