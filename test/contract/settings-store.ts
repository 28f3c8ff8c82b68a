// The SettingsStore, AuditLog and AdminSessions contract, run against memory and Redis.
import { describe, expect, it } from 'vitest'
import { parseRoomSettings } from '../../src/core/settings.js'
import type { AdminSessions } from '../../src/ports/admin-sessions.js'
import type { AuditLog } from '../../src/ports/audit-log.js'
import type { SettingsStore } from '../../src/ports/settings-store.js'

let seq = 0

export function settingsStoreContract(
  name: string,
  make: () => Promise<{ settings: SettingsStore; audit: AuditLog; adminSessions: AdminSessions }>,
): void {
  describe(`SettingsStore, AuditLog and AdminSessions contract: ${name}`, () => {
    const room = () =>
      parseRoomSettings({ id: `set-${Date.now().toString(36)}-${seq++}`, paths: ['/'], totalActiveUsers: 5, newUsersPerMinute: 60 })

    it('seeds once, then keeps the live settings', async () => {
      const { settings } = await make()
      const r = room()
      await settings.seed([r])
      expect(await settings.get(r.id)).toEqual({ settings: r, rev: 1 })
      expect(await settings.replace({ ...r, mode: 'paused' }, 1)).toEqual({ ok: true, rev: 2 })
      await settings.seed([r])
      expect(await settings.get(r.id)).toEqual({ settings: { ...r, mode: 'paused' }, rev: 2 })
      expect((await settings.list()).some((v) => v.settings.id === r.id && v.rev === 2)).toBe(true)
    })

    it('replaces only from the current revision, and reports the current settings otherwise', async () => {
      const { settings } = await make()
      const r = room()
      await settings.seed([r])
      const results = await Promise.all([
        settings.replace({ ...r, totalActiveUsers: 7 }, 1),
        settings.replace({ ...r, totalActiveUsers: 9 }, 1),
      ])
      expect(results.filter((x) => x.ok)).toHaveLength(1)
      const lost = results.find((x) => !x.ok)
      const current = await settings.get(r.id)
      expect(lost).toEqual({ ok: false, current })
      expect(await settings.replace({ ...r, id: `${r.id}-new` }, 0)).toEqual({ ok: true, rev: 1 })
      expect(await settings.get('never-seen')).toBeUndefined()
    })

    it('audits newest first, with a limit', async () => {
      const { audit } = await make()
      const tag = `t${seq++}`
      for (let i = 0; i < 5; i++)
        await audit.append({
          at: new Date(1_800_000_000_000 + i).toISOString(),
          who: tag,
          action: `a${i}`,
          room: 'r',
          before: { i },
          after: { i: i + 1 },
        })
      const entries = (await audit.list(3)).filter((e) => e.who === tag)
      expect(entries.map((e) => e.action)).toEqual(['a4', 'a3', 'a2'])
      expect(entries[0]).toMatchObject({ before: { i: 4 }, after: { i: 5 } })
    })

    it('remembers an ended admin session, and only that one', async () => {
      const { adminSessions } = await make()
      const id = `s-${Date.now().toString(36)}-${seq++}`
      expect(await adminSessions.isRevoked(id)).toBe(false)
      await adminSessions.revoke(id, 60_000)
      expect(await adminSessions.isRevoked(id)).toBe(true)
      expect(await adminSessions.isRevoked(`${id}x`)).toBe(false)
    })
  })
}
