// QueueStore on Redis: every operation is one EVALSHA of a script in ./lua.
import type { Cluster, Redis } from 'ioredis'
import { BoundedMap } from '../../core/bounded-map.js'
import { AnteroomError } from '../../core/errors.js'
import {
  byEndTime,
  type DrawPage,
  type EndedSession,
  type FinishInput,
  type FinishResult,
  HISTORY_MS,
  type PollInput,
  type PollResult,
  type QueueStore,
  type RenewInput,
  type RenewResult,
  type RoomSample,
  type RoomStats,
  type RoomWatch,
  type WatchLook,
} from '../../ports/queue-store.js'
import { roomKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { replies, storeCall } from './store-call.js'
import { FIRST_BATCH, MAX_BATCH, nextTurn } from './turn-batches.js'

const STATES = { 1: 'queued', 2: 'admitted', 3: 'paused', 4: 'ended', 5: 'recovering', 6: 'prequeue' } as const
/** Numbers poll-12.lua answers per poll; after them, six for the call. */
const PER_POLL = 4
/** A visitor id poll-12.lua's packed polls can carry: not empty, no separator. */
const PACKABLE = /^[^,;]+$/
/*
 * How many polls a room's batch holds before it is sent, in the turn that filled it: the turn's first
 * batch FIRST_BATCH, each next one twice the last, at most MAX_BATCH; what is left goes at the end of
 * the turn (the sizes of turn-batches.ts, whose claims batch by the same rule). Under load one turn of
 * the event loop reads many visitors' requests. Sent as one call at the turn's end, Redis would work
 * only while the edge waits for it and the edge only while Redis works (a convoy: the edge was idle a
 * quarter of the time). Sent as they fill, Redis works on the first polls while the edge reads the
 * rest, and the batches still grow, for each call costs Redis more than a poll does:
 * docs/measurements-2026-12.md ("What a poll costs"). A first batch of 16, not 8, made about one call a
 * turn fewer under the bench's load (a turn read some 25 polls), and each call's write to Redis costs
 * the edge some 30 µs: in one process switching between the two, 5% more polls.
 */

interface PendingPoll {
  visitor: string
  arrival: number | undefined
  tokenExpires: number | undefined
  draw: number | undefined
  lane: number | undefined
  resolve(result: PollResult): void
  reject(err: unknown): void
}

interface Batch {
  room: string
  limits: string
  hint: string
  now: number | undefined
  polls: PendingPoll[]
  /** How many polls make it full. */
  size: number
  /** Handed to send(): full, or at the end of the turn that began it. */
  sent: boolean
}

/** Limits and hints as JSON, once per object (an edge hands the same one until it changes). */
const jsonText = new WeakMap<object, string>()
function json(value: object): string {
  let text = jsonText.get(value)
  if (text === undefined) jsonText.set(value, (text = JSON.stringify(value)))
  return text
}
const NO_HINT = JSON.stringify({ active: 0 })

/**
 * The integers of poll-12.lua's answer, each written in decimal and followed by ",": undefined for
 * any other text. Read in one pass: µs times have 16 digits, exact in a double (below 2^53).
 */
export function readIntegers(text: string): number[] | undefined {
  const out: number[] = []
  let n = 0
  let digits = 0
  let negative = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c >= 0x30 && c <= 0x39) {
      n = n * 10 + (c - 0x30)
      digits++
    } else if (c === 0x2c && digits > 0) {
      out.push(negative ? -n : n)
      n = 0
      digits = 0
      negative = false
    } else if (c === 0x2d && digits === 0 && !negative) {
      negative = true
    } else return undefined
  }
  return digits === 0 && !negative ? out : undefined
}

/** 10^8: below it a number is a small integer, which V8 writes quickly. */
const E8 = 1e8

/**
 * String(n) for a safe integer, eight digits at a time. A µs arrival (16 digits) and a ms expiry (13)
 * are not small integers, and V8 writes those through its general double-to-text path, about twice
 * as slow; every poll in a batch carries two.
 */
export function decimal(n: number): string {
  if (n < E8 || !Number.isSafeInteger(n)) return String(n)
  const high = Math.floor(n / E8)
  const low = String(n - high * E8)
  return `${decimal(high)}${'00000000'.slice(low.length)}${low}`
}

function optionalDecimal(n: number | undefined): string {
  return n === undefined ? '' : decimal(n)
}

