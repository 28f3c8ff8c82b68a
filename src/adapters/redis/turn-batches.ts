// Calls that arrive together, gathered by key and sent to Redis as one command at the end of the
// current turn of the event loop: the claim gate's claims (claim-gate.ts) and the ordered lane's
// submissions (claim-lane.ts). Each call still costs one round trip, but ioredis and Redis handle one
// command for a whole rush. (The queue store's polls batch by rules of their own: queue-store.ts.)

/** Runs fn after the current turn of the event loop: setImmediate on Node, a zero timer elsewhere. */
export const nextTurn: (fn: () => void) => void = typeof setImmediate === 'function' ? (fn) => setImmediate(fn) : (fn) => setTimeout(fn, 0)

/** Most calls in one batch. */
const MAX_BATCH = 200

interface Waiting<In, Out> {
  input: In
  resolve: (answer: Out) => void
  reject: (err: unknown) => void
}

export class TurnBatches<In, Out> {
  private readonly gathering = new Map<string, Waiting<In, Out>[]>()

  /**
   * @param send one command for a batch's inputs (all with the same key, in the order they came): their
   *   answers, in that order. When it fails, every call of the batch fails with its error.
   */
  constructor(private readonly send: (inputs: In[]) => Promise<Out[]>) {}

  /** The answer to `input`, sent with the other inputs of this turn that have the same key. */
  add(key: string, input: In): Promise<Out> {
    let batch = this.gathering.get(key)
    if (batch === undefined || batch.length >= MAX_BATCH) {
      const flushing: Waiting<In, Out>[] = []
      this.gathering.set(key, flushing)
      nextTurn(() => {
        if (this.gathering.get(key) === flushing) this.gathering.delete(key)
        void this.flush(flushing)
      })
      batch = flushing
    }
    const waiting = batch
    return new Promise((resolve, reject) => waiting.push({ input, resolve, reject }))
  }

  private async flush(batch: Waiting<In, Out>[]): Promise<void> {
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
