// The AuditLog contract: changes of settings and mode kept by age (90 days), every other entry by
// count (the newest 1,000), both listed together newest first. Run against memory and Redis
// (a database of its own, and a Redis Cluster). Time comes from the entries' `at`: no sleeping.
import { describe, expect, it } from 'vitest'
import { ACTION_CAP, type AuditEntry, type AuditLog, CHANGE_RETENTION_MS } from '../../src/ports/audit-log.js'

const T0 = 1_800_000_000_000
const DAY = 86_400_000

const entry = (t: number, action: string, extra: Partial<AuditEntry> = {}): AuditEntry => ({
  at: new Date(t).toISOString(),
  who: 'alice',
  action,
  room: 'r',
  before: null,
  after: null,
  ...extra,
})

export function auditLogContract(name: string, make: () => Promise<AuditLog>): void {
  describe(`AuditLog contract: ${name}`, () => {
    it('lists both kinds merged, newest first, with a limit; the same moment keeps the order of appends', async () => {
      const audit = await make()
      await audit.append(entry(T0, 'settings.update', { before: { newUsersPerMinute: 6 }, after: { newUsersPerMinute: 60 } }))
      await audit.append(entry(T0 + 1000, 'session.end', { before: { visitor: 'v1' }, after: { ended: true } }))
      await audit.append(entry(T0 + 2000, 'room.pause'))
      // Three at the same moment, of both kinds, as the pause/resume/close buttons can make.
      await audit.append(entry(T0 + 3000, 'room.close'))
      await audit.append(entry(T0 + 3000, 'sessions.end-all', { after: { ended: 3 } }))
      await audit.append(entry(T0 + 3000, 'room.resume'))
      const all = await audit.list(100)
      expect(all.map((e) => e.action)).toEqual([
        'room.resume',
        'sessions.end-all',
        'room.close',
        'room.pause',
        'session.end',
        'settings.update',
      ])
      expect(all[5]).toEqual(entry(T0, 'settings.update', { before: { newUsersPerMinute: 6 }, after: { newUsersPerMinute: 60 } }))
      expect(all[1]?.after).toEqual({ ended: 3 })
      expect((await audit.list(2)).map((e) => e.action)).toEqual(['room.resume', 'sessions.end-all'])
      expect((await audit.list(100, { kind: 'changes' })).map((e) => e.action)).toEqual([
        'room.resume',
        'room.close',
        'room.pause',
        'settings.update',
      ])
      expect((await audit.list(100, { kind: 'actions' })).map((e) => e.action)).toEqual(['sessions.end-all', 'session.end'])
    })

    it(`keeps the newest ${ACTION_CAP} other entries, and ${ACTION_CAP + 5} of them never push out a settings change`, async () => {
      const audit = await make()
      await audit.append(entry(T0, 'settings.update', { after: { totalActiveUsers: 5 } }))
      await audit.append(entry(T0 + 1, 'room.close'))
      for (let i = 0; i < ACTION_CAP + 5; i++)
        await audit.append(entry(T0 + 10 + i, 'session.end', { before: { visitor: `v${i}` }, after: { ended: true } }))
      const changes = await audit.list(100, { kind: 'changes', now: T0 + 2 * DAY })
      expect(changes.map((e) => e.action)).toEqual(['room.close', 'settings.update'])
      expect(changes[1]?.after).toEqual({ totalActiveUsers: 5 })
      const all = await audit.list(5000)
      expect(all).toHaveLength(ACTION_CAP + 2)
      expect(all.slice(-2).map((e) => e.action)).toEqual(['room.close', 'settings.update'])
      // The five oldest other entries went, the newest stayed.
      const visitors = all.filter((e) => e.action === 'session.end').map((e) => (e.before as { visitor: string }).visitor)
      expect(visitors[0]).toBe(`v${ACTION_CAP + 4}`)
      expect(visitors.at(-1)).toBe('v5')
      // The newest 1,000 of the merged log are the other entries: they are newer.
      expect((await audit.list(ACTION_CAP)).every((e) => e.action === 'session.end')).toBe(true)
    })

    it('drops a change once it is older than 90 days, by the time of the entry appended or the time asked with', async () => {
      const audit = await make()
      await audit.append(entry(T0, 'settings.update', { after: { v: 'old' } }))
      await audit.append(entry(T0 + DAY, 'room.pause', { after: { v: 'newer' } }))
      await audit.append(entry(T0 + 1, 'session.end'))
      // Exactly 90 days on, the first is still kept; a millisecond later it is not listed.
      expect((await audit.list(10, { kind: 'changes', now: T0 + CHANGE_RETENTION_MS })).map((e) => e.action)).toEqual([
        'room.pause',
        'settings.update',
      ])
      expect((await audit.list(10, { now: T0 + CHANGE_RETENTION_MS + 1 })).map((e) => e.action)).toEqual(['room.pause', 'session.end'])
      // Without a time, listing shows what is stored: both changes, until an append drops the old one.
      expect(await audit.list(10, { kind: 'changes' })).toHaveLength(2)
      await audit.append(entry(T0 + CHANGE_RETENTION_MS + 1, 'session.end', { after: { v: 'later' } }))
      expect((await audit.list(10, { kind: 'changes' })).map((e) => e.after)).toEqual([{ v: 'newer' }])
      // Other entries are kept by count, not by age.
      expect((await audit.list(10, { kind: 'actions', now: T0 + 10 * CHANGE_RETENTION_MS })).map((e) => e.at)).toEqual([
        new Date(T0 + CHANGE_RETENTION_MS + 1).toISOString(),
        new Date(T0 + 1).toISOString(),
      ])
    })

    it('keeps two equal entries apart', async () => {
      const audit = await make()
      await audit.append(entry(T0, 'room.pause'))
      await audit.append(entry(T0, 'room.pause'))
      await audit.append(entry(T0, 'session.end'))
      await audit.append(entry(T0, 'session.end'))
      expect(await audit.list(10)).toHaveLength(4)
    })
  })
}
