// A sorted set like Redis's: members ordered by (score, member), with O(log N) rank.
// A treap whose nodes know the size of their subtree; a Map gives each member's score.

interface Node {
  member: string
  score: number
  priority: number
  size: number
  left: Node | null
  right: Node | null
}

const size = (n: Node | null) => (n === null ? 0 : n.size)

function less(aScore: number, aMember: string, b: Node): boolean {
  return aScore < b.score || (aScore === b.score && aMember < b.member)
}

function update(n: Node): Node {
  n.size = 1 + size(n.left) + size(n.right)
  return n
}

/** Splits into (< key, >= key). */
function split(n: Node | null, score: number, member: string): [Node | null, Node | null] {
  if (n === null) return [null, null]
  if (less(n.score, n.member, { score, member } as Node)) {
    const [l, r] = split(n.right, score, member)
    n.right = l
    return [update(n), r]
  }
  const [l, r] = split(n.left, score, member)
  n.left = r
  return [l, update(n)]
}

function merge(a: Node | null, b: Node | null): Node | null {
  if (a === null) return b
  if (b === null) return a
  if (a.priority > b.priority) {
    a.right = merge(a.right, b)
    return update(a)
  }
  b.left = merge(a, b.left)
  return update(b)
}

export class OrderedSet {
  private root: Node | null = null
  private readonly scores = new Map<string, number>()

  get size(): number {
    return this.scores.size
  }

  score(member: string): number | undefined {
    return this.scores.get(member)
  }

  add(member: string, score: number): void {
    if (this.scores.has(member)) this.remove(member)
    this.scores.set(member, score)
    const node: Node = { member, score, priority: Math.random(), size: 1, left: null, right: null }
    const [l, r] = split(this.root, score, member)
    this.root = merge(merge(l, node), r)
  }

  remove(member: string): boolean {
    const score = this.scores.get(member)
    if (score === undefined) return false
    this.scores.delete(member)
    const [l, rest] = split(this.root, score, member)
    // rest starts with the node itself: drop its leftmost node.
    this.root = merge(l, dropFirst(rest))
    return true
  }

  /** 0-based rank, or undefined. */
  rank(member: string): number | undefined {
    const score = this.scores.get(member)
    if (score === undefined) return undefined
    let rank = 0
    let n = this.root
    while (n !== null) {
      if (n.member === member) return rank + size(n.left)
      if (less(score, member, n)) n = n.left
      else {
        rank += size(n.left) + 1
        n = n.right
      }
    }
    return undefined
  }

  /** The first `count` members in order. */
  first(count: number): string[] {
    const out: string[] = []
    const walk = (n: Node | null) => {
      if (n === null || out.length >= count) return
      walk(n.left)
      if (out.length < count) out.push(n.member)
      walk(n.right)
    }
    walk(this.root)
    return out
  }

  /** Number of members with score >= min. */
  countFrom(min: number): number {
    let count = 0
    let n = this.root
    while (n !== null) {
      if (n.score >= min) {
        count += 1 + size(n.right)
        n = n.left
      } else n = n.right
    }
    return count
  }

  /** Up to `limit` members with score <= max, lowest first, left in place. */
  upTo(max: number, limit: number): string[] {
    const out: string[] = []
    const walk = (n: Node | null) => {
      if (n === null || out.length >= limit) return
      walk(n.left)
      if (out.length >= limit || n.score > max) return
      out.push(n.member)
      walk(n.right)
    }
    walk(this.root)
    return out
  }

  /** Removes and returns up to `limit` members with score <= max, lowest first. */
  removeUpTo(max: number, limit = Number.POSITIVE_INFINITY): string[] {
    const out: string[] = []
    while (out.length < limit) {
      const head = this.first(1)[0]
      if (head === undefined || (this.scores.get(head) as number) > max) break
      this.remove(head)
      out.push(head)
    }
    return out
  }
}

function dropFirst(n: Node | null): Node | null {
  if (n === null) return null
  if (n.left === null) return n.right
  n.left = dropFirst(n.left)
  return update(n)
}
