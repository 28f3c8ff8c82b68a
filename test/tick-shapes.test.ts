// Node's next-tick objects keep their V8 shape across full garbage collections once the process keeps
// one alive (src/adapters/node/tick-shapes.ts). Without it a collection drops the shape, and a process
// that has collected a few times makes every next-tick object in V8's runtime. Checked in a child
// process with V8's %DebugPrint (test/support/tick-shapes-probe.ts): the map of a fresh next-tick
// object before and after two full collections, three times.
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)

/** Per round, whether the map after the collections was the one before. */
async function sameShapeAfterGc(mode: 'bare' | 'kept'): Promise<boolean[]> {
  const args = ['--expose-gc', '--allow-natives-syntax', '--import', 'tsx', 'test/support/tick-shapes-probe.ts', mode]
  const { stdout } = await run(process.execPath, args, { timeout: 60_000 })
  const maps = [...stdout.matchAll(/^ - map: (0x[0-9a-f]+)/gm)].map((m) => m[1])
  expect(maps).toHaveLength(6)
  return [0, 2, 4].map((i) => maps[i] === maps[i + 1])
}

describe("Node's next-tick objects keep their shape across full collections", () => {
  it('without the keeper a collection gives them a new shape (the reason for tick-shapes.ts: when this fails after a Node upgrade, it can go)', async () => {
    expect(await sameShapeAfterGc('bare')).toEqual([false, false, false])
  })

  it('with one kept alive they keep it', async () => {
    expect(await sameShapeAfterGc('kept')).toEqual([true, true, true])
  })

  it('a Node edge keeps one from the moment it is built', async () => {
    const { keepsTickShapes } = await import('../src/adapters/node/tick-shapes.js')
    const { buildEdge } = await import('../src/entry/build.js')
    const { loadConfig } = await import('../src/config/index.js')
    const config = loadConfig({
      ANTEROOM_ROOMS: JSON.stringify([{ id: 'ticks', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 1 }]),
    })
    const edge = await buildEdge(config, { originUrl: 'http://127.0.0.1:9' })
    try {
      expect(keepsTickShapes()).toBe(true)
    } finally {
      await edge.close()
    }
  })
})
