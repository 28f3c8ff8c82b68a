// The proxy end to end, streaming: large bodies pass whole both ways, and are streamed rather than buffered; clients that hang up do no harm.
import { createHash } from 'node:crypto'
import { createServer as createHttpServer, request as httpRequest, type Server } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { UndiciOrigin } from '../src/adapters/undici/origin.js'
import { createEdgeApp } from '../src/http/app.js'
import {
  ADMISSION_COOKIE,
  admit,
  deferred,
  type Echo,
  edge,
  json,
  main,
  origin,
  type Reply,
  send,
  streamBigClosed,
  streamOut,
  useProxyEdge,
  within,
} from './support/proxy-edge.js'
import { type Served, serveOnFreePort } from './support/serve.js'

useProxyEdge()

/** A raw origin that reports when the first request bytes arrive, with an edge in front. */
let uploadOrigin: Server
let uploadOriginPort: number
let uploadFirstBytes = deferred()
let uploadProxy: UndiciOrigin
let upload: Served

beforeAll(async () => {
  uploadOrigin = createHttpServer((req, res) => {
    const hash = createHash('sha256')
    let bytes = 0
    req.on('data', (c: Buffer) => {
      if (bytes === 0) uploadFirstBytes.resolve()
      bytes += c.length
      hash.update(c)
    })
    req.on('end', () => {
      res.setHeader('content-type', 'application/json')
      res.end(JSON.stringify({ bytes, sha256: hash.digest('hex') }))
    })
  })
  await new Promise<void>((r) => uploadOrigin.listen(0, '127.0.0.1', r))
  uploadOriginPort = (uploadOrigin.address() as { port: number }).port
  uploadProxy = new UndiciOrigin({ url: `http://127.0.0.1:${uploadOriginPort}` })
  upload = await serveOnFreePort(createEdgeApp({ ...edge.deps, origin: uploadProxy }).fetch)
})

afterAll(async () => {
  await upload?.close()
  await uploadProxy?.close()
  await new Promise<void>((r) => {
    if (uploadOrigin === undefined) r()
    else {
      uploadOrigin.closeAllConnections()
      uploadOrigin.close(() => r())
    }
  })
})

describe('streaming', () => {
  it('passes a large chunked POST body to the origin whole', async () => {
    const size = 12 * 1024 * 1024
    const before = origin.requests.length
    const reply = await new Promise<Reply>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: main.port,
          method: 'POST',
          path: '/upload',
          agent: false,
          headers: { 'content-type': 'application/octet-stream' }, // no length: chunked
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
          )
        },
      )
      req.on('error', reject)
      const chunk = Buffer.alloc(64 * 1024, 0x61)
      let sent = 0
      const pump = () => {
        while (sent < size) {
          sent += chunk.length
          if (!req.write(chunk)) {
            req.once('drain', pump)
            return
          }
        }
        req.end()
      }
      pump()
    })
    expect(reply.status).toBe(200)
    const seen = json<Echo>(reply.body)
    expect(seen.method).toBe('POST')
    expect(seen.url).toBe('/upload')
    expect(seen.bodyLength).toBe(size)
    expect(origin.requests.length).toBe(before + 1)
  })

  it('passes a large POST with Content-Length and Expect: 100-continue (as curl sends it) to an admitted visitor', async () => {
    const token = await admit()
    const body = Buffer.alloc(6 * 1024 * 1024, 0x62)
    const reply = await new Promise<Reply>((resolve, reject) => {
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port: main.port,
          method: 'PUT',
          path: '/shop/upload',
          agent: false,
          headers: {
            'content-length': String(body.length),
            expect: '100-continue',
            cookie: `${ADMISSION_COOKIE}=${token}`,
          },
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () =>
            resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
          )
        },
      )
      req.on('error', reject)
      req.on('continue', () => req.end(body))
    })
    expect(reply.status).toBe(200)
    const seen = json<Echo>(reply.body)
    expect(seen.bodyLength).toBe(body.length)
    expect(seen.headers['anteroom-admission']).toBe(token)
    expect(seen.headers.expect).toBeUndefined()
  })

  it('streams the request body: the origin gets the first bytes before the client sends the rest', async () => {
    uploadFirstBytes = deferred()
    const first = Buffer.alloc(64 * 1024, 0x31)
    const rest = Buffer.alloc(8 * 1024 * 1024, 0x32)
    const expected = createHash('sha256').update(first).update(rest).digest('hex')
    let originHadFirstBytes: boolean | undefined
    const reply = await new Promise<Reply>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: upload.port, method: 'POST', path: '/in', agent: false }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks) }),
        )
      })
      req.on('error', reject)
      req.flushHeaders()
      req.write(first)
      // The rest goes only once the origin saw the first bytes (or after 3 s, failing the test).
      void within(uploadFirstBytes.promise, 3000).then((r) => {
        originHadFirstBytes = r !== 'timeout'
        req.end(rest)
      })
    })
    expect(originHadFirstBytes).toBe(true)
    expect(reply.status).toBe(200)
    expect(json(reply.body)).toEqual({ bytes: first.length + rest.length, sha256: expected })
  })

  it('streams the response body: the client gets the first chunk before the origin has finished', async () => {
    streamOut.release = deferred<'signal'>()
    streamOut.finished = false
    streamOut.releasedBy = ''
    let finishedWhenFirstChunkArrived: boolean | undefined
    const text = await new Promise<string>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port: main.port, path: '/stream-out', agent: false }, (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (c: string) => {
          if (finishedWhenFirstChunkArrived === undefined) {
            finishedWhenFirstChunkArrived = streamOut.finished
            streamOut.release.resolve('signal')
          }
          body += c
        })
        res.on('end', () => resolve(body))
        res.on('error', reject)
      })
      req.on('error', reject)
      req.end()
    })
    expect(finishedWhenFirstChunkArrived).toBe(false)
    expect(streamOut.releasedBy).toBe('signal')
    expect(text).toBe('first chunk\nthe rest\n')
  })

  it('survives clients that hang up mid-response, and keeps serving', async () => {
    for (let i = 0; i < 5; i++) {
      await new Promise<void>((resolve, reject) => {
        const req = httpRequest({ host: '127.0.0.1', port: main.port, path: '/stream-big', agent: false }, (res) => {
          let got = 0
          res.on('data', (c: Buffer) => {
            got += c.length
            if (got > 256 * 1024 * (i + 1)) {
              req.destroy()
              resolve()
            }
          })
          res.on('end', () => reject(new Error(`the whole body came (status ${res.statusCode})`)))
        })
        req.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' ? undefined : reject(err)))
        req.end()
      })
    }
    // Each hang-up reached the origin: the edge closed every one of its responses.
    expect(streamBigClosed).toHaveLength(5)
    await Promise.all(streamBigClosed)
    const after = await send(main.port, { path: '/after-abort' })
    expect(after.status).toBe(200)
    expect(json<Echo>(after.body).url).toBe('/after-abort')
  })
})
