// The metrics as an operator's Prometheus sees them: a real Prometheus server (Debian's) scrapes a
// Node edge and the booking origin over HTTP with the metrics token, and its query API answers with
// the sale's numbers; a job without the token is refused (up 0). promtool's lint of the exposition
// (Prometheus's naming conventions) finds nothing to say about any anteroom_* metric, on the edge,
// the origin and the Worker's writer.
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { until as pollUntil } from '../scripts/lib/until.js'
import { textExporter } from '../src/core/metrics.js'
import { buildBooking } from '../src/entry/booking.js'
import type { Edge } from '../src/entry/build.js'
import { cookieFetch } from './support/cookie-fetch.js'
import { testEdge } from './support/edge.js'
import { freshDatabase } from './support/postgres-server.js'
import { freePort } from './support/redis-server.js'
import { freshDb } from './support/runtimes.js'
import { type Served, serveOnFreePort } from './support/serve.js'

const TOKEN = 'scrape-token-0123456789abcdefgh'
let edge: Edge
let booking: Awaited<ReturnType<typeof buildBooking>>
let edgeUrl: string
let originUrl: string
let prometheus: ChildProcess | undefined
let promUrl: string
let dir: string
let database: Awaited<ReturnType<typeof freshDatabase>>
const servers: Served[] = []