/** poll-12.lua's twelve keys for a room, made once per room (an edge serves few rooms; at most ROOMS_KEPT kept). */
const ROOMS_KEPT = 1024
const pollKeysOf = new BoundedMap<string, string[]>(ROOMS_KEPT)
function pollKeys(room: string): string[] {
  let keys = pollKeysOf.get(room)
  if (keys === undefined) {
    const k = roomKeys(room)
    keys = [k.line, k.sweep, k.active, k.admissions, k.stats, k.lastArrival, k.seenPrefix, k.used, k.ended, k.pace, k.life, k.drawn]
    pollKeysOf.set(room, keys)
  }
  return keys
}

export class RedisQueueStore implements QueueStore {
  /** Per room, the batch being gathered in this turn of the event loop. */
  private readonly gathering = new Map<string, Batch>()
  /** Per room, the size of its next batch in this turn, once one was sent full. */
  private readonly nextSize = new Map<string, number>()

  constructor(
    private readonly redis: Redis | Cluster,
    private readonly scripts: Scripts,
  ) {}

  /**
   * Polls of a room that arrive together (with the same limits, hint and clock) go to Redis as one
   * EVALSHA, when the batch is full (FIRST_BATCH, then twice as many) or at the end of the current
   * turn of the event loop: each poll still costs one round trip, but ioredis and Redis handle one
   * command for many visitors. Hints are never merged:
   * a StoreRelay serves the polls of many Worker isolates, each with its own hint (an outage it saw,
   * the life and active count it knows), and the script must hear each.
   */
  poll(input: PollInput): Promise<PollResult> {
    // The limits go to Lua as JSON by name (lib/limits.lua).
    const limits = json(input.limits)
    const hint = input.hint === undefined ? NO_HINT : json(input.hint)
    let batch = this.gathering.get(input.room)
    if (batch === undefined || batch.limits !== limits || batch.hint !== hint || batch.now !== input.now) {
      // The room's polls reach Redis in the order they came: one with other limits, hint or clock
      // sends what gathered before it.
      if (batch !== undefined) this.flush(batch)
      const size = this.nextSize.get(input.room) ?? FIRST_BATCH
      const flushing: Batch = { room: input.room, limits, hint, now: input.now, polls: [], size, sent: false }
      this.gathering.set(input.room, flushing)
      nextTurn(() => this.endOfTurn(flushing))
      batch = flushing
    }
    const polls = batch.polls
    const answer = new Promise<PollResult>((resolve, reject) =>
      polls.push({
        visitor: input.visitor,
        arrival: input.arrival,
        tokenExpires: input.tokenExpires,
        draw: input.draw,
        lane: input.lane,
        resolve,
        reject,
      }),
    )
    if (polls.length >= batch.size) {
      this.nextSize.set(batch.room, Math.min(MAX_BATCH, 2 * batch.size))
      this.flush(batch)
    }
    return answer
  }

  /** After the turn that began a batch: it goes if it has not, and the room's next turn starts small. */
  private endOfTurn(batch: Batch): void {
    this.nextSize.delete(batch.room)
    this.flush(batch)
  }

  /** Sends a batch once, and lets the room's next polls gather into a new one. */
  private flush(batch: Batch): void {
    if (batch.sent) return
    batch.sent = true
    if (this.gathering.get(batch.room) === batch) this.gathering.delete(batch.room)
    void this.send(batch)
  }

