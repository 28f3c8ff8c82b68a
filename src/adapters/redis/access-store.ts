// AccessStore on Redis: a redemption is one EVALSHA of access-redeem-7.lua; creating, listing and
// revoking are the admin's, a MULTI or a pipeline on the room's access keys (one Cluster slot).
import type { Cluster, Redis } from 'ioredis'
import { type AccessGrant, type GrantTerms, LANES, type RedeemInput, type RedeemProblem, type Redemption } from '../../core/access.js'
import type { AccessStore, GrantPage, NewGrant } from '../../ports/access-store.js'
import { accessKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { replies, storeCall } from './store-call.js'

const PROBLEMS: Readonly<Record<number, RedeemProblem>> = { 3: 'unknown', 4: 'used_up', 5: 'expired', 6: 'revoked', 7: 'throttled' }
/** Most grants one call makes. */
const BATCH_MAX = 1000

function grantOf(json: string | null, used: string | null, revoked: string | null): AccessGrant | undefined {
  if (json === null) return undefined
  const terms = JSON.parse(json) as GrantTerms
  return { ...terms, used: Number(used ?? 0), revokedAt: revoked === null ? null : Number(revoked) }
}

export class RedisAccessStore implements AccessStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly scripts: Scripts,
  ) {}

  async create(room: string, grants: readonly NewGrant[]): Promise<void> {
    if (grants.length > BATCH_MAX) throw new RangeError(`at most ${BATCH_MAX} grants at once`)
    const k = accessKeys(room)
    await storeCall(async () => {
      // The list's order is the order of creation, whoever makes grants at once: numbers from one counter.
      const last = await this.redis.incrby(k.made, grants.length)
      const multi = this.redis.multi()
      grants.forEach((g, i) => {
        multi.hset(k.grants, g.terms.id, JSON.stringify(g.terms))
        if (g.digest !== undefined) multi.hset(k.codes, g.digest, g.terms.id)
        multi.zadd(k.order, 'NX', last - grants.length + 1 + i, g.terms.id)
      })
      replies(await multi.exec())
    })
  }

  async list(room: string, offset: number, limit: number): Promise<GrantPage> {
    const k = accessKeys(room)
    const [total, ids] = (await storeCall(async () =>
      replies(
        await this.redis
          .pipeline()
          .zcard(k.order)
          .zrevrange(k.order, offset, offset + limit - 1)
          .exec(),
      ),
    )) as [number, string[]]
    return { total, grants: ids.length === 0 ? [] : await this.many(room, ids) }
  }

  /** The grants of these ids, in their order (one round trip). */
  private async many(room: string, ids: string[]): Promise<AccessGrant[]> {
    const k = accessKeys(room)
    const [terms, used, revoked] = (await storeCall(async () =>
      replies(
        await this.redis
          .pipeline()
          .hmget(k.grants, ...ids)
          .hmget(k.used, ...ids)
          .hmget(k.revoked, ...ids)
          .exec(),
      ),
    )) as [(string | null)[], (string | null)[], (string | null)[]]
    return ids.flatMap((_, i) => grantOf(terms[i] ?? null, used[i] ?? null, revoked[i] ?? null) ?? [])
  }

  async get(room: string, id: string): Promise<AccessGrant | undefined> {
    return (await this.many(room, [id]))[0]
  }

  async revoke(room: string, id: string, at: number): Promise<AccessGrant | undefined> {
    const k = accessKeys(room)
    // Grants are never deleted: a grant seen here is still there for HSETNX.
    const exists = await storeCall(() => this.redis.hexists(k.grants, id))
    if (exists !== 1) return undefined
    await storeCall(() => this.redis.hsetnx(k.revoked, id, String(at)))
    return this.get(room, id)
  }

  async redeem(input: RedeemInput): Promise<Redemption> {
    const k = accessKeys(input.room)
    const byCode = 'code' in input.by
    const reply = (await storeCall(() =>
      runScript(
        this.redis,
        this.scripts.accessRedeem,
        [k.grants, k.used, k.revoked, k.codes, k.redeemed, k.last, k.failures],
        [
          input.now ?? '',
          byCode ? 'code' : 'link',
          'code' in input.by ? input.by.code : input.by.link,
          input.visitor,
          input.network,
          input.triesPerMinute,
        ],
      ),
    )) as [number, number, number, number, number, number, string]
    const [status, arrival, used, retryAfterMs, now, lane, grant] = reply
    if (status === 1 || status === 2) {
      return { ok: true, grant, lane: LANES[lane - 1] ?? 'priority', arrival, again: status === 2, used, now }
    }
    return { ok: false, problem: PROBLEMS[status] ?? 'unknown', retryAfterMs, now }
  }
}
