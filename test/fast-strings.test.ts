// ioredis 6 leaves String.prototype with slow (dictionary-mode) properties in V8; the Redis adapter
// turns it back (src/adapters/redis/fast-strings.ts). Checked with V8's %HasFastProperties in a child
// process started with --allow-natives-syntax (test/support/fast-strings-probe.ts).
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

const run = promisify(execFile)

async function probe(mode: 'ioredis-only' | 'edge'): Promise<Record<string, boolean>> {
  const args = ['--allow-natives-syntax', '--import', 'tsx', 'test/support/fast-strings-probe.ts', mode]
  const { stdout } = await run(process.execPath, args, { timeout: 60_000 })
  return JSON.parse(stdout) as Record<string, boolean>
}

describe("String.prototype's properties stay fast with ioredis loaded", () => {
  it('ioredis alone leaves them slow (the reason for fast-strings.ts: when this fails after an upgrade, it can go)', async () => {
    expect(await probe('ioredis-only')).toEqual({ start: true, ioredis: false })
  })

  it('they are fast once the Node edge and the Worker Redis stores are loaded, and after an edge has served polls', async () => {
    expect(await probe('edge')).toEqual({ start: true, loaded: true, served: true })
  })
})
