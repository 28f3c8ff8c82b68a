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

/**
 * What is remembered: answers for the methods an edge serves, for paths of at most PATH_REMEMBERED
 * characters, at most ANSWERS_REMEMBERED in all (the maps start over when full): at most about a
 * megabyte, whatever paths and methods an attacker sends. Anything else is asked of the router.
 */
const REMEMBERED_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
const ANSWERS_REMEMBERED = 1024
const PATH_REMEMBERED = 256

export class RouteCache<T> implements Router<T> {
  readonly name = 'RouteCache'
  private readonly answers = new Map<string, Map<string, Result<T>>>(REMEMBERED_METHODS.map((m) => [m, new Map()]))
  private remembered = 0

  constructor(private readonly inner: Router<T>) {}

  add(method: string, path: string, handler: T): void {
    // Routes are added before the first request; a late one must not meet stale answers.
    this.forget()
    this.inner.add(method, path, handler)
  }

  match(method: string, path: string): Result<T> {
    const paths = this.answers.get(method)
    if (paths === undefined || path.length > PATH_REMEMBERED) return this.inner.match(method, path)
    let answer = paths.get(path)
    if (answer === undefined) {
      answer = this.inner.match(method, path)
      if (this.remembered >= ANSWERS_REMEMBERED) this.forget()
      paths.set(path, answer)
      this.remembered++
    }
    return answer
  }

  private forget(): void {
    for (const paths of this.answers.values()) paths.clear()
    this.remembered = 0
  }
}

/** Hono's default router (as `new Hono()` makes it), remembering its answers. */
export function cachedRouter<T>(): RouteCache<T> {
  return new RouteCache<T>(new SmartRouter<T>({ routers: [new RegExpRouter<T>(), new TrieRouter<T>()] }))
}
