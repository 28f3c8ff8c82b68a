// Node entry point: `npm start`. Reads the config, starts the demo origin when no origin is
// configured, builds the edge and serves it.
import { serve } from '@hono/node-server'
import { loadConfig } from '../config/index.js'
import { isAnteroomError } from '../core/errors.js'
import { createDemoOrigin } from '../demo/origin.js'
import { buildEdge } from './build.js'

function log(event: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), event, ...fields })}\n`)
}

async function main(): Promise<void> {
  const config = loadConfig(process.env)
  let originUrl = config.originUrl
  if (originUrl === undefined) {
    const demo = serve({ fetch: createDemoOrigin().fetch, hostname: '127.0.0.1', port: config.demoOriginPort })
    await new Promise((resolve) => demo.once('listening', resolve))
    originUrl = `http://127.0.0.1:${config.demoOriginPort}`
    log('demo_origin', { url: originUrl })
  }
  if (config.queueSecretGenerated)
    log('warning', { message: 'ANTEROOM_QUEUE_SECRET is not set: using a random one. Fine for one instance; set it for several.' })
  if (config.signingKeys === undefined)
    log('warning', { message: 'ANTEROOM_SIGNING_KEYS is not set: using a fresh ES256 key. Set it for several instances.' })
  const edge = await buildEdge(config, { originUrl, log })
  const server = serve({ fetch: edge.app.fetch, hostname: config.host, port: config.port })
  server.once('listening', () => {
    log('listening', {
      url: `http://${config.host}:${config.port}/`,
      store: config.redisUrl ? 'redis' : 'embedded',
      rooms: config.rooms.map((r) => r.id),
    })
  })
  const stop = () => {
    server.close()
    void edge.close().finally(() => process.exit(0))
  }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
}

main().catch((err) => {
  if (isAnteroomError(err)) {
    process.stderr.write(`anteroom: ${err.message}\n`)
    process.exit(2)
  }
  process.stderr.write(`anteroom: failed to start: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
