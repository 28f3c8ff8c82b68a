// Calls that arrive together, gathered by key and sent to Redis as one command: the claim gate's
// claims (claim-gate.ts) and the ordered lane's submissions (claim-lane.ts). With sendAsTheyFill (the
// gate's), a key's batches grow within a turn of the event loop, as the queue store's polls do
// (queue-store.ts, by the same sizes): the turn's first batch goes as soon as it holds FIRST_BATCH
// calls, each next one when it holds twice the last, at most MAX_BATCH; what is left goes at the end
// of the turn. Under a rush one turn reads thousands of requests. Sent only at the turn's end, Redis
// would start on the first claim after the origin had read the last, and the origin would answer the
// first only after Redis had decided them all (a convoy); sent as they fill, Redis decides the first
// claims while the origin reads the rest. The price: a command's timeout (1 s, connect.ts) runs from
// when it is sent, and its answer is read only after the turn, so in a turn longer than that it times
// out with its answer waiting. A gate call that fails costs a database claim (the claim goes on as
// if there were no gate); a lane submission that fails is a 503, so the lane sends at the turn's end.

/** Runs fn after the current turn of the event loop: setImmediate on Node, a zero timer elsewhere. */
export const nextTurn: (fn: () => void) => void = typeof setImmediate === 'function' ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0)

/** The calls in a turn's first batch for a key. */
export const FIRST_BATCH = 16
/** The most calls in one batch. */
export const MAX_BATCH = 128

interface Waiting<In, Out> {
  input: In
  resolve: (answer: Out) => void
  reject: (err: unknown) => void
}

interface Batch<In, Out> {
  key: string
  waiting: Waiting<In, Out>[]
  /** Sent when it holds this many. */
  size: number
  sent: boolean
}

export class TurnBatches<In, Out> {
  private readonly gathering = new Map<string, Batch<In, Out>>()
  /** The size of a key's next batch within this turn (absent: FIRST_BATCH). */
  private readonly nextSize = new Map<string, number>()

  /**
   * @param send one command for a batch's inputs (all with the same key, in the order they came): their
   *   answers, in that order. When it fails, every call of the batch fails with its error.
   * @param sendAsTheyFill send batches within the turn as they fill (see above); false: every batch (of
   *   at most MAX_BATCH calls) at the end of the turn.
   */
  constructor(
    private readonly send: (inputs: In[]) => Promise<Out[]>,
    private readonly sendAsTheyFill = true,
  ) {}

  /** The answer to `input`, sent with other inputs of the same key that came just before or after it. */
  add(key: string, input: In): Promise<Out> {
    let batch = this.gathering.get(key)
    if (batch === undefined) {
      const started: Batch<In, Out> = { key, waiting: [], size: this.nextSize.get(key) ?? FIRST_BATCH, sent: false }
      this.gathering.set(key, started)
      nextTurn(() => {
        // The turn is over: what gathered goes, and the key's next turn starts small again.
        this.nextSize.delete(key)
        this.flush(started)
      })
      batch = started
    }
    const waiting = batch.waiting
    const answer = new Promise<Out>((resolve, reject) => waiting.push({ input, resolve, reject }))
    if (!this.sendAsTheyFill) {
      // Full: the next calls gather in a new batch; both go at the end of the turn.
      if (waiting.length >= MAX_BATCH) this.gathering.delete(key)
      return answer
    }
    if (waiting.length >= batch.size) {
      this.nextSize.set(key, Math.min(MAX_BATCH, 2 * batch.size))
      this.flush(batch)
    }
    return answer
  }

  /** Sends a batch once; the key's next calls gather into a new one. */
  private flush(batch: Batch<In, Out>): void {
    if (batch.sent) return
    batch.sent = true
    if (this.gathering.get(batch.key) === batch) this.gathering.delete(batch.key)
    void this.deliver(batch.waiting)
  }

  private async deliver(batch: Waiting<In, Out>[]): Promise<void> {
    let answers: Out[]
    try {
      answers = await this.send(batch.map((w) => w.input))
    } catch (err) {
      for (const w of batch) w.reject(err)
      return
    }
    for (const [i, w] of batch.entries()) w.resolve(answers[i] as Out)
  }
}
