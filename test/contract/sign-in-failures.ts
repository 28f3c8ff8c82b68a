// The AdminSessions contract for failed sign-ins: counted per key, in one step for several keys,
// read back, and cleared. Run against memory and Redis (a database of its own, and a Redis Cluster).
import { describe, expect, it } from 'vitest'
import type { AdminSessions } from '../../src/ports/admin-sessions.js'

const T0 = 1_800_000_000_000
let seq = 0
const fresh = (kind: string) => `${kind}:${Date.now().toString(36)}-${seq++}`

export function signInFailuresContract(name: string, make: () => Promise<AdminSessions>): void {
  describe(`AdminSessions sign-in failures contract: ${name}`, () => {
    it('counts failures per key, several keys at once, and answers the counts in the order of the keys', async () => {
      const store = await make()
      const addr = fresh('addr')
      const account = fresh('name')
      expect(await store.signInFailures([addr, account], T0)).toEqual([null, null])
      expect(await store.recordSignInFailure([addr], T0)).toEqual([{ count: 1, lastAt: T0 }])
      expect(await store.recordSignInFailure([addr, account], T0 + 5)).toEqual([
        { count: 2, lastAt: T0 + 5 },
        { count: 1, lastAt: T0 + 5 },
      ])
      expect(await store.recordSignInFailure([account, addr], T0 + 9)).toEqual([
        { count: 2, lastAt: T0 + 9 },
        { count: 3, lastAt: T0 + 9 },
      ])
      expect(await store.signInFailures([account, fresh('addr'), addr], T0 + 10)).toEqual([
        { count: 2, lastAt: T0 + 9 },
        null,
        { count: 3, lastAt: T0 + 9 },
      ])
      expect(await store.recordSignInFailure([], T0)).toEqual([])
      expect(await store.signInFailures([], T0)).toEqual([])
    })

    it('counts every one of many failures at once', async () => {
      const store = await make()
      const addr = fresh('addr')
      const account = fresh('name')
      const all = await Promise.all(Array.from({ length: 25 }, (_, i) => store.recordSignInFailure([addr, account], T0 + i)))
      expect(all.map((r) => r[0]?.count).sort((a, b) => (a ?? 0) - (b ?? 0))).toEqual(Array.from({ length: 25 }, (_, i) => i + 1))
      expect((await store.signInFailures([addr, account], T0 + 30)).map((f) => f?.count)).toEqual([25, 25])
    })

    it('clears only the keys it is given; counting starts again at one', async () => {
      const store = await make()
      const [a, b, c] = [fresh('addr'), fresh('addr'), fresh('name')]
      for (let i = 0; i < 3; i++) await store.recordSignInFailure([a, b, c], T0 + i)
      await store.clearSignInFailures([a, c])
      expect((await store.signInFailures([a, b, c], T0 + 3)).map((f) => f?.count ?? 0)).toEqual([0, 3, 0])
      expect(await store.recordSignInFailure([a], T0 + 4)).toEqual([{ count: 1, lastAt: T0 + 4 }])
      await store.clearSignInFailures([])
      await store.clearSignInFailures([fresh('addr')])
    })

    it('keeps ended sessions and sign-in failures apart', async () => {
      const store = await make()
      const key = fresh('addr')
      await store.recordSignInFailure([key], T0)
      expect(await store.isRevoked(key)).toBe(false)
      await store.revoke(key, 60_000)
      expect(await store.signInFailures([key], T0)).toEqual([{ count: 1, lastAt: T0 }])
    })
  })
}
