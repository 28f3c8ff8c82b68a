// Run by test/fast-strings.test.ts in a child process under `node --allow-natives-syntax --import tsx`:
// prints whether String.prototype has fast properties (V8's %HasFastProperties) at each step, as JSON.
// `ioredis-only` loads ioredis alone; `edge` loads the Node edge's modules and the Worker's Redis stores, then
// builds a Node edge on the embedded store and serves queued visitors through it.
import { loadConfig } from '../../src/config/index.js'

const fast = new Function('p', 'return %HasFastProperties(p)') as (p: object) => boolean
const steps: Record<string, boolean> = { start: fast(String.prototype) }

if (process.argv[2] === 'ioredis-only') {
  await import('ioredis')
  steps.ioredis = fast(String.prototype)
} else {
  const { buildEdge } = await import('../../src/entry/build.js')
  await import('../../worker/redis-stores.js')
  steps.loaded = fast(String.prototype)
  const config = loadConfig({
    ANTEROOM_ROOMS: JSON.stringify([{ id: 'probe', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 1 }]),
  })
  const edge = await buildEdge(config, { originUrl: 'http://127.0.0.1:9' })
  for (let i = 0; i < 300; i++) {
    const res = await edge.app.fetch(new Request('http://edge.test/', { headers: { accept: 'application/json' } }))
    await res.text()
  }
  await edge.close()
  steps.served = fast(String.prototype)
}
process.stdout.write(JSON.stringify(steps))
