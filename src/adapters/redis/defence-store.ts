// DefenceStore on Redis: one EVALSHA a call (join-1.lua, refusals-1.lua), on the room's keys.
import type { Cluster, Redis } from 'ioredis'
import {
  type DefenceStore,
  type JoinInput,
  type JoinResult,
  noRefusals,
  REFUSAL_REASONS,
  type RefusalCounts,
  type RefusalReason,
} from '../../ports/defence-store.js'
import { roomKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { storeCall } from './store-call.js'

export class RedisDefenceStore implements DefenceStore {
  constructor(
    private readonly redis: Redis | Cluster,
    private readonly scripts: Scripts,
  ) {}

  async countJoin(input: JoinInput): Promise<JoinResult> {
    const reply = (await storeCall(() =>
      runScript(this.redis, this.scripts.join, [roomKeys(input.room).joins], [input.now ?? '', input.network, input.limit]),
    )) as number[]
    const [allowed, count, retryAfterMs, now] = reply as [number, number, number, number]
    return allowed === 1 ? { allowed: true, count, now } : { allowed: false, count, retryAfterMs, now }
  }

  async addRefusals(room: string, counts: Partial<Record<RefusalReason, number>>, now?: number): Promise<RefusalCounts> {
    const args: (string | number)[] = [now ?? '']
    for (const reason of REFUSAL_REASONS) if ((counts[reason] ?? 0) > 0) args.push(reason, counts[reason] as number)
    const reply = (await storeCall(() => runScript(this.redis, this.scripts.refusals, [roomKeys(room).refused], args))) as (
      | number
      | string
    )[]
    const total = noRefusals()
    const lastMinute = noRefusals()
    for (let i = 1; i + 2 < reply.length; i += 3) {
      const reason = reply[i] as RefusalReason
      if (!REFUSAL_REASONS.includes(reason)) continue
      total[reason] = Number(reply[i + 1])
      lastMinute[reason] = Number(reply[i + 2])
    }
    return { total, lastMinute, now: Number(reply[0]) }
  }
}
