// Node entry point: `npm start`. Reads the config, starts the bundled booking origin (embedded
// PGlite unless ANTEROOM_DATABASE_URL is set) when no origin is configured, builds the edge and serves it.
import { serve } from '@hono/node-server'
import { loadConfig } from '../config/index.js'
import { isAnteroomError } from '../core/errors.js'
import { buildBooking } from './booking.js'
import { buildEdge } from './build.js'

function log(event: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), event, ...fields })}\n`)
}

async function main(): Promise<void> {
  const config = loadConfig(process.env)
  let originUrl = config.originUrl
  let booking: Awaited<ReturnType<typeof buildBooking>> | undefined
  if (originUrl === undefined) {
    booking = await buildBooking({
      databaseUrl: config.databaseUrl,
      jwksUrl: `http://127.0.0.1:${config.port}/.well-known/jwks.json`,
      issuer: config.issuer,
      audience: config.audience,
      room: config.rooms[0]?.id ?? 'demo',
    })
    const server = serve({ fetch: booking.app.fetch, hostname: '127.0.0.1', port: config.demoOriginPort })
    await new Promise((resolve) => server.once('listening', resolve))
    originUrl = `http://127.0.0.1:${config.demoOriginPort}`
    log('booking_origin', { url: originUrl, database: config.databaseUrl ? 'postgresql' : 'embedded PGlite', demoEvent: 'demo' })
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
    void Promise.allSettled([edge.close(), booking?.close()]).finally(() => process.exit(0))
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
