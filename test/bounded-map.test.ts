// The one bounded cache (core/bounded-map.ts) the edge's and the origin's caches are made of: a hit is a
// Map's, memory is bounded whatever keys come, and a full map starts again only for a new key.
import { describe, expect, it } from 'vitest'
import { BoundedMap } from '../src/core/bounded-map.js'

describe('BoundedMap', () => {
  it('keeps up to max entries; the next new key starts it again with that key alone', () => {
    const m = new BoundedMap<string, number>(3)
    m.set('a', 1).set('b', 2).set('c', 3)
    expect([m.size, m.get('a'), m.get('c')]).toEqual([3, 1, 3])
    m.set('d', 4)
    expect([m.size, m.has('a'), m.get('d')]).toEqual([1, false, 4])
  })

  it('changing a key it holds never starts it again', () => {
    const m = new BoundedMap<string, number>(2)
    m.set('a', 1).set('b', 2).set('a', 10)
    expect([m.size, m.get('a'), m.get('b')]).toEqual([2, 10, 2])
    expect(m.delete('a')).toBe(true)
    expect([m.size, m.delete('a')]).toEqual([1, false])
  })

  it('never holds more than max, whatever stream of keys comes', () => {
    const m = new BoundedMap<number, number>(100)
    let most = 0
    for (let i = 0; i < 10_000; i++) {
      m.set(i % 997, i)
      most = Math.max(most, m.size)
    }
    expect(most).toBe(100)
  })

  it('refuses a bound that is not a whole number of at least 1', () => {
    for (const bad of [0, -1, 1.5, Number.NaN]) expect(() => new BoundedMap(bad)).toThrow(RangeError)
  })
})
