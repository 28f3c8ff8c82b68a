// Admin credentials: bearer tokens for the API, and for the UI a signed session cookie with a CSRF
// token derived from it. Runtime-neutral: the MAC comes from the Mac port.
import { safeEqual } from '../src/core/compare.js'
import type { AdminSessions } from '../src/ports/admin-sessions.js'
import type { Mac } from '../src/ports/crypto.js'

export const ADMIN_COOKIE = 'anteroom_admin'
const SESSION_MS = 8 * 3600_000

export interface AdminUser {
  name: string
  token: string
}

export class AdminAuth {
  constructor(
    private readonly users: readonly AdminUser[],
    private readonly mac: Mac,
    /** The store of ended sessions and failed sign-ins (shared by every edge). */
    readonly sessions: AdminSessions,
  ) {}

  /** The admin whose token this is, compared in constant time. */
  byToken(token: string | undefined): string | undefined {
    if (token === undefined) return undefined
    let found: string | undefined
    for (const u of this.users) if (safeEqual(u.token, token)) found = u.name
    return found
  }

  async newSession(name: string, now: number): Promise<string> {
    const bytes = new Uint8Array(12)
    crypto.getRandomValues(bytes)
    const nonce = [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')
    const body = `s1.${name}.${(now + SESSION_MS).toString(36)}.${nonce}`
    return `${body}.${this.mac.sign(`admin-session|${body}`)}`
  }

  /** The signed, unexpired session in a cookie, or undefined. */
  private async parse(cookie: string | undefined, now: number): Promise<{ name: string; id: string; expires: number } | undefined> {
    if (cookie === undefined || cookie.length > 300) return undefined
    const parts = cookie.split('.')
    if (parts.length !== 5 || parts[0] !== 's1') return undefined
    const [, name, exp36, id, mac] = parts as [string, string, string, string, string]
    const body = parts.slice(0, 4).join('.')
    if (!this.mac.verify(`admin-session|${body}`, mac)) return undefined
    const expires = Number.parseInt(exp36, 36)
    if (!(expires > now)) return undefined
    return { name, id, expires }
  }

  /** The admin of a valid, unexpired session cookie that was not signed out. */
  async bySession(cookie: string | undefined, now: number): Promise<string | undefined> {
    const s = await this.parse(cookie, now)
    if (s === undefined || !this.users.some((u) => u.name === s.name)) return undefined
    return (await this.sessions.isRevoked(s.id)) ? undefined : s.name
  }

  /**
   * Signs a session out on every edge. It is remembered a minute past its expiry, so an edge whose
   * clock runs a little behind cannot take it back.
   */
  async endSession(cookie: string | undefined, now: number): Promise<void> {
    const s = await this.parse(cookie, now)
    if (s !== undefined) await this.sessions.revoke(s.id, s.expires - now + 60_000)
  }

  /** The CSRF token that goes with a session: only our pages can read it, from /api/session. */
  async csrfFor(session: string): Promise<string> {
    return this.mac.sign(`admin-csrf|${session}`)
  }
}