  private async send(batch: Batch): Promise<void> {
    const { polls } = batch
    // The polls go as one argument (poll-12.lua's ARGV[4]): ioredis writes 4 arguments for any batch.
    const sent: PendingPoll[] = []
    let packed = ''
    for (const p of polls) {
      if (!PACKABLE.test(p.visitor)) {
        p.reject(new AnteroomError('ERR_BAD_REQUEST', 'A visitor id must be non-empty and hold neither "," nor ";"'))
        continue
      }
      sent.push(p)
      packed += `${p.visitor},${optionalDecimal(p.arrival)},${optionalDecimal(p.tokenExpires)},${optionalDecimal(p.draw)},${optionalDecimal(p.lane)};`
    }
    if (sent.length === 0) return
    // After the PER_POLL numbers of each poll come the call's: waiting, admitted in the last minute,
    // now, and the room's life (epoch, born, seq), as one text (poll-12.lua's output). An answer of
    // any other length would pair polls with others' answers, so it fails the batch as a store
    // failure (storeCall).
    const tail = sent.length * PER_POLL
    let reply: number[]
    try {
      reply = await storeCall(async () => {
        const answer = await runScript(this.redis, this.scripts.poll, pollKeys(batch.room), [
          batch.now ?? '',
          batch.limits,
          batch.hint,
          packed,
        ])
        const numbers = typeof answer === 'string' ? readIntegers(answer) : undefined
        if (numbers === undefined || numbers.length !== tail + 6)
          throw new Error(
            `poll-12.lua answered ${numbers === undefined ? typeof answer : `${numbers.length} numbers`} for ${sent.length} polls`,
          )
        return numbers
      })
    } catch (err) {
      // One failure answers every poll of the batch.
      for (const p of sent) p.reject(err)
      return
    }
    const waiting = reply[tail] as number
    const admittedLastMinute = reply[tail + 1] as number
    const now = reply[tail + 2] as number
    const life = { epoch: reply[tail + 3] as number, born: reply[tail + 4] as number, seq: reply[tail + 5] as number }
    for (let i = 0; i < sent.length; i++) {
      const p = sent[i] as PendingPoll
      const at = i * PER_POLL
      const state = STATES[reply[at] as 1 | 2 | 3 | 4 | 5 | 6]
      const arrival = reply[at + 1] as number
      const drawRank = reply[at + 3] as number
      if (state === 'admitted')
        p.resolve({ state, arrival, sessionExpires: reply[at + 2] as number, admittedLastMinute, now, drawRank, life })
      else if (state === 'ended') p.resolve({ state, arrival: 0, admittedLastMinute, now, life })
      else p.resolve({ state, arrival, position: reply[at + 2] as number, waiting, admittedLastMinute, now, drawRank, life })
    }
  }

  async renew(input: RenewInput): Promise<RenewResult> {
    const k = roomKeys(input.room)
    const reply = (await storeCall(() =>
      runScript(
        this.redis,
        this.scripts.renew,
        [k.active, k.ended, k.life, k.line, k.seenPrefix, k.finished],
        [input.visitor, input.now ?? '', input.sessionMs],
      ),
    )) as number[]
    const [expires, now] = reply as [number, number]
    return expires === 0 ? undefined : { sessionExpires: expires, now }
  }

  async endSession(room: string, visitor: string, now?: number): Promise<boolean> {
    const k = roomKeys(room)
    return (await storeCall(() => runScript(this.redis, this.scripts.end, [k.active, k.ended], [visitor, now ?? '']))) === 1
  }

  async finishSession(input: FinishInput): Promise<FinishResult> {
    const k = roomKeys(input.room)
    const [active, at] = (await storeCall(() =>
      runScript(this.redis, this.scripts.finish, [k.active, k.finished], [input.visitor, input.now ?? '', input.keepMs]),
    )) as [number, number]
    return { active: active === 1, at }
  }

  async stats(room: string, now?: number): Promise<RoomStats> {
    const k = roomKeys(room)
    const reply = (await storeCall(() =>
      runScript(this.redis, this.scripts.stats, [k.line, k.active, k.admissions, k.stats], [now ?? '']),
    )) as number[]
    const [waiting, active, admittedLastMinute, abandoned, abandonedLastMinute, at] = reply as [
      number,
      number,
      number,
      number,
      number,
      number,
    ]
    return { waiting, active, admittedLastMinute, abandoned, abandonedLastMinute, now: at }
  }

