// `npm run dev:worker`: the edge as a Worker under `wrangler dev --local` (workerd on this machine),
// against a local Redis, in front of the bundled booking origin.
//   Redis:   ANTEROOM_REDIS_URL, or a redis-server started here on a free port (stopped on exit).
//   Origin:  ANTEROOM_ORIGIN, or the bundled booking origin on embedded PGlite, started here.
//   Secrets: .dev.vars (wrangler's file for local secrets), written once with fresh values, mode 600.
//            The admin token is in it; the log names the file, never the token.
import { type ChildProcess, spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, writeFileSync } from 'node:fs'
import { serve } from '@hono/node-server'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { buildBooking } from '../src/entry/booking.js'
import { freePort } from './lib/free-port.js'
import { type RedisServer, startRedis } from './lib/redis-server.js'

const PORT = Number(process.env.ANTEROOM_PORT ?? 8787)
const DEV_VARS = '.dev.vars'

function say(message: string): void {
  process.stdout.write(`dev:worker: ${message}\n`)
}

async function main(): Promise<void> {
  if (!existsSync(DEV_VARS)) {
    const lines = [
      `ANTEROOM_QUEUE_SECRET=${randomBytes(32).toString('base64url')}`,
      `ANTEROOM_SIGNING_KEYS='${JSON.stringify([await generateSigningJwk(`dev-${Date.now().toString(36)}`)])}'`,
      `ANTEROOM_ADMIN_TOKEN=${randomBytes(24).toString('base64url')}`,
    ]
    writeFileSync(DEV_VARS, `${lines.join('\n')}\n`, { mode: 0o600 })
    say(`wrote fresh local secrets to ${DEV_VARS} (the admin token for /_anteroom/admin is in it)`)
  }

  let redis: RedisServer | undefined
  let redisUrl = process.env.ANTEROOM_REDIS_URL
  if (!redisUrl) {
    redis = await startRedis()
    redisUrl = redis.url
    say(`started redis-server on ${redisUrl} (pid ${redis.pid})`)
  }

  let originUrl = process.env.ANTEROOM_ORIGIN
  let booking: Awaited<ReturnType<typeof buildBooking>> | undefined
  if (!originUrl) {
    booking = await buildBooking({
      databaseUrl: process.env.ANTEROOM_DATABASE_URL,
      jwksUrl: `http://127.0.0.1:${PORT}/.well-known/jwks.json`,
      issuer: 'anteroom',
      audience: 'origin',
      room: 'demo',
    })
    const port = await freePort()
    const server = serve({ fetch: booking.app.fetch, hostname: '127.0.0.1', port })
    await new Promise((resolve) => server.once('listening', resolve))
    originUrl = `http://127.0.0.1:${port}`
    say(`booking origin on ${originUrl} (embedded PGlite, demo event "demo")`)
  }

  const wrangler: ChildProcess = spawn(
    'node_modules/.bin/wrangler',
    [
      'dev',
      '--local',
      '--ip',
      '127.0.0.1',
      '--port',
      String(PORT),
      '--var',
      `ANTEROOM_REDIS_URL:${redisUrl}`,
      '--var',
      `ANTEROOM_ORIGIN:${originUrl}`,
    ],
    { stdio: 'inherit', env: { ...process.env, WRANGLER_SEND_METRICS: 'false' } },
  )
  say(`the Worker edge: http://127.0.0.1:${PORT}/ (admin: /_anteroom/admin)`)
  const stop = async (code: number) => {
    if (wrangler.exitCode === null) wrangler.kill('SIGTERM')
    await booking?.close().catch(() => {})
    await redis?.stop().catch(() => {})
    process.exit(code)
  }
  wrangler.once('exit', (code) => void stop(code ?? 0))
  process.once('SIGINT', () => void stop(0))
  process.once('SIGTERM', () => void stop(0))
}

main().catch((err) => {
  process.stderr.write(`dev:worker: ${err instanceof Error ? err.message : String(err)}\n`)
  process.exit(1)
})
