// ClaimLane on Redis Streams: one stream per event under the hash tag {lane:<event>} (keys.ts laneKeys),
// one consumer group, answers kept per claim and published on the event's channel (lua/lane-*.lua).

import type { Redis } from 'ioredis'
import type { GateUnit } from '../../ports/claim-gate.js'
import type { ClaimLane, LaneAnswer, LaneClaim, LaneConsumer, LaneEntry, LaneNote } from '../../ports/claim-lane.js'
import { type RedisClient, whenReady } from './connect.js'
import { LANE_DONE_PATTERN, laneKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { storeCall } from './store-call.js'
import { TurnBatches } from './turn-batches.js'

/** The lane's one consumer group: every allocator of an event reads in it. */
export const LANE_GROUP = 'allocators'

type RawEntry = [id: string, fields: string[]]

function entryOf([id, fields]: RawEntry): LaneEntry | undefined {
  const at = fields.indexOf('j')
  if (at < 0 || at + 1 >= fields.length) return undefined
  const j = JSON.parse(fields[at + 1] as string) as { k: string; c?: LaneClaim; h?: string; u?: GateUnit[] }
  if (j.k === 'claim' && j.c !== undefined) return { id, kind: 'claim', claim: j.c }
  if (typeof j.h !== 'string') return undefined
  if (j.k === 'release') return { id, kind: 'release', hold: j.h }
  if (j.k === 'sold') return { id, kind: 'sold', hold: j.h, units: j.u ?? [] }
  return undefined
}

/** Entries in order; one the lane cannot read (written by another version) is left out. */
const entriesOf = (raw: RawEntry[] | null | undefined): LaneEntry[] => (raw ?? []).flatMap((r) => entryOf(r) ?? [])

/** The event named by an answers channel (`anteroom:{lane:<event>}:done`). */
const eventOfChannel = (channel: string) => /^anteroom:\{lane:(.*)\}:done$/.exec(channel)?.[1]

/** A claim to append to its event's lane, with how long its answer is kept. */
interface Submission {
  event: string
  claim: LaneClaim
  ttlMs: number
}

export class RedisClaimLane implements ClaimLane, LaneConsumer {
  /** Sent at the end of a turn (turn-batches.ts): a submission that timed out would be a 503. */
  private readonly submissions = new TurnBatches<Submission, string>((batch) => this.send(batch), false)

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: Scripts,
  ) {}

  /**
   * Claims that arrive together (same event and answer lifetime) wait for the end of the current turn of
   * the event loop and go to Redis as one EVALSHA, in the order they came: a rush is a few commands.
   */
  submit(event: string, claim: LaneClaim, ttlMs: number): Promise<string> {
    return this.submissions.add(`${event}|${ttlMs}`, { event, claim, ttlMs })
  }

  /** One EVALSHA for claims of the same event and answer lifetime, in the order they came: their entry ids. */
  private async send(batch: Submission[]): Promise<string[]> {
    const { event, ttlMs } = batch[0] as Submission
    const k = laneKeys(event)
    const args: (string | number)[] = [ttlMs]
    for (const { claim } of batch) {
      const pending: LaneAnswer = { claim: claim.id, holder: claim.holder, status: 'pending' }
      args.push(claim.id, JSON.stringify(pending), JSON.stringify({ k: 'claim', c: claim }))
    }
    return (await storeCall(() => runScript(this.redis, this.scripts.laneSubmit, [k.claims, k.answers], args))) as string[]
  }

  /**
   * The same lane on a connection of its own, for an allocator: its blocking reads (XREADGROUP BLOCK)
   * hold up every later command on their connection, the origin's claims included.
   */
  async dedicated(): Promise<{ lane: RedisClaimLane; close: () => void }> {
    const client = (this.redis as Redis).duplicate()
    client.on('error', () => {})
    // Not ready within the wait: the allocator's steps fail and are tried again until it is.
    await whenReady(client, 2000)
    return { lane: new RedisClaimLane(client, this.scripts), close: () => client.disconnect() }
  }

  async note(event: string, note: LaneNote): Promise<void> {
    await storeCall(() =>
      this.redis.xadd(
        laneKeys(event).claims,
        '*',
        'j',
        JSON.stringify(note.kind === 'sold' ? { k: 'sold', h: note.hold, u: note.units } : { k: note.kind, h: note.hold }),
      ),
    )
  }

  async answer(event: string, claim: string): Promise<LaneAnswer | undefined> {
    const json = await storeCall(() => this.redis.get(`${laneKeys(event).answers}${claim}`))
    return json === null ? undefined : (JSON.parse(json) as LaneAnswer)
  }

  async listen(onAnswer: (event: string, answer: LaneAnswer) => void): Promise<() => Promise<void>> {
    const sub = (this.redis as Redis).duplicate()
    sub.on('pmessage', (_pattern: string, channel: string, message: string) => {
      const event = eventOfChannel(channel)
      if (event === undefined) return
      for (const answer of JSON.parse(message) as LaneAnswer[]) onAnswer(event, answer)
    })
    sub.on('error', () => {})
    // ioredis subscribes again by itself after a reconnection; answers published meanwhile are read
    // from their keys by the waiting requests (BookingLane.hold).
    await whenReady(sub, 2000)
    await storeCall(() => sub.psubscribe(LANE_DONE_PATTERN)).catch((err) => {
      sub.disconnect()
      throw err
    })
    return async () => {
      sub.disconnect()
    }
  }

  async ensureGroup(event: string): Promise<void> {
    try {
      await this.redis.xgroup('CREATE', laneKeys(event).claims, LANE_GROUP, '0', 'MKSTREAM')
    } catch (err) {
      if (!(err instanceof Error && err.message.startsWith('BUSYGROUP'))) throw err
    }
  }

  async lease(event: string, token: string, ms: number): Promise<boolean> {
    return (await runScript(this.redis, this.scripts.laneLease, [laneKeys(event).lease], ['take', token, ms])) === 1
  }

  async unlease(event: string, token: string): Promise<void> {
    await runScript(this.redis, this.scripts.laneLease, [laneKeys(event).lease], ['drop', token, 0])
  }

  async takeOver(event: string, consumer: string, minIdleMs: number, count: number): Promise<LaneEntry[]> {
    const out: RawEntry[] = []
    let start = '0-0'
    do {
      const [next, entries] = (await this.redis.xautoclaim(
        laneKeys(event).claims,
        LANE_GROUP,
        consumer,
        minIdleMs,
        start,
        'COUNT',
        count,
      )) as [string, (RawEntry | null)[]]
      for (const e of entries) if (e !== null) out.push(e)
      start = next
    } while (start !== '0-0' && out.length < count)
    return entriesOf(out)
  }

  async own(event: string, consumer: string, count: number): Promise<LaneEntry[]> {
    const reply = (await this.redis.xreadgroup('GROUP', LANE_GROUP, consumer, 'COUNT', count, 'STREAMS', laneKeys(event).claims, '0')) as
      | [string, RawEntry[]][]
      | null
    return entriesOf(reply?.[0]?.[1])
  }

  async read(event: string, consumer: string, count: number, blockMs: number): Promise<LaneEntry[]> {
    const k = laneKeys(event).claims
    // BLOCK 0 would wait for ever: without BLOCK, the read answers at once.
    const reply = (
      blockMs > 0
        ? await this.redis.xreadgroup('GROUP', LANE_GROUP, consumer, 'COUNT', count, 'BLOCK', blockMs, 'STREAMS', k, '>')
        : await this.redis.xreadgroup('GROUP', LANE_GROUP, consumer, 'COUNT', count, 'STREAMS', k, '>')
    ) as [string, RawEntry[]][] | null
    return entriesOf(reply?.[0]?.[1])
  }

  async settle(event: string, entries: string[], answers: LaneAnswer[], ttlMs: number): Promise<void> {
    if (entries.length === 0 && answers.length === 0) return
    const k = laneKeys(event)
    const newest = entries.reduce((a, b) => (newer(b, a) ? b : a), entries[0] ?? '0-0')
    const args: (string | number)[] = [LANE_GROUP, k.done, ttlMs, newest, answers.length]
    for (const a of answers) args.push(a.claim, JSON.stringify(a))
    args.push(...entries)
    await runScript(this.redis, this.scripts.laneSettle, [k.claims, k.answers], args)
  }
}

/** Whether stream id a ("ms-seq") comes after b; without splitting: it runs for every entry settled. */
function newer(a: string, b: string): boolean {
  const ad = a.indexOf('-')
  const bd = b.indexOf('-')
  const am = Number(a.slice(0, ad))
  const bm = Number(b.slice(0, bd))
  return am > bm || (am === bm && Number(a.slice(ad + 1)) > Number(b.slice(bd + 1)))
}
