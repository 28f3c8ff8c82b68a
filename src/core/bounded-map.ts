// The edge's and the origin's caches of things made once and asked for again (a URL's facts, a host's
// page policy, a language's view, a token's claims): one kind of map with a bound. Once it holds `max`
// entries, the next new key starts it again (clear, then set): a stream of new keys costs memory up to
// the bound and never more, and the common case (a few rooms, hosts, languages) never reaches it. No
// order is kept, so a hit costs what Map.get costs.
export class BoundedMap<K, V> {
  private readonly map = new Map<K, V>()

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`BoundedMap: max must be a whole number of at least 1, got ${max}`)
  }

  get size(): number {
    return this.map.size
  }

  get(key: K): V | undefined {
    return this.map.get(key)
  }

  has(key: K): boolean {
    return this.map.has(key)
  }

  /** Keeps the value, starting again first when the map is full and the key is new. */
  set(key: K, value: V): this {
    if (this.map.size >= this.max && !this.map.has(key)) this.map.clear()
    this.map.set(key, value)
    return this
  }

  delete(key: K): boolean {
    return this.map.delete(key)
  }

  clear(): void {
    this.map.clear()
  }
}
