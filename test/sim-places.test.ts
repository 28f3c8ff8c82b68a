// sim/verdicts/fifo.ts placesKeptVerdict: in a sale without a store fault, a visitor who kept polling
// must never be sent back (the arrival in their queue token moving later), even when the edge read
// their poll late; a visitor whose own polls were abandonAfter apart may be.
import { describe, expect, it } from 'vitest'
import { placesKeptVerdict, type VisitorRecord } from '../sim/verdicts.js'

const visitor = (id: number, over: Partial<VisitorRecord>): VisitorRecord => ({ id, arrivedAt: 0, abandoned: false, tickets: [], ...over })

describe('places kept', () => {
  it('fails for a visitor who kept polling and was sent back, and says how and whether the token had lapsed', () => {
    const v = placesKeptVerdict(
      [
        visitor(1, { maxGapMs: 2100 }),
        visitor(2, { maxGapMs: 3000, movedBack: 2, lapsedTokens: 1, movedBackFirst: { at: 11_100, byMs: 6069, gapMs: 3024 } }),
      ],
      6000,
    )
    expect(v.ok).toBe(false)
    expect(v.measured).toBe(
      '1 sent back (e.g. by 6.07 s at 11.1 s, 3.02 s after its last answer; 1 of them with a token past its expiry when answered)',
    )
  })

  it('passes when the only ones sent back were silent for abandonAfter, or gave up', () => {
    const v = placesKeptVerdict(
      [
        visitor(1, { maxGapMs: 6000, movedBack: 1 }),
        visitor(2, { abandoned: true, movedBack: 1, maxGapMs: 100 }),
        visitor(3, { maxGapMs: 1900 }),
      ],
      6000,
    )
    expect(v).toMatchObject({ ok: true, measured: '0 sent back' })
  })
})
