// The AccessStore port: each room's access codes and invite links (core/access.ts), their uses, their
// revocations and the wrong codes tried per client network, shared by every edge. A redemption is one
// atomic step, so uses are counted exactly however many edges redeem at once. Redis and the memory
// store implement it; test/contract/access-store.ts holds them to it.
import type { AccessGrant, GrantTerms, RedeemInput, Redemption } from '../core/access.js'

export interface NewGrant {
  terms: GrantTerms
  /** A code's digest (AccessTokens.codeDigest), which leads a redemption to its grant; none for a link. */
  digest?: string
}

export interface GrantPage {
  /** How many grants the room has. */
  total: number
  /** Newest first. */
  grants: AccessGrant[]
}

export interface AccessStore {
  /** Keeps new grants of a room, in the order given (a batch of codes keeps its order in the list). */
  create(room: string, grants: readonly NewGrant[]): Promise<void>
  /** The room's grants, newest first, from `offset` (0-based), at most `limit`, with how many there are. */
  list(room: string, offset: number, limit: number): Promise<GrantPage>
  get(room: string, id: string): Promise<AccessGrant | undefined>
  /** Revokes a grant at `at` (ms); the first revocation's time is kept. Undefined when the room has no such grant. */
  revoke(room: string, id: string, at: number): Promise<AccessGrant | undefined>
  /** One redemption (core/access.ts redeem), atomically. */
  redeem(input: RedeemInput): Promise<Redemption>
}

/** Most grants one list returns. */
export const GRANT_PAGE_MAX = 1000
