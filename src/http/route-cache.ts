// A router that remembers its answers: the edge's routes, as Hono's own router finds them, looked up
// once per method and path and then read from a map.
//
// Why: the edge's routes (its own endpoints, the admin API, the catch-all for visitors) are more than
// Hono's RegExpRouter takes, so Hono's SmartRouter falls back to its TrieRouter, which walks its tree on
// every request: about 1.5% of a queued visitor's poll, whose path is the same for every visitor.
// Hono itself hands out one shared answer per static route (RegExpRouter), so an answer is never
// changed by whoever reads it.
import type { Result, Router } from 'hono/router'
import { RegExpRouter } from 'hono/router/reg-exp-router'
import { SmartRouter } from 'hono/router/smart-router'
import { TrieRouter } from 'hono/router/trie-router'

/** Paths remembered per method, of at most PATH_REMEMBERED characters; the map starts over when full. */
const PATHS_REMEMBERED = 1024
const PATH_REMEMBERED = 256
const METHODS_REMEMBERED = 64

export class RouteCache<T> implements Router<T> {
  readonly name = 'RouteCache'
  private readonly answers = new Map<string, Map<string, Result<T>>>()

  constructor(private readonly inner: Router<T>) {}

  add(method: string, path: string, handler: T): void {
    // Routes are added before the first request; a late one must not meet stale answers.
    this.answers.clear()
    this.inner.add(method, path, handler)
  }

  match(method: string, path: string): Result<T> {
    let paths = this.answers.get(method)
    if (paths === undefined) {
      // A Worker passes any method token on: they too are bounded.
      if (this.answers.size >= METHODS_REMEMBERED) this.answers.clear()
      this.answers.set(method, (paths = new Map()))
    }
    let answer = paths.get(path)
    if (answer === undefined) {
      answer = this.inner.match(method, path)
      if (path.length <= PATH_REMEMBERED) {
        if (paths.size >= PATHS_REMEMBERED) paths.clear()
        paths.set(path, answer)
      }
    }
    return answer
  }
}

/** Hono's default router (as `new Hono()` makes it), remembering its answers. */
export function cachedRouter<T>(): RouteCache<T> {
  return new RouteCache<T>(new SmartRouter<T>({ routers: [new RegExpRouter<T>(), new TrieRouter<T>()] }))
}
