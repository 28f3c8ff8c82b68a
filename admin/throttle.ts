// Failed admin sign-ins: counted per client address and per named account in the AdminSessions
// store (so every edge sees the same counts), with a lockout that grows.
//
// Policy:
// - The first FREE_FAILURES (4) failures of a key answer 401 at once.
// - From the 5th on, each failure locks the key for min(2^(n-5) s, 15 min) from that failure:
//   1 s, 2 s, 4 s, ... 512 s, then 15 minutes.
// - An attempt while a key is locked answers 429 with Retry-After and is not checked (and not counted).
// - A key's failures are forgotten 30 minutes after its last one (SIGN_IN_FORGET_MS), and at once
//   by a successful sign-in under it.
import type { AdminSessions, SignInFailures } from '../src/ports/admin-sessions.js'

export const FREE_FAILURES = 4
export const MAX_LOCK_MS = 15 * 60_000

/** How long the key is locked after its `count`th failure in a row (0: not at all). */
export function lockMs(count: number): number {
  if (count <= FREE_FAILURES) return 0
  return Math.min(2 ** Math.min(count - FREE_FAILURES - 1, 30) * 1000, MAX_LOCK_MS)
}

/** Milliseconds left of a key's lockout at `now` (0: not locked). */
export function lockedForMs(f: SignInFailures | null, now: number): number {
  if (f === null) return 0
  const lock = lockMs(f.count)
  // Capped at the lock's own length, so an edge whose clock runs behind the one that counted the
  // failure does not lock anyone out for longer than the policy says.
  return Math.max(0, Math.min(f.lastAt + lock - now, lock))
}

/**
 * The throttle key of a client address. IPv6 addresses count by their /64 (one subscriber's
 * network); IPv4-mapped IPv6 addresses as the IPv4 address. Unknown addresses share one key.
 */
export function addressKey(address: string | undefined): string {
  const a = (address ?? '').trim().toLowerCase().slice(0, 64)
  if (a === '') return 'addr:unknown'
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/.exec(a)
  if (mapped) return `addr:${mapped[1]}`
  if (!a.includes(':')) return `addr:${a}`
  const [head = '', tail = ''] = a.split('%')[0]?.split('::') ?? []
  const left = head === '' ? [] : head.split(':')
  const right = a.includes('::') ? (tail === '' ? [] : tail.split(':')) : []
  const groups = [...left, ...Array(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right]
  const prefix = groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '') || '0')
  return `addr:${prefix.join(':')}::/64`
}

export const accountKey = (name: string) => `name:${name}`

export function describeWait(ms: number): string {
  const s = Math.max(1, Math.ceil(ms / 1000))
  if (s < 120) return `${s} second${s === 1 ? '' : 's'}`
  const m = Math.ceil(s / 60)
  return `${m} minutes`
}

export class SignInThrottle {
  constructor(private readonly store: AdminSessions) {}

  /** How long these keys stay locked (the longest of them), and whether any has failures to clear. */
  async check(keys: readonly string[], now: number): Promise<{ lockedMs: number; anyFailures: boolean }> {
    const states = await this.store.signInFailures(keys, now)
    return {
      lockedMs: Math.max(0, ...states.map((f) => lockedForMs(f, now))),
      anyFailures: states.some((f) => f !== null),
    }
  }

  /** Counts a failure under each key; answers the counts and how long the keys are now locked. */
  async fail(keys: readonly string[], now: number): Promise<{ counts: number[]; lockedMs: number }> {
    const states = await this.store.recordSignInFailure(keys, now)
    return { counts: states.map((f) => f.count), lockedMs: Math.max(0, ...states.map((f) => lockedForMs(f, now))) }
  }

  async clear(keys: readonly string[]): Promise<void> {
    await this.store.clearSignInFailures(keys)
  }
}
