// A test visitor with a cookie jar, driving an edge through app.request(): a Hono app, or the Worker in workerd.
import type { VisitorStatus } from '../../src/core/visit.js'
import type { RequestTarget } from './runtimes.js'

/** The status JSON (core/visit.ts VisitorStatus), any state: proof of work adds `challenge`. */
export type StatusBody = Omit<VisitorStatus, 'state'> & { state: string }

export class Visitor {
  readonly cookies = new Map<string, string>()

  constructor(
    private readonly base = 'http://shop.test',
    private readonly ip = '203.0.113.7',
  ) {}

  cookieHeader(): string {
    return [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
  }

  async request(app: RequestTarget, path: string, init: RequestInit & { json?: boolean } = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    if (this.cookies.size > 0 && !headers.has('cookie')) headers.set('cookie', this.cookieHeader())
    if (init.json) headers.set('accept', 'application/json')
    else if (!headers.has('accept')) headers.set('accept', 'text/html')
    headers.set('x-test-ip', this.ip)
    const res = await app.request(`${this.base}${path}`, { ...init, headers })
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';')
      const eq = (pair as string).indexOf('=')
      const name = (pair as string).slice(0, eq)
      const value = (pair as string).slice(eq + 1)
      if (/Max-Age=0(;|$)/.test(line) || value === '') this.cookies.delete(name)
      else this.cookies.set(name, value)
    }
    return res
  }

  /** Polls the JSON status of a room. */
  async status(app: RequestTarget, room: string): Promise<StatusBody> {
    const res = await this.request(app, `/_anteroom/status?room=${room}`, { json: true })
    return res.json() as never
  }

  /** A copy with the same cookies: a second tab, or the same person coming back. */
  clone(): Visitor {
    const v = new Visitor(this.base, this.ip)
    for (const [k, val] of this.cookies) v.cookies.set(k, val)
    return v
  }
}
