// The TemplateStore contract, run against memory and Redis (test/template-store.test.ts): templates
// are written only from the revision read (0: none there), a revision only grows, through a removal
// too, the edges' cheap look (revisions) agrees with what a read gives, and concurrent writers from
// one revision see one of them win.
import { describe, expect, it } from 'vitest'
import type { PageTemplate } from '../../src/core/page-template.js'
import type { TemplateStore } from '../../src/ports/template-store.js'

let seq = 0
const fresh = (): string => `t-${Date.now().toString(36)}-${seq++}`
const template = (name: string, source = '<p>{{headline}}</p>', stylesheet: string | null = null): PageTemplate => ({
  name,
  source,
  stylesheet,
})

export function templateStoreContract(name: string, make: () => Promise<TemplateStore>): void {
  describe(`TemplateStore contract: ${name}`, () => {
    it('makes a template only where there is none, then changes it only from the revision read', async () => {
      const store = await make()
      const n = fresh()
      expect(await store.get(n)).toBeUndefined()
      expect(await store.revisions([n])).toEqual([0])
      expect(await store.put(template(n), 0)).toEqual({ ok: true, rev: 1 })
      expect(await store.get(n)).toEqual({ template: template(n), rev: 1 })
      // A second "make" finds it there: the answer carries what is there.
      expect(await store.put(template(n, '<p>again</p>'), 0)).toEqual({ ok: false, current: { template: template(n), rev: 1 } })
      const changed = template(n, '<h1>{{title}}</h1>\n<p>ünïcödé and “quotes”</p>', 'https://cdn.example.com/a.css')
      expect(await store.put(changed, 1)).toEqual({ ok: true, rev: 2 })
      expect(await store.put(template(n, '<p>stale</p>'), 1)).toEqual({ ok: false, current: { template: changed, rev: 2 } })
      expect(await store.get(n)).toEqual({ template: changed, rev: 2 })
      expect((await store.list()).find((v) => v.template.name === n)).toEqual({ template: changed, rev: 2 })
    })

    it('removes only from the revision read; the name’s revision goes on growing, and a new template starts above it', async () => {
      const store = await make()
      const [a, b] = [fresh(), fresh()]
      await store.put(template(a), 0)
      await store.put(template(a, '<p>2</p>'), 1)
      await store.put(template(b), 0)
      expect(await store.remove(a, 1)).toMatchObject({ ok: false, current: { rev: 2 } })
      expect(await store.remove(a, 2)).toEqual({ ok: true, rev: 3 })
      expect(await store.get(a)).toBeUndefined()
      expect(await store.remove(a, 3)).toEqual({ ok: false, current: undefined })
      expect(await store.revisions([a, b, fresh()])).toEqual([3, 1, 0])
      expect((await store.list()).some((v) => v.template.name === a)).toBe(false)
      // Made again under the same name: a revision no edge has seen for it.
      expect(await store.put(template(a, '<p>back</p>'), 0)).toEqual({ ok: true, rev: 4 })
      expect(await store.revisions([a])).toEqual([4])
      expect(await store.revisions([])).toEqual([])
    })

    it('lets one of two writers from the same revision win', async () => {
      const store = await make()
      const n = fresh()
      await store.put(template(n), 0)
      const results = await Promise.all([store.put(template(n, '<p>mine</p>'), 1), store.put(template(n, '<p>theirs</p>'), 1)])
      expect(results.filter((r) => r.ok)).toHaveLength(1)
      const lost = results.find((r) => !r.ok)
      expect(lost).toEqual({ ok: false, current: await store.get(n) })
    })
  })
}
