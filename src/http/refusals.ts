// The refused-joins count: every edge counts the joins it refuses (over the network cap, or failing
// proof of work) in memory, and sends them to the store at most once a second, in one call per room
// with refusals to send. So an attack costs no store call per refusal, and every edge's admin view
// sees the sum, within about a second. The flush runs with the room directory's once-a-second reload
// (a Worker hands that to waitUntil); Node also runs it on a timer, for an edge that goes quiet.
import { type DefenceStore, noRefusals, REFUSAL_REASONS, type RefusalCounts, type RefusalReason } from '../ports/defence-store.js'

export type { RefusalReason } from '../ports/defence-store.js'

export class Refusals {
  /** Room → reason → refusals not sent yet. */
  private unsent = new Map<string, Record<RefusalReason, number>>()
  private flushing: Promise<void> | undefined
  private flushedAt = Number.NEGATIVE_INFINITY

  constructor(
    private readonly store: Pick<DefenceStore, 'addRefusals'>,
    private readonly now: () => number = Date.now,
    /** The time handed to the store: the test's clock, or undefined for the store's own (as EdgeContext.storeNow). */
    private readonly storeNow: () => number | undefined = () => undefined,
    private readonly everyMs = 1000,
    /** Told of each refusal too (the edge's metrics). */
    private readonly counted: (room: string, reason: RefusalReason) => void = () => {},
  ) {}

  /** Counts one refused join; no store call. */
  note(room: string, reason: RefusalReason): void {
    this.add(room, reason, 1)
    this.counted(room, reason)
  }

  private add(room: string, reason: RefusalReason, n: number): void {
    let counts = this.unsent.get(room)
    if (counts === undefined) this.unsent.set(room, (counts = noRefusals()))
    counts[reason] += n
  }

  /** Sends what was counted, unless this edge sent less than a second ago or is sending now. */
  flush(): Promise<void> {
    if (this.flushing !== undefined) return this.flushing
    if (this.unsent.size === 0 || this.now() - this.flushedAt < this.everyMs) return Promise.resolve()
    this.flushedAt = this.now()
    const sending = this.unsent
    this.unsent = new Map()
    this.flushing = Promise.all([...sending].map(([room, counts]) => this.send(room, counts))).then(() => {
      this.flushing = undefined
    })
    return this.flushing
  }

  private async send(room: string, counts: Record<RefusalReason, number>): Promise<void> {
    try {
      await this.store.addRefusals(room, counts, this.storeNow())
    } catch {
      // The store is away: the counts go with the next flush.
      for (const reason of REFUSAL_REASONS) if (counts[reason] > 0) this.add(room, reason, counts[reason])
    }
  }

  /** The room's counts as the store has them, plus what this edge has not sent yet (one store call). */
  async counts(room: string): Promise<RefusalCounts> {
    const stored = await this.store.addRefusals(room, {}, this.storeNow())
    const mine = this.unsent.get(room)
    if (mine === undefined) return stored
    const total = { ...stored.total }
    const lastMinute = { ...stored.lastMinute }
    for (const reason of REFUSAL_REASONS) {
      total[reason] += mine[reason]
      lastMinute[reason] += mine[reason]
    }
    return { total, lastMinute, now: stored.now }
  }
}
