// The origin's command (issue #13 §4): `Anteroom-Command: end-session` on an admitted visitor's
// response ends their session when the room allows it (originCommands: 'end-session'). The header
// never reaches the visitor, in any case and whatever the room allows; the slot frees at once (the
// next in line is admitted on their next poll, on the manual clock); the same token is refused at
// once on this edge and within a second on another edge of the same Redis; the visitor may join the
// line again, at the back. With 'off' nothing ends. On Node (embedded store and Redis) and the Worker.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest'
import { generateSigningJwk } from '../src/core/admission-token.js'
import type { Edge } from '../src/entry/build.js'
import { testEdge } from './support/edge.js'
import { type OriginHandler, type OriginServer, startOrigin } from './support/origin-server.js'
import { type EdgeRuntime, nodeRuntime, sharedClock, T0, type TestEdge, workerRuntime } from './support/runtimes.js'
import { Visitor } from './support/visitor.js'

/** The test origin: /<room>/done answers as after a purchase, in an odd spelling; /<room>/odd sends unknown commands. */
const handler: OriginHandler = (req, res) => {
  res.setHeader('content-type', 'application/json')
  if (req.url?.endsWith('/done')) res.setHeader('ANTEROOM-Command', 'End-Session')
  if (req.url?.endsWith('/odd')) res.setHeader('anteroom-command', ['self-destruct', 'token=s3cr3t-value'])
  res.end(JSON.stringify({ url: req.url, booked: req.url?.endsWith('/done') ?? false }))
}

let origin: OriginServer
const edges: TestEdge[] = []
const built: Edge[] = []
beforeAll(async () => {
  origin = await startOrigin(handler)
})
afterAll(async () => {
  for (const e of edges) await e.close()
  for (const e of built) await e.close()
  await origin.close()
})

/** One slot, a long session, a pace that never holds the next admission back. */
function roomOf(originCommands: 'off' | 'end-session') {
  const id = `cmd-${randomBytes(4).toString('hex')}`
  return {
    id,
    settings: { id, paths: [`/${id}`], totalActiveUsers: 1, newUsersPerMinute: 600, sessionDurationSeconds: 600, originCommands },
  }
}

const admissionCookie = (room: string) => `anteroom_a_${room}`

/** The Set-Cookie lines of a response that clear a cookie. */
function cleared(res: Response): string[] {
  return res.headers
    .getSetCookie()
    .filter((line) => /Max-Age=0(;|$)/.test(line))
    .map((line) => line.slice(0, line.indexOf('=')))
}

function commandSuite(runtime: EdgeRuntime, redisUrl?: () => string) {
  describe(`origin commands (${runtime.name}${redisUrl ? ', Redis' : ''})`, () => {
    const start = async (room: Record<string, unknown>) => {
      const edge = await runtime.start({ rooms: [room], originUrl: origin.url, t0: T0, redisUrl: redisUrl?.() })
      edges.push(edge)
      return edge
    }

    it("with 'end-session': the slot frees at once, the token is refused at once, the visitor gets the origin's answer without the header", async () => {
      const { id, settings } = roomOf('end-session')
      const edge = await start(settings)
      const buyer = new Visitor()
      expect(await buyer.status(edge.app, id)).toMatchObject({ state: 'admitted' })
      const next = new Visitor()
      expect(await next.status(edge.app, id)).toMatchObject({ state: 'queued', position: 1 })
      const behind = new Visitor()
      expect(await behind.status(edge.app, id)).toMatchObject({ state: 'queued', position: 2 })
      // The buyer's browser, had it ignored the cleared cookie: the same admission token.
      const kept = buyer.clone()

      const done = await buyer.request(edge.app, `/${id}/done`, { method: 'POST' })
      expect(done.status).toBe(200)
      expect(await done.json()).toEqual({ url: `/${id}/done`, booked: true })
      expect(done.headers.has('anteroom-command')).toBe(false)
      expect(cleared(done)).toEqual([admissionCookie(id), `anteroom_q_${id}`])
      expect(done.headers.get('cache-control')).toBe('private, no-store')
      expect((await edge.queue.stats(id, edge.clock.now())).active).toBe(0)

      // The next in line is admitted on their next poll, the clock unmoved.
      expect(await next.status(edge.app, id)).toMatchObject({ state: 'admitted' })
      // The same token is refused at once on this edge: not forwarded; the visitor joins the line, at the back.
      const forwarded = origin.requests.length
      const again = await kept.request(edge.app, `/${id}/more`, { json: true })
      expect(await again.json()).toMatchObject({ state: 'queued', position: 2 })
      expect(origin.requests.length).toBe(forwarded)
      expect(await behind.status(edge.app, id)).toMatchObject({ state: 'queued', position: 1 })
    })

    it("with 'off': nothing ends, and the header still never reaches the visitor", async () => {
      const { id, settings } = roomOf('off')
      const edge = await start(settings)
      const buyer = new Visitor()
      expect(await buyer.status(edge.app, id)).toMatchObject({ state: 'admitted' })
      const next = new Visitor()
      expect(await next.status(edge.app, id)).toMatchObject({ state: 'queued', position: 1 })
      const done = await buyer.request(edge.app, `/${id}/done`, { method: 'POST' })
      expect(done.status).toBe(200)
      expect(done.headers.has('anteroom-command')).toBe(false)
      expect(cleared(done)).toEqual([])
      expect((await edge.queue.stats(id, edge.clock.now())).active).toBe(1)
      await edge.clock.advance(2000)
      expect(await next.status(edge.app, id)).toMatchObject({ state: 'queued', position: 1 })
      const more = await buyer.request(edge.app, `/${id}/more`, { json: true })
      expect(await more.json()).toMatchObject({ url: `/${id}/more` })
    })

    it('an unknown command is ignored and never reaches the visitor; nor does the header off a room', async () => {
      const { id, settings } = roomOf('end-session')
      const edge = await start(settings)
      const buyer = new Visitor()
      expect(await buyer.status(edge.app, id)).toMatchObject({ state: 'admitted' })
      const odd = await buyer.request(edge.app, `/${id}/odd`)
      expect(odd.status).toBe(200)
      expect(odd.headers.has('anteroom-command')).toBe(false)
      expect(cleared(odd)).toEqual([])
      expect((await edge.queue.stats(id, edge.clock.now())).active).toBe(1)
      // A path no room protects: the header is dropped all the same.
      const plain = await buyer.request(edge.app, '/elsewhere/done')
      expect(plain.status).toBe(200)
      expect(plain.headers.has('anteroom-command')).toBe(false)
    })
  })
}

