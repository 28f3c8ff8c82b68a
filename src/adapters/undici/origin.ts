// Origin on Node: forwards to the one configured origin through an undici Pool, streaming both ways.
import { Readable } from 'node:stream'
import { errors, Pool } from 'undici'
import { AnteroomError } from '../../core/errors.js'
import type { ForwardRequest, Origin, OriginResponse } from '../../ports/origin.js'

export interface UndiciOriginOptions {
  /** Origin base URL, e.g. http://127.0.0.1:8081. Requests go here and nowhere else. */
  url: string
  connections?: number
  /** How long to wait for response headers, ms. */
  headersTimeout?: number
  /** How long the body may stall between chunks, ms. */
  bodyTimeout?: number
  connectTimeout?: number
}

function isTimeout(err: unknown): boolean {
  return err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError || err instanceof errors.ConnectTimeoutError
}

/** A pull-based web stream over a Node Readable; Readable.toWeb can crash on client aborts (Node 20). */
export function toWebStream(body: Readable): ReadableStream<Uint8Array> {
  const iterator = body[Symbol.asyncIterator]()
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const { value, done } = await iterator.next()
        if (done) controller.close()
        else controller.enqueue(value as Uint8Array)
      } catch (err) {
        controller.error(err)
      }
    },
    cancel() {
      body.destroy()
    },
  })
}

export class UndiciOrigin implements Origin {
  private readonly pool: Pool
  /** A path prefix in the origin URL (http://host/app) goes in front of every forwarded path. */
  private readonly basePath: string

  constructor(options: UndiciOriginOptions) {
    const base = new URL(options.url)
    this.basePath = base.pathname.replace(/\/+$/, '')
    this.pool = new Pool(base.origin, {
      connections: options.connections ?? 128,
      headersTimeout: options.headersTimeout ?? 30_000,
      bodyTimeout: options.bodyTimeout ?? 30_000,
      connect: { timeout: options.connectTimeout ?? 5_000 },
    })
  }

  async forward(request: ForwardRequest): Promise<OriginResponse> {
    let res: Awaited<ReturnType<Pool['request']>>
    try {
      res = await this.pool.request({
        path: this.basePath + request.path,
        method: request.method as 'GET',
        headers: request.headers,
        body: request.body === null ? null : Readable.fromWeb(request.body as import('node:stream/web').ReadableStream),
        signal: request.signal,
      })
    } catch (cause) {
      if (isTimeout(cause)) throw new AnteroomError('ERR_ORIGIN_TIMEOUT', 'The origin did not answer in time', { cause })
      throw new AnteroomError('ERR_ORIGIN_UNREACHABLE', 'The origin could not be reached', { cause })
    }
    const bodyless = request.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304
    if (bodyless) res.body.resume()
    return { status: res.statusCode, headers: res.headers, body: bodyless ? null : toWebStream(res.body) }
  }

  async close(): Promise<void> {
    await this.pool.close()
  }
}
