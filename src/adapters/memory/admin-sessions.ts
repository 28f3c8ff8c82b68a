// AdminSessions in process memory: ended session ids with the time they can be forgotten.
import type { AdminSessions } from '../../ports/admin-sessions.js'

export class MemoryAdminSessions implements AdminSessions {
  private readonly ended = new Map<string, number>()

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
}