commandSuite(nodeRuntime)
commandSuite(nodeRuntime, () => inject('redisUrl'))
commandSuite(workerRuntime(() => inject('redisUrl')))

describe('origin commands on two edges of one Redis', () => {
  const worker = workerRuntime(() => inject('redisUrl'))
  for (const [a, b, db] of [
    [nodeRuntime, nodeRuntime, 980],
    [nodeRuntime, worker, 981],
  ] as const) {
    it(`the token ended on one edge is refused on the other within a second (${a.name} + ${b.name})`, async () => {
      const { id, settings } = roomOf('end-session')
      const redisUrl = `${inject('redisUrl')}/${db}`
      const signingKeys = [await generateSigningJwk(`cmd-${db}`)]
      const [first, second] = [
        await a.start({ rooms: [settings], originUrl: origin.url, redisUrl, signingKeys }),
        await b.start({ rooms: [settings], originUrl: origin.url, redisUrl, signingKeys }),
      ] as [TestEdge, TestEdge]
      edges.push(first, second)
      const clock = sharedClock([first.clock, second.clock])
      await clock.set(T0)
      const buyer = new Visitor()
      expect(await buyer.status(first.app, id)).toMatchObject({ state: 'admitted' })
      // The token works on the second edge, and it has looked at the room since.
      const kept = buyer.clone()
      expect(await (await kept.request(second.app, `/${id}/before`, { json: true })).json()).toMatchObject({ url: `/${id}/before` })
      await second.settled()
      const next = new Visitor()
      expect(await next.status(first.app, id)).toMatchObject({ state: 'queued', position: 1 })

      expect(cleared(await buyer.request(first.app, `/${id}/done`, { method: 'POST' }))).toContain(admissionCookie(id))
      // The freed slot goes to the next in line at once, on the other edge too.
      expect(await next.status(second.app, id)).toMatchObject({ state: 'admitted' })
      await clock.advance(1000)
      const before = origin.requests.length
      let forwarded = 0
      let refused = false
      // The first request after the second may still pass (it starts the edge's look at the store); then none does.
      for (let i = 0; i < 5; i++) {
        const body = (await (await kept.request(second.app, `/${id}/after`, { json: true })).json()) as { url?: string; state?: string }
        if (body.url !== undefined) forwarded++
        else refused = body.state === 'queued'
        await second.settled()
      }
      expect(refused).toBe(true)
      expect(forwarded).toBeLessThanOrEqual(1)
      expect(origin.requests.length - before).toBe(forwarded)
    })
  }
})

describe('what the edge logs of origin commands', () => {
  it('an unknown command is logged as a plain word or only its length; a room that does not allow them says why', async () => {
    const logs: { event: string; fields: Record<string, unknown> }[] = []
    const on = roomOf('end-session')
    const off = roomOf('off')
    const edge = await testEdge({
      rooms: [on.settings, off.settings],
      originUrl: origin.url,
      log: (event, fields) => logs.push({ event, fields }),
    })
    built.push(edge)
    const v = new Visitor()
    expect(await v.status(edge.app, on.id)).toMatchObject({ state: 'admitted' })
    expect(await v.status(edge.app, off.id)).toMatchObject({ state: 'admitted' })
    await v.request(edge.app, `/${on.id}/odd`)
    await v.request(edge.app, `/${off.id}/done`)
    await v.request(edge.app, `/${on.id}/done`)
    const commands = logs.filter((l) => l.event.startsWith('origin_command'))
    // Each line carries its request's id (made: the test sends no trusted header); one request's lines share it.
    for (const l of commands) expect(l.fields.requestId).toMatch(/^[0-9a-f-]{36}$/)
    expect(commands[0]?.fields.requestId).toBe(commands[1]?.fields.requestId)
    expect(commands[2]?.fields.requestId).not.toBe(commands[0]?.fields.requestId)
    for (const l of commands) delete l.fields.requestId
    expect(commands).toEqual([
      { event: 'origin_command_unknown', fields: { room: on.id, command: 'self-destruct' } },
      { event: 'origin_command_unknown', fields: { room: on.id, command: '(18 characters)' } },
      {
        event: 'origin_command_ignored',
        fields: { room: off.id, command: 'end-session', reason: "the room's originCommands is off" },
      },
      { event: 'origin_command', fields: { room: on.id, command: 'end-session', active: true } },
    ])
    expect(JSON.stringify(logs)).not.toContain('s3cr3t')
  })
})
