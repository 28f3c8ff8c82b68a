// The admin UI's ES modules (admin/ui/*.js): the Node edge reads them all from the directory, the
// Worker only those worker/bundled.ts imports. A module left out there loads on Node and fails in
// the Worker, so this checks that every one is there, and that the page reaches each one by imports.

import { readdirSync, readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { ADMIN_MODULE } from '../admin/inputs.js'

const UI = 'admin/ui/'
const modules = readdirSync(UI).filter((f) => ADMIN_MODULE.test(f))

describe('the admin UI modules', () => {
  it('are each bundled for the Worker, under their file name', () => {
    const bundled = readFileSync('worker/bundled.ts', 'utf8')
    expect(modules).toContain('app.js')
    for (const f of modules) {
      const name = f.replace(/\.js$/, '')
      expect(bundled, f).toContain(`import ${name} from '../admin/ui/${f}'`)
      expect(bundled, f).toContain(`'${f}': ${name},`)
    }
  })

  it('are each imported, from app.js (which index.html loads) on', () => {
    expect(readFileSync(`${UI}index.html`, 'utf8')).toContain('<script type="module" src="/_anteroom/admin/app.js"></script>')
    const reached = new Set(['app.js'])
    const todo = ['app.js']
    while (todo.length > 0) {
      const text = readFileSync(`${UI}${todo.pop()}`, 'utf8')
      for (const [, f = ''] of text.matchAll(/^import [^;]*? from '\.\/([a-z0-9-]+\.js)'$/gm)) {
        if (reached.has(f)) continue
        reached.add(f)
        todo.push(f)
      }
    }
    expect([...reached].sort()).toEqual([...modules].sort())
  })
})
