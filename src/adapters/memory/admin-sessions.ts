// AdminSessions in process memory: ended session ids with the time they can be forgotten, and the
// failed sign-ins per key, forgotten SIGN_IN_FORGET_MS after the last one (on the caller's clock).
import { type AdminSessions, SIGN_IN_FORGET_MS, type SignInFailures } from '../../ports/admin-sessions.js'

export class MemoryAdminSessions implements AdminSessions {
  private readonly ended = new Map<string, number>()
  private readonly failures = new Map<string, SignInFailures>()

  constructor(private readonly now: () => number = Date.now) {}

  async revoke(sessionId: string, ttlMs: number): Promise<void> {
    const t = this.now()
    for (const [id, until] of this.ended) if (until <= t) this.ended.delete(id)
    this.ended.set(sessionId, t + Math.max(1, ttlMs))
  }

  async isRevoked(sessionId: string): Promise<boolean> {
    const until = this.ended.get(sessionId)
    return until !== undefined && until > this.now()
  }

  private live(key: string, nowMs: number): SignInFailures | null {
    const f = this.failures.get(key)
    return f !== undefined && nowMs < f.lastAt + SIGN_IN_FORGET_MS ? f : null
  }

  async recordSignInFailure(keys: readonly string[], nowMs: number): Promise<SignInFailures[]> {
    for (const [key, f] of this.failures) if (nowMs >= f.lastAt + SIGN_IN_FORGET_MS) this.failures.delete(key)
    return keys.map((key) => {
      const next = { count: (this.live(key, nowMs)?.count ?? 0) + 1, lastAt: nowMs }
      this.failures.set(key, next)
      return { ...next }
    })
  }

  async signInFailures(keys: readonly string[], nowMs: number): Promise<(SignInFailures | null)[]> {
    return keys.map((key) => {
      const f = this.live(key, nowMs)
      return f === null ? null : { ...f }
    })
  }

  async clearSignInFailures(keys: readonly string[]): Promise<void> {
    for (const key of keys) this.failures.delete(key)
  }
}
