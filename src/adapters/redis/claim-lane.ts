// ClaimLane on Redis Streams: one stream per event under the hash tag {lane:<event>} (keys.ts laneKeys),
// one consumer group; the claims an origin appends in one turn are one entry. The allocator's answers
// are kept by entry (a hash each: a claim is found by its id and its entry's) and published on the
// event's channel (lua/lane-*.lua).

import type { Redis } from 'ioredis'
import type { GateUnit } from '../../ports/claim-gate.js'
import type { ClaimLane, LaneAnswer, LaneClaim, LaneConsumer, LaneEntry, LaneNote, SettledAnswer } from '../../ports/claim-lane.js'
import { type RedisClient, whenReady } from './connect.js'
import { LANE_DONE_PATTERN, laneKeys } from './keys.js'
import { runScript, type Scripts } from './scripts.js'
import { replies, storeCall } from './store-call.js'
import { TurnBatches } from './turn-batches.js'

/** The lane's one consumer group: every allocator of an event reads in it. */
export const LANE_GROUP = 'allocators'

type RawEntry = [id: string, fields: string[]]

function entryOf([id, fields]: RawEntry): LaneEntry | undefined {
  const at = fields.indexOf('j')
  if (at < 0 || at + 1 >= fields.length) return undefined
  const j = JSON.parse(fields[at + 1] as string) as { k: string; c?: LaneClaim | LaneClaim[]; h?: string; u?: GateUnit[] }
  if (j.k === 'claims' && Array.isArray(j.c)) return { id, kind: 'claims', claims: j.c }
  // One claim an entry: what the lane's previous version appended.
  if (j.k === 'claim' && j.c !== undefined && !Array.isArray(j.c)) return { id, kind: 'claims', claims: [j.c] }
  if (typeof j.h !== 'string') return undefined
  if (j.k === 'release') return { id, kind: 'release', hold: j.h }
  if (j.k === 'sold') return { id, kind: 'sold', hold: j.h, units: j.u ?? [] }
  return undefined
}

/** Entries in order; one the lane cannot read (written by another version) is left out. */
const entriesOf = (raw: RawEntry[] | null | undefined): LaneEntry[] => (raw ?? []).flatMap((r) => entryOf(r) ?? [])

/** The event named by an answers channel (`anteroom:{lane:<event>}:done`). */
const eventOfChannel = (channel: string) => /^anteroom:\{lane:(.*)\}:done$/.exec(channel)?.[1]

export class RedisClaimLane implements ClaimLane, LaneConsumer {
  /** Sent at the end of a turn (turn-batches.ts): a submission that timed out would be a 503. */
  private readonly submissions = new TurnBatches<{ event: string; claim: LaneClaim }, string>((batch) => this.send(batch), false)

  constructor(
    private readonly redis: RedisClient,
    private readonly scripts: Scripts,
  ) {}

  /**
   * Claims that arrive together (for the same event) wait for the end of the current turn of the event
   * loop and go into the lane as one entry, in the order they came: a rush is a few entries.
   */
  submit(event: string, claim: LaneClaim): Promise<string> {
    return this.submissions.add(event, { event, claim })
  }

  /** One entry (XADD) for claims of the same event, in the order they came: its id, for each. */
  private async send(batch: { event: string; claim: LaneClaim }[]): Promise<string[]> {
    const { event } = batch[0] as { event: string }
    const entry = JSON.stringify({ k: 'claims', c: batch.map((s) => s.claim) })
    const id = (await storeCall(() => this.redis.xadd(laneKeys(event).claims, '*', 'j', entry))) as string
    return batch.map(() => id)
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

  /**
   * The entry (if still in the lane) and its answer, read in that order in one transaction: an answer is
   * kept before its entry is trimmed, so a claim found in neither was never there (or was forgotten).
   */
  async answer(event: string, claim: string, entry: string): Promise<LaneAnswer | undefined> {
    const k = laneKeys(event)
    const [found, answer] = (await storeCall(async () =>
      replies(await this.redis.multi().xrange(k.claims, entry, entry).hget(`${k.answers}${entry}`, claim).exec()),
    )) as [RawEntry[], string | null]
    if (answer !== null) return JSON.parse(answer) as LaneAnswer
    const [inLane] = entriesOf(found)
    const pending = inLane?.kind === 'claims' ? inLane.claims.find((c) => c.id === claim) : undefined
    return pending === undefined ? undefined : { claim: pending.id, holder: pending.holder, status: 'pending' }
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
    // from their entries' answers by the waiting requests once they stop waiting (BookingLane.hold).
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
    return this.unanswered(event, entriesOf(out))
  }

  async own(event: string, consumer: string, count: number): Promise<LaneEntry[]> {
    const reply = (await this.redis.xreadgroup('GROUP', LANE_GROUP, consumer, 'COUNT', count, 'STREAMS', laneKeys(event).claims, '0')) as
      | [string, RawEntry[]][]
      | null
    return this.unanswered(event, entriesOf(reply?.[0]?.[1]))
  }

  /**
   * The entries without the claims the allocator already answered: an entry stays pending until its
   * last winner is written, and its refusals (answered at once) must not be decided a second time.
   */
  private async unanswered(event: string, entries: LaneEntry[]): Promise<LaneEntry[]> {
    const prefix = laneKeys(event).answers
    return Promise.all(
      entries.map(async (e) => {
        if (e.kind !== 'claims' || e.claims.length === 0) return e
        const answers = await this.redis.hmget(`${prefix}${e.id}`, ...e.claims.map((c) => c.id))
        return answers.every((a) => a === null) ? e : { ...e, claims: e.claims.filter((_, i) => answers[i] === null) }
      }),
    )
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

  async settle(event: string, acks: string[], answers: SettledAnswer[], ttlMs: number): Promise<void> {
    if (acks.length === 0 && answers.length === 0) return
    const k = laneKeys(event)
    const newest = acks.reduce((a, b) => (newer(b, a) ? b : a), acks[0] ?? '0-0')
    const args: (string | number)[] = [LANE_GROUP, k.done, ttlMs, newest, answers.length]
    for (const { entry, answer } of answers) args.push(entry, answer.claim, JSON.stringify(answer))
    args.push(...acks)
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
