// The edge as a Worker, in workerd (Miniflare, the bundle wrangler builds for a deploy): the same HTTP
// behaviour suite as on Node, with Redis reached through StoreRelay Durable Objects.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { generateSigningJwk } from '../src/core/admission-token.js'
import { edgeHttpContract } from './contract/edge-http.js'
import { TEST_SECRET } from './support/edge.js'
import { type OriginServer, startOrigin } from './support/origin-server.js'
import { nodeRuntime, workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'
import { startWorker } from './support/worker.js'

edgeHttpContract(workerRuntime(() => inject('redisUrl')))

const ADMIN = `ops:${'t'.repeat(32)}`
const adminHeaders = { authorization: `Bearer ${'t'.repeat(32)}`, accept: 'application/json' }

describe('the Worker itself', () => {
  let origin: OriginServer
  const started: { close(): Promise<void> }[] = []
  beforeAll(async () => {
    origin = await startOrigin()
  })
  afterAll(async () => {
    for (const s of started) await s.close()
    await origin.close()
  })

  it('serves the admin API and UI: a change with If-Match lands in Redis, is audited, and a Node edge on that Redis sees it', async () => {
    const redisUrl = `${inject('redisUrl')}/997`
    const rooms = [{ id: 'sale', paths: ['/tickets'], totalActiveUsers: 5, newUsersPerMinute: 60 }]
    const signingKeys = [await generateSigningJwk('admin')]
    const worker = await workerRuntime(() => inject('redisUrl')).start({
      rooms,
      originUrl: origin.url,
      redisUrl,
      signingKeys,
      adminTokens: ADMIN,
    })
    const node = await nodeRuntime.start({ rooms, originUrl: origin.url, redisUrl, signingKeys })
    started.push(worker, node)
    const ui = await worker.app.request('http://shop.test/_anteroom/admin/app.js')
    expect(ui.headers.get('content-type')).toMatch(/text\/javascript/)
    expect(await ui.text()).toContain('Anteroom admin UI')
    expect((await worker.app.request('http://shop.test/_anteroom/api/rooms/sale')).status).toBe(401)
    const got = await worker.app.request('http://shop.test/_anteroom/api/rooms/sale', { headers: adminHeaders })
    const etag = got.headers.get('etag') as string
    const changed = await worker.app.request('http://shop.test/_anteroom/api/rooms/sale', {
      method: 'PATCH',
      headers: { ...adminHeaders, 'content-type': 'application/json', 'if-match': etag },
      body: JSON.stringify({ mode: 'paused' }),
    })
    expect(changed.status).toBe(200)
    const absurd = await worker.app.request('http://shop.test/_anteroom/api/rooms/sale', {
      method: 'PATCH',
      headers: { ...adminHeaders, 'content-type': 'application/json', 'if-match': changed.headers.get('etag') as string },
      body: JSON.stringify({ newUsersPerMinute: -5 }),
    })
    expect(absurd.status).toBe(400)
    expect(await absurd.json()).toMatchObject({ error: { field: 'newUsersPerMinute' } })
    const audit = await worker.app.request('http://shop.test/_anteroom/api/audit', { headers: adminHeaders })
    expect(((await audit.json()) as { entries: { who: string; action: string }[] }).entries[0]).toMatchObject({ who: 'ops' })
    // The Node edge reloads its rooms within a second of its clock and then holds the line.
    await node.clock.advance(1_000)
    let state = ''
    for (let i = 0; i < 100 && state !== 'paused'; i++) {
      // The first request starts the reload; a later one is served from it (waiting only for that Redis read).
      state = (await new Visitor().status(node.app, 'sale')).state
      if (state !== 'paused') await new Promise((r) => setTimeout(r, 10))
    }
    expect(state).toBe('paused')
  })

  it('refuses to run with shared Redis but no secrets, naming the missing secret and showing no value', async () => {
    const worker = await startWorker({
      script: inject('workerProductionScript'),
      vars: { ANTEROOM_ORIGIN: origin.url, ANTEROOM_REDIS_URL: 'redis://:hunter2@127.0.0.1:1', ANTEROOM_ADMIN_TOKEN: 'x'.repeat(30) },
    })
    started.push(worker)
    const res = await worker.request('/anything')
    expect(res.status).toBe(500)
    const text = await res.text()
    expect(JSON.parse(text)).toMatchObject({ error: { code: 'ERR_CONFIG' } })
    expect(text).toContain('ANTEROOM_QUEUE_SECRET')
    expect(text).not.toContain('hunter2')
    expect(text).not.toContain('x'.repeat(30))
  })

  it('the production entry runs on its embedded store without Redis (wrangler dev, trials)', async () => {
    const worker = await startWorker({
      script: inject('workerProductionScript'),
      vars: {
        ANTEROOM_ORIGIN: origin.url,
        ANTEROOM_ROOMS: JSON.stringify([{ id: 'demo', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 60 }]),
      },
    })
    started.push(worker)
    const a = new Visitor()
    const b = new Visitor()
    const app = { request: (u: string, init?: RequestInit) => worker.mf.dispatchFetch(u, init as never) as unknown as Promise<Response> }
    expect(((await (await a.request(app, '/x')).json()) as { url: string }).url).toBe('/x')
    expect(await b.status(app, 'demo')).toMatchObject({ state: 'queued', position: 1 })
    expect((await worker.request('/.well-known/jwks.json')).status).toBe(200)
  })

  it('also runs with a Redis client per call (ANTEROOM_WORKER_REDIS=per-call), the slower option the bench compares', async () => {
    const worker = await startWorker({
      script: inject('workerProductionScript'),
      vars: {
        ANTEROOM_ORIGIN: origin.url,
        ANTEROOM_REDIS_URL: `${inject('redisUrl')}/996`,
        ANTEROOM_QUEUE_SECRET: TEST_SECRET,
        ANTEROOM_SIGNING_KEYS: JSON.stringify([await generateSigningJwk('per-call')]),
        ANTEROOM_WORKER_REDIS: 'per-call',
        ANTEROOM_ROOMS: JSON.stringify([{ id: 'pc', paths: ['/'], totalActiveUsers: 1, newUsersPerMinute: 60 }]),
      },
    })
    started.push(worker)
    const app = { request: (u: string, init?: RequestInit) => worker.mf.dispatchFetch(u, init as never) as unknown as Promise<Response> }
    expect(await new Visitor().status(app, 'pc')).toMatchObject({ state: 'admitted' })
    const second = new Visitor()
    expect(await second.status(app, 'pc')).toMatchObject({ state: 'queued', position: 1 })
    expect(await new Visitor().status(app, 'pc')).toMatchObject({ state: 'queued', position: 2 })
    expect(await second.status(app, 'pc')).toMatchObject({ state: 'queued', position: 1, waiting: 2 })
    const bad = await startWorker({
      script: inject('workerProductionScript'),
      vars: {
        ANTEROOM_ORIGIN: origin.url,
        ANTEROOM_REDIS_URL: `${inject('redisUrl')}/996`,
        ANTEROOM_QUEUE_SECRET: TEST_SECRET,
        ANTEROOM_SIGNING_KEYS: JSON.stringify([await generateSigningJwk('x')]),
        ANTEROOM_WORKER_REDIS: 'carrier-pigeon',
      },
    })
    started.push(bad)
    const res = await bad.request('/')
    expect(res.status).toBe(500)
    expect(await res.json()).toMatchObject({ error: { code: 'ERR_CONFIG', message: expect.stringContaining('ANTEROOM_WORKER_REDIS') } })
  })
})