  async watch(room: string, endedSince: number, limit = 10_000, asked: WatchLook = { ranks: [], visitors: [] }): Promise<RoomWatch> {
    const k = roomKeys(room)
    // One round trip: the room's keys share a hash tag, so a pipeline stays on one node of a Cluster.
    // After the ended sessions, the life and the active count, what the edge estimates waits from
    // (core/eta.ts): the line's length, the pace, the reservation, the running totals, the expiries
    // of the visitors asked for (ZMSCORE, Redis 6.2), and the active set's entry at each rank asked.
    const [flat, finished, life, active, waiting, pace, reserve, totals, scores, ...sampled] = await storeCall(async () => {
      const pipeline = this.redis
        .pipeline()
        .zrangebyscore(k.ended, endedSince, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
        .zrangebyscore(k.finished, endedSince, '+inf', 'WITHSCORES', 'LIMIT', 0, limit)
        .hmget(k.life, 'epoch', 'born', 'seq')
        .zcard(k.active)
        .zcard(k.line)
        .get(k.pace)
        .hmget(k.life, 'reserved', 'reservedUntil')
        .hmget(k.stats, 'admitted', 'abandoned')
      // ZMSCORE needs one member at least; an empty answer stands in for none asked.
      if (asked.visitors.length > 0) pipeline.zmscore(k.active, ...asked.visitors)
      else pipeline.echo('')
      for (const rank of asked.ranks) pipeline.zrange(k.active, String(rank), String(rank), 'WITHSCORES')
      return replies(await pipeline.exec())
    })
    // Ended by an admin or by the origin: every edge refuses the tokens from before alike.
    let ended: EndedSession[] = []
    for (const pairs of [flat, finished] as string[][]) {
      for (let i = 0; i < pairs.length; i += 2) ended.push({ visitor: pairs[i] as string, at: Number(pairs[i + 1]) })
    }
    ended = ended.sort(byEndTime).slice(0, limit)
    const [epoch, born, seq] = life as (string | null)[]
    const known = epoch && born ? { epoch: Number(epoch), born: Number(born), seq: Number(seq ?? 0) } : null
    const size = active as number
    // Negative ranks count from the end, as in ZRANGE; each rank once, in order.
    const expiries: [number, number, string][] = []
    asked.ranks.forEach((at, i) => {
      const rank = at < 0 ? size + at : at
      const reply = sampled[i] as string[]
      if (reply.length < 2 || rank < 0 || rank >= size || expiries.some(([r]) => r === rank)) return
      expiries.push([rank, Number(reply[1]), reply[0] as string])
    })
    const tracked = asked.visitors.map((_, i) => {
      const score = (scores as (string | null)[])[i]
      return score === null || score === undefined ? null : Number(score)
    })
    expiries.sort((a, b) => a[0] - b[0])
    const [reserved, reservedUntil] = reserve as (string | null)[]
    const [admitted, abandoned] = totals as (string | null)[]
    return {
      ended,
      life: known,
      active: size,
      waiting: waiting as number,
      lastSlotUs: pace === null ? null : Number(pace),
      reserved: Number(reserved ?? 0),
      reservedUntil: Number(reservedUntil ?? 0),
      expiries,
      tracked,
      admitted: Number(admitted ?? 0),
      abandoned: Number(abandoned ?? 0),
    }
  }

  async allowAgain(room: string, visitor: string): Promise<boolean> {
    return (await storeCall(() => this.redis.zrem(roomKeys(room).ended, visitor))) === 1
  }

  async draw(room: string, offset: number, limit: number): Promise<DrawPage> {
    const key = roomKeys(room).drawn
    const [total, flat] = await storeCall(async () => {
      const replies = await this.redis
        .multi()
        .zcard(key)
        .zrange(key, String(offset), String(offset + limit - 1), 'WITHSCORES')
        .exec()
      return (replies ?? []).map(([err, value]) => {
        if (err) throw err
        return value
      }) as [number, string[]]
    })
    const entries: [string, number][] = []
    for (let i = 0; i + 1 < flat.length; i += 2) entries.push([flat[i] as string, Number(flat[i + 1])])
    return { total, entries }
  }

  async endAllSessions(room: string, now?: number): Promise<number> {
    const k = roomKeys(room)
    return (await storeCall(() => runScript(this.redis, this.scripts.endAll, [k.active, k.ended], [now ?? '']))) as number
  }

  async recordSample(room: string, now?: number): Promise<void> {
    const k = roomKeys(room)
    await storeCall(() =>
      runScript(this.redis, this.scripts.sample, [k.line, k.active, k.admissions, k.stats, k.history], [now ?? '', HISTORY_MS]),
    )
  }

  async history(room: string): Promise<RoomSample[]> {
    const all = await storeCall(() => this.redis.hgetall(roomKeys(room).history))
    return Object.values(all)
      .map((line) => {
        const [t, waiting, active, admittedLastMinute, abandonedLastMinute] = line.split(',').map(Number) as [
          number,
          number,
          number,
          number,
          number,
        ]
        return { t, waiting, active, admittedLastMinute, abandonedLastMinute }
      })
      .sort((a, b) => a.t - b.t)
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
