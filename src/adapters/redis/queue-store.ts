// QueueStore on Redis: every operation is one EVALSHA of a script in ./lua.
import type { Cluster, Redis } from 'ioredis'
import { AnteroomError } from '../../core/errors.js'
import type { PollInput, PollResult, QueueStore, RenewInput, RenewResult, RoomStats } from '../../ports/queue-store.js'
import { roomKeys } from './keys.js'
import { runScript, SCRIPTS } from './scripts.js'

const STATES = { 1: 'queued', 2: 'admitted', 3: 'paused' } as const

function unavailable(cause: unknown): AnteroomError {
  return new AnteroomError('ERR_STORE_UNAVAILABLE', 'Redis did not answer', { cause })
}

export class RedisQueueStore implements QueueStore {
  constructor(private readonly redis: Redis | Cluster) {}

  async poll(input: PollInput): Promise<PollResult> {
    const k = roomKeys(input.room)
    const l = input.limits
    let reply: number[]
    try {
      reply = (await runScript(
        this.redis,
        SCRIPTS.poll,
        [k.line, k.seen, k.active, k.admissions, k.stats, k.lastArrival],
        [
          input.visitor,
          input.arrival ?? '',
          input.now ?? '',
          l.mode,
          l.totalActiveUsers,
          l.newUsersPerMinute,
          l.abandonAfterMs,
          l.sessionMs,
        ],
      )) as number[]
    } catch (err) {
      throw unavailable(err)
    }
    const [code, arrival, position, waiting, admittedLastMinute, now, sessionExpires] = reply as [
      1 | 2 | 3,
      number,
      number,
      number,
      number,
      number,
      number,
    ]
    const state = STATES[code]
    if (state === 'admitted') return { state, arrival, sessionExpires, admittedLastMinute, now }
    return { state, arrival, position, waiting, admittedLastMinute, now }
  }

  async renew(input: RenewInput): Promise<RenewResult> {
    let reply: number[]
    try {
      reply = (await runScript(
        this.redis,
        SCRIPTS.renew,
        [roomKeys(input.room).active, roomKeys(input.room).ended],
        [input.visitor, input.now ?? '', input.sessionMs],
      )) as number[]
    } catch (err) {
      throw unavailable(err)
    }
    const [expires, now] = reply as [number, number]
    return expires === 0 ? undefined : { sessionExpires: expires, now }
  }

  async endSession(room: string, visitor: string, now?: number): Promise<boolean> {
    const k = roomKeys(room)
    try {
      return (await runScript(this.redis, SCRIPTS.end, [k.active, k.ended], [visitor, now ?? ''])) === 1
    } catch (err) {
      throw unavailable(err)
    }
  }

  async stats(room: string, now?: number): Promise<RoomStats> {
    const k = roomKeys(room)
    let reply: number[]
    try {
      reply = (await runScript(this.redis, SCRIPTS.stats, [k.line, k.active, k.admissions, k.stats], [now ?? ''])) as number[]
    } catch (err) {
      throw unavailable(err)
    }
    const [waiting, active, admittedLastMinute, abandoned, at] = reply as [number, number, number, number, number]
    return { waiting, active, admittedLastMinute, abandoned, now: at }
  }

  async ping(): Promise<boolean> {
    try {
      return (await this.redis.ping()) === 'PONG'
    } catch {
      return false
    }
  }

  async close(): Promise<void> {
    this.redis.disconnect()
  }
}
