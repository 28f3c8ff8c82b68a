// The DefenceStore port: what the bot defences keep in the store, so that every edge sees the same
// numbers: new places per client network in the current minute (the cap, src/http/join-cap.ts), and
// the joins refused, by reason (src/http/refusals.ts). Redis and the memory store implement it;
// test/contract/defence-store.ts holds them to it.

/** Why a join was refused: its network was over the cap, or (another engineer's) its proof of work. */
export type RefusalReason = 'network' | 'pow'
export const REFUSAL_REASONS: readonly RefusalReason[] = ['network', 'pow']

export interface JoinInput {
  room: string
  /** The client's network, as core/network.ts writes it. */
  network: string
  /** New places a network may take per minute (> 0). */
  limit: number
  /** Time in ms. Leave it out and the store uses its own clock (Redis TIME). */
  now?: number
}

/**
 * Whether the join may take a new place (and was counted), or when the network may join again: the
 * windows are the minutes of the store's clock (a fixed window), so `retryAfterMs` runs to the next one.
 */
export type JoinResult =
  | { allowed: true; count: number; now: number }
  | { allowed: false; count: number; retryAfterMs: number; now: number }

/** Joins refused in a room, by reason: since the room's keys began, and in about the last minute (10-s buckets). */
export interface RefusalCounts {
  total: Record<RefusalReason, number>
  lastMinute: Record<RefusalReason, number>
  now: number
}

export interface DefenceStore {
  /** Counts one new place against its network's cap for this minute, unless the network is at the cap. */
  countJoin(input: JoinInput): Promise<JoinResult>
  /** Adds refusals counted at an edge (one call carries an edge's last second), and answers the room's counts. */
  addRefusals(room: string, counts: Partial<Record<RefusalReason, number>>, now?: number): Promise<RefusalCounts>
}

export const noRefusals = (): Record<RefusalReason, number> => ({ network: 0, pow: 0 })

/** The 10-s bucket of a time, and how many of them "the last minute" sums (the current and five before). */
export const REFUSAL_BUCKET_MS = 10_000
export const REFUSAL_BUCKETS = 6
export const JOIN_WINDOW_MS = 60_000
