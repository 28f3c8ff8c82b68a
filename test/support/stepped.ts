// Stepped sales on a manual clock: a deterministic PRNG and a queue of timed events that run in
// time order (then in the order they were added), so that a sale runs the same every time.

/** The simulator's small deterministic PRNG (mulberry32). */
export { rng } from '../../sim/simulate.js'

/** Events by time (then insertion), so that a sale runs the same every time. */
export class Events {
  private readonly heap: { t: number; n: number; run: () => Promise<void> }[] = []
  private n = 0
  get size() {
    return this.heap.length
  }
  next(): number | undefined {
    return this.heap[0]?.t
  }
  push(t: number, run: () => Promise<void>) {
    const h = this.heap
    h.push({ t, n: this.n++, run })
    for (let i = h.length - 1; i > 0; ) {
      const p = (i - 1) >> 1
      if (!earlier(h[i]!, h[p]!)) break
      ;[h[i], h[p]] = [h[p]!, h[i]!]
      i = p
    }
  }
  pop(): () => Promise<void> {
    const h = this.heap
    const top = h[0]!
    const last = h.pop()!
    if (h.length > 0) {
      h[0] = last
      for (let i = 0; ; ) {
        const l = 2 * i + 1
        let m = i
        if (l < h.length && earlier(h[l]!, h[m]!)) m = l
        if (l + 1 < h.length && earlier(h[l + 1]!, h[m]!)) m = l + 1
        if (m === i) break
        ;[h[i], h[m]] = [h[m]!, h[i]!]
        i = m
      }
    }
    return top.run
  }
}
const earlier = (a: { t: number; n: number }, b: { t: number; n: number }) => a.t < b.t || (a.t === b.t && a.n < b.n)