beforeAll(async () => {
  const [edgePort, originPort, promPort] = [await freePort(), await freePort(), await freePort()]
  edgeUrl = `http://127.0.0.1:${edgePort}`
  originUrl = `http://127.0.0.1:${originPort}`
  promUrl = `http://127.0.0.1:${promPort}`
  database = await freshDatabase(inject('postgresUrl'), 'prometheus')
  booking = await buildBooking({
    databaseUrl: database.url,
    jwksUrl: `${edgeUrl}/.well-known/jwks.json`,
    issuer: 'anteroom',
    audience: 'origin',
    room: 'demo',
    festival: false,
    metrics: { tokens: [TOKEN] },
  })
  edge = await testEdge({
    rooms: [{ id: 'demo', paths: ['/'], totalActiveUsers: 100, newUsersPerMinute: 600 }],
    originUrl,
    redisUrl: `${inject('redisUrl')}/${await freshDb(inject('redisUrl'))}`,
    env: { ANTEROOM_METRICS_TOKEN: TOKEN },
  })
  // Each knows the other's URL before it starts: the ports are picked first.
  servers.push(await serveOnFreePort(booking.app.fetch, { port: originPort }))
  servers.push(await serveOnFreePort(edge.app.fetch, { port: edgePort }))

  dir = mkdtempSync(join(tmpdir(), 'anteroom-prometheus-'))
  const job = (name: string, path: string, port: number, token?: string) =>
    [
      `  - job_name: ${name}`,
      `    metrics_path: ${path}`,
      ...(token === undefined ? [] : ['    authorization:', '      type: Bearer', `      credentials: ${token}`]),
      '    static_configs:',
      `      - targets: ['127.0.0.1:${port}']`,
    ].join('\n')
  writeFileSync(
    join(dir, 'prometheus.yml'),
    [
      'global:',
      '  scrape_interval: 1s',
      '  scrape_timeout: 900ms',
      'scrape_configs:',
      job('edge', '/_anteroom/metrics', edgePort, TOKEN),
      job('origin', '/metrics', originPort, TOKEN),
      job('edge-without-token', '/_anteroom/metrics', edgePort),
    ].join('\n'),
  )
  prometheus = spawn(
    'prometheus',
    [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${promPort}`,
      '--log.level=warn',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
})

afterAll(async () => {
  if (prometheus?.pid !== undefined && prometheus.exitCode === null) {
    const exited = new Promise((r) => prometheus?.once('exit', r))
    process.kill(prometheus.pid, 'SIGTERM')
    await exited
  }
  for (const s of servers) await s.close()
  await edge.close()
  await booking.close()
  await database.drop()
  rmSync(dir, { recursive: true, force: true })
})

/** One instant query: each series' labels and value. */
async function query(q: string): Promise<{ metric: Record<string, string>; value: number }[]> {
  const res = await fetch(`${promUrl}/api/v1/query?query=${encodeURIComponent(q)}`)
  const body = (await res.json()) as { status: string; data: { result: { metric: Record<string, string>; value: [number, string] }[] } }
  expect(body.status).toBe('success')
  return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }))
}

/** Waits (real time: Prometheus scrapes every second) until a query's first value satisfies `ok`. */
async function until(q: string, ok: (v: number) => boolean): Promise<number> {
  let last: number | undefined
  const right = async () => {
    last = (await query(q))[0]?.value
    return last !== undefined && ok(last)
  }
  await pollUntil(() => `${q} (last: ${last})`, right, 30_000, 200)
  return last as number
}

/** A browser's fetch with a cookie jar, at the edge. */
const browser = () => cookieFetch(() => edgeUrl)

describe('a real Prometheus scraping the edge and the booking origin', () => {
  it('reads the sale: visits, the line, holds by outcome, statement latency; refuses a job without the token', async () => {
    // Three visitors get in and each holds a seat; one asks for a seat that is taken.
    for (const [i, seat] of ['A1', 'A2', 'A3', 'A1'].entries()) {
      const go = browser()
      expect((await go('/', { headers: { accept: 'text/html' } })).status).toBe(200)
      const hold = await go('/events/demo/holds', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ seats: [seat] }),
      })
      expect(hold.status).toBe(i < 3 ? 201 : 409)
    }
    expect(await until('up{job="edge"}', (v) => v === 1)).toBe(1)
    expect(await until('up{job="origin"}', (v) => v === 1)).toBe(1)
    expect(await until('up{job="edge-without-token"}', () => true)).toBe(0)
    expect(await until('sum(anteroom_visits_total{job="edge",room="demo",outcome="admit"})', (v) => v === 4)).toBe(4)
    expect(await until('anteroom_room_active{job="edge",room="demo"}', (v) => v === 4)).toBe(4)
    expect(await until('anteroom_origin_holds_total{job="origin",event="demo",outcome="held"}', (v) => v === 3)).toBe(3)
    const refused = await until('sum(anteroom_origin_holds_total{job="origin",event="demo",outcome=~"gate|taken"})', (v) => v === 1)
    expect(refused).toBe(1)
    // A histogram Prometheus can take quantiles of: every hold statement took less than 5 s.
    const p99 = await until(
      'histogram_quantile(0.99, sum by (le) (anteroom_origin_db_statement_duration_seconds_bucket{job="origin",statement="hold"}))',
      (v) => Number.isFinite(v),
    )
    expect(p99).toBeGreaterThan(0)
    expect(p99).toBeLessThanOrEqual(5)
    expect(await until('anteroom_queue_wait_seconds_count{job="edge",room="demo"}', (v) => v === 4)).toBe(4)
  })

  it("promtool's lint finds nothing to say about an anteroom_* metric, on the edge, the origin and the Worker's writer", async () => {
    const texts = [
      await (await fetch(`${edgeUrl}/_anteroom/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
      await (await fetch(`${originUrl}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text(),
      await textExporter(edge.deps.meters?.registry ?? (undefined as never)).text(),
    ]
    for (const text of texts) {
      expect(text).toContain('# TYPE anteroom_')
      let problems = ''
      try {
        execFileSync('promtool', ['check', 'metrics'], { input: text, stdio: ['pipe', 'pipe', 'pipe'] })
      } catch (err) {
        // promtool exits 3 for lint problems; prom-client's own nodejs_* gauges named *_total are among them.
        problems = String((err as { stderr?: Buffer }).stderr ?? '') + String((err as { stdout?: Buffer }).stdout ?? '')
      }
      expect(problems.split('\n').filter((line) => line.includes('anteroom_'))).toEqual([])
    }
  })
})
