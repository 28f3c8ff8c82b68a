// The booking origin contract (test/contract/booking.ts), one topic: request bodies over a real Node server (types, sizes, slow senders), and open
// admissions.
// Run against each database by bookingContract.
import { connect } from 'node:net'
import { createLocalJWKSet, SignJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { MAX_BODY_BYTES } from '../../../src/booking/body.js'
import { admissionVerifier } from '../../../src/booking/verify.js'
import { serveOnFreePort } from '../../support/serve.js'
import type { App, BookingContext } from '../booking.js'

export function bodiesContract(ctx: BookingContext): void {
  const { setup, tokenFor, openTokenFor, call, statuses } = ctx

  describe('bodies', () => {
    /** The app on a real Node HTTP server, as `npm start` runs it. */
    const listen = (app: App) => serveOnFreePort(app.fetch)

    /**
     * Sends a request head and whatever `send` writes, over a raw socket, and resolves with the
     * answer as soon as it has arrived, whether or not the request body was finished.
     */
    function rawRequest(port: number, head: string, send: (write: (data: string) => Promise<void>) => Promise<void>) {
      return new Promise<{ status: number; headers: Record<string, string>; body: Record<string, unknown>; sent: number }>(
        (resolve, reject) => {
          const socket = connect(port, '127.0.0.1')
          let received = Buffer.alloc(0)
          let sent = 0
          let answered = false
          socket.on('error', (err) => {
            if (!answered) reject(err)
          })
          socket.on('data', (data) => {
            received = Buffer.concat([received, data])
            const end = received.indexOf('\r\n\r\n')
            if (end < 0) return
            const [statusLine = '', ...lines] = received.subarray(0, end).toString('latin1').split('\r\n')
            const headers = Object.fromEntries(
              lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
            )
            const length = Number(headers['content-length'])
            if (received.length - end - 4 < length) return
            answered = true
            resolve({
              status: Number(statusLine.split(' ')[1]),
              headers,
              body: JSON.parse(received.subarray(end + 4, end + 4 + length).toString('utf8')),
              sent,
            })
            socket.destroy()
          })
          const write = (data: string) =>
            new Promise<void>((done) => {
              if (answered || socket.destroyed) return done()
              sent += Buffer.byteLength(data)
              socket.write(data, () => done())
            })
          socket.once('connect', () => {
            void write(head)
              .then(() => send(write))
              .catch(() => {})
          })
        },
      )
    }

    it('holds, confirms and releases take JSON only: form, multipart and text/plain bodies get a 415 and change nothing', async () => {
      const { app, event, payments } = await setup()
      const token = await tokenFor('v-types')
      const held = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: ['A1'] } })
      expect(held.status).toBe(201)
      const hold = held.body.hold.id as string
      // What a cross-site form can send: its three encodings, and JSON text posted as text/plain.
      const bodies: [string | undefined, string | Uint8Array<ArrayBuffer>][] = [
        ['application/x-www-form-urlencoded', 'seats=A2'],
        ['multipart/form-data; boundary=x', '--x\r\nContent-Disposition: form-data; name="seats"\r\n\r\nA2\r\n--x--\r\n'],
        ['text/plain', '{"seats": ["A2"]}'],
        ['text/plain;charset=UTF-8', '{"seats": ["A2"]}'],
        [undefined, new TextEncoder().encode('{"seats": ["A2"]}')],
      ]
      const send = (method: string, path: string, type: string | undefined, body?: string | Uint8Array<ArrayBuffer>) =>
        app.request(path, {
          method,
          headers: { 'anteroom-admission': token, 'idempotency-key': `types-${ctx.seq}-abcdef`, ...(type ? { 'content-type': type } : {}) },
          body,
        })
      for (const [type, body] of bodies) {
        for (const [method, path] of [
          ['POST', `/events/${event}/holds`],
          ['POST', `/holds/${hold}/confirm`],
          ['DELETE', `/holds/${hold}`],
        ] as const) {
          const res = await send(method, path, type, body)
          expect(res.status, `${method} ${path} ${type}`).toBe(415)
          const answer = (await res.json()) as { error: { code: string; message: string; accepted: string[] } }
          expect(answer.error).toMatchObject({ code: 'ERR_UNSUPPORTED_MEDIA_TYPE', accepted: ['application/json'] })
          expect(answer.error.message).toMatch(/Content-Type: application\/json/)
        }
      }
      // A POST says application/json even without a body; a form-typed empty POST is refused too.
      for (const type of [undefined, 'application/x-www-form-urlencoded', 'text/plain']) {
        expect((await send('POST', `/holds/${hold}/confirm`, type)).status, `empty ${type}`).toBe(415)
      }
      expect(payments.charges).toHaveLength(0)
      expect(await statuses(event)).toMatchObject({ A1: 'held', A2: 'free' })
      // JSON with a charset parameter is JSON; a DELETE without a body needs no type at all.
      expect((await send('POST', `/events/${event}/holds`, 'Application/JSON; charset=utf-8', '{"seats": ["A2"]}')).status).toBe(201)
      expect((await send('POST', `/holds/${hold}/confirm`, 'application/json')).status).toBe(200)
      expect(payments.charges).toHaveLength(1)
    })

    it('a body over the limit gets a 413 without being read; the largest hold there can be fits', async () => {
      const { app, event } = await setup()
      const token = await tokenFor('v-big')
      const headers = { 'anteroom-admission': token, 'content-type': 'application/json' }
      const tooMany = JSON.stringify({ seats: Array.from({ length: 10_000 }, (_, i) => `A${i}`) })
      for (const [method, path] of [
        ['POST', `/events/${event}/holds`],
        ['DELETE', `/holds/00000000-0000-4000-8000-000000000000`],
      ] as const) {
        const res = await app.request(path, { method, headers, body: tooMany })
        expect(res.status, method).toBe(413)
        expect(await res.json()).toEqual({
          error: { code: 'ERR_BODY_TOO_LARGE', message: `The body may be at most ${MAX_BODY_BYTES} bytes`, limit: MAX_BODY_BYTES },
        })
      }
      // An 8 MiB stream: the origin stops pulling a little after the limit.
      let pulled = 0
      const chunk = new TextEncoder().encode(`{"seats": [${'"A1",'.repeat(204)}`.padEnd(1024, ' '))
      const stream = new ReadableStream<Uint8Array>({
        pull(controller) {
          if (pulled >= 8 * 1024 * 1024) return controller.close()
          pulled += chunk.byteLength
          controller.enqueue(chunk)
        },
      })
      const res = await app.request(`/events/${event}/holds`, { method: 'POST', headers, body: stream, duplex: 'half' } as RequestInit)
      expect(res.status).toBe(413)
      expect(pulled).toBeGreaterThan(MAX_BODY_BYTES)
      expect(pulled).toBeLessThanOrEqual(MAX_BODY_BYTES + 3 * chunk.byteLength)
      // 50 seats of 16 characters, pretty-printed, is well under the limit: judged on its seats, not its size.
      const largest = JSON.stringify({ seats: Array.from({ length: 50 }, (_, i) => `A${String(i).padStart(15, '0')}`) }, null, 4)
      expect(largest.length).toBeLessThan(MAX_BODY_BYTES)
      const judged = await call(app, 'POST', `/events/${event}/holds`, { token, body: largest })
      expect(judged.status).toBe(400)
      expect(judged.body.error.message).toMatch(/at most 4 seats in one hold, got 50/)
      expect(Object.values(await statuses(event)).every((s) => s === 'free')).toBe(true)
    })

    it('over HTTP: a Content-Length over the limit, or a chunked body passing it, is answered 413 before the client has finished sending', async () => {
      const { app, event } = await setup()
      const token = await tokenFor('v-wire')
      const server = await listen(app)
      try {
        const head = (framing: string) =>
          `POST /events/${event}/holds HTTP/1.1\r\nHost: origin.test\r\nAnteroom-Admission: ${token}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`
        // Announces 8 MiB and sends none of it: the answer cannot have waited for the body.
        const declared = await rawRequest(server.port, head(`Content-Length: ${8 * 1024 * 1024}`), async () => {})
        expect(declared).toMatchObject({ status: 413, body: { error: { code: 'ERR_BODY_TOO_LARGE' } } })
        expect(declared.headers.connection).toBe('close')
        // Chunked, one KiB at a time, past the limit, and never finished (no last chunk).
        const piece = ' '.repeat(1024)
        const chunked = await rawRequest(server.port, head('Transfer-Encoding: chunked'), async (write) => {
          await write(`${(1 + piece.length).toString(16)}\r\n{${piece}\r\n`)
          for (let sent = 1024; sent <= MAX_BODY_BYTES + 2048; sent += 1024) await write(`${piece.length.toString(16)}\r\n${piece}\r\n`)
        })
        expect(chunked).toMatchObject({ status: 413, body: { error: { code: 'ERR_BODY_TOO_LARGE', limit: MAX_BODY_BYTES } } })
        expect(chunked.headers.connection).toBe('close')
        // A chunked body under the limit, in several chunks, is read whole and served.
        const json = JSON.stringify({ seats: ['C1', 'C2'] })
        const fine = await rawRequest(server.port, head('Transfer-Encoding: chunked'), async (write) => {
          for (const part of [json.slice(0, 5), json.slice(5, 12), json.slice(12)])
            await write(`${part.length.toString(16)}\r\n${part}\r\n`)
          await write('0\r\n\r\n')
        })
        expect(fine).toMatchObject({ status: 201, body: { hold: { seats: ['C1', 'C2'] } } })
        // And a form post over the wire is a 415.
        const form = 'seats=A1'
        const refused = await rawRequest(
          server.port,
          head(`Content-Length: ${form.length}`).replace('application/json', 'application/x-www-form-urlencoded'),
          (write) => write(form),
        )
        expect(refused).toMatchObject({ status: 415, body: { error: { code: 'ERR_UNSUPPORTED_MEDIA_TYPE' } } })
      } finally {
        await server.close()
      }
      expect(await statuses(event)).toMatchObject({ A1: 'free', C1: 'held', C2: 'held' })
    })
  })

  describe('open admissions (issued by the edge without its store)', () => {
    it('each open-admitted visitor is their own identity: their own holds, their own 4-seat limit, logged as open', async () => {
      const { app, event, payments, logs } = await setup()
      const a = await openTokenFor('open-a')
      const b = await openTokenFor('open-b')
      const heldA = await call(app, 'POST', `/events/${event}/holds`, { token: a, body: { seats: ['A1', 'A2'] } })
      const heldB = await call(app, 'POST', `/events/${event}/holds`, { token: b, body: { seats: ['B1', 'B2'] } })
      expect([heldA.status, heldB.status]).toEqual([201, 201])
      const [holdA, holdB] = [heldA.body.hold.id as string, heldB.body.hold.id as string]
      // Neither can confirm or release the other's hold.
      for (const [token, other] of [
        [b, holdA],
        [a, holdB],
      ] as const) {
        const confirm = await call(app, 'POST', `/holds/${other}/confirm`, { token, headers: { 'idempotency-key': `steal-${other}` } })
        expect(confirm).toMatchObject({ status: 404, body: { error: { code: 'ERR_NOT_FOUND' } } })
        expect((await call(app, 'DELETE', `/holds/${other}`, { token })).status).toBe(404)
      }
      expect(payments.charges).toHaveLength(0)
      expect(await statuses(event)).toMatchObject({ A1: 'held', A2: 'held', B1: 'held', B2: 'held' })
      // Each has a limit of their own: four seats apiece, not four between them.
      for (const [token, row] of [
        [a, 'A'],
        [b, 'B'],
      ] as const) {
        expect((await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: [`${row}3`, `${row}4`] } })).status).toBe(201)
        const fifth = await call(app, 'POST', `/events/${event}/holds`, { token, body: { seats: [`${row}5`] } })
        expect(fifth).toMatchObject({ status: 409, body: { error: { code: 'ERR_VISITOR_LIMIT', limit: 4, current: 4 } } })
      }
      // Their own holds they can pay for and release.
      const paid = await call(app, 'POST', `/holds/${holdA}/confirm`, { token: a, headers: { 'idempotency-key': `open-pay-${holdA}` } })
      expect(paid).toMatchObject({ status: 200, body: { booked: true } })
      expect(await call(app, 'DELETE', `/holds/${holdB}`, { token: b })).toMatchObject({ status: 200, body: { released: ['B1', 'B2'] } })
      const openHolds = logs.filter((l) => l.log === 'hold_open_admission')
      expect(openHolds).toHaveLength(4)
      expect(openHolds.map((l) => l.hold)).toEqual(expect.arrayContaining([holdA, holdB]))
    })

    it('a token without the claim is not open; the verifier says which is which', async () => {
      const { app, event, logs } = await setup()
      const counted = await tokenFor('v-counted')
      expect((await call(app, 'POST', `/events/${event}/holds`, { token: counted, body: { seats: ['D1'] } })).status).toBe(201)
      expect(logs.filter((l) => l.log === 'hold_open_admission')).toEqual([])
      const verify = admissionVerifier({
        jwksUrl: 'http://127.0.0.1:1/.well-known/jwks.json',
        issuer: 'anteroom',
        audience: 'origin',
        keys: createLocalJWKSet(ctx.tokens.jwks()),
      })
      expect(await verify(counted)).toMatchObject({ ok: true, admission: { sub: 'v-counted', open: false } })
      expect(await verify(await openTokenFor('v-open'))).toMatchObject({ ok: true, admission: { sub: 'v-open', open: true } })
      // Only the JSON value true makes an admission open.
      const now = Math.floor(Date.now() / 1000)
      for (const open of [false, 'true', 1]) {
        const token = await new SignJWT({ room: 'sale', arr: 0, open })
          .setProtectedHeader({ alg: 'ES256', kid: ctx.signingKey.kid })
          .setIssuer('anteroom')
          .setAudience('origin')
          .setSubject('v-odd')
          .setJti('j')
          .setIssuedAt(now)
          .setExpirationTime(now + 60)
          .sign(ctx.signingKey.privateKey)
        expect(await verify(token), String(open)).toMatchObject({ ok: true, admission: { open: false } })
      }
      expect(() => admissionVerifier({ jwksUrl: 'http://x', issuer: 'i', audience: 'a', openAdmissions: 'deny' as 'refuse' })).toThrow(
        /openAdmissions/,
      )
    })

    it('an origin that refuses open admissions answers 401 ERR_ADMISSION_OPEN and changes nothing; counted ones pass', async () => {
      const { app, event } = await setup({ openAdmissions: 'refuse' })
      const open = await openTokenFor('open-refused')
      for (const [method, path, body] of [
        ['POST', `/events/${event}/holds`, { seats: ['A1'] }],
        ['GET', `/events/${event}/seats`, undefined],
      ] as const) {
        const r = await call(app, method, path, { token: open, body })
        expect(r.status, method).toBe(401)
        expect(r.body.error.code).toBe('ERR_ADMISSION_OPEN')
        expect(r.body.error.message).toMatch(/open admission/)
      }
      const res = await app.request(`/events/${event}/seats`, { headers: { 'anteroom-admission': open } })
      expect(res.headers.get('www-authenticate')).toBe('Anteroom error="ERR_ADMISSION_OPEN"')
      expect(Object.values(await statuses(event)).every((s) => s === 'free')).toBe(true)
      const counted = await tokenFor('v-counted-2')
      expect((await call(app, 'POST', `/events/${event}/holds`, { token: counted, body: { seats: ['A1'] } })).status).toBe(201)
    })
  })
}
