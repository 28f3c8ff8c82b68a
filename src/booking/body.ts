// Request bodies at the booking origin: JSON only, and small. The largest body any route needs is a
// hold of 50 seat names (about 1 KiB even pretty-printed), so anything over MAX_BODY_BYTES is refused
// with a 413 before it is read (Content-Length), or as soon as the running count of a chunked body
// passes the limit: the origin never holds more than MAX_BODY_BYTES of a body in memory. A body with a
// Content-Length is read in one piece (arrayBuffer: no web stream on Node); a chunked one as a stream.
//
// Every POST must say Content-Type: application/json, with or without a body, and so must a PUT,
// PATCH or DELETE that has a body. A cross-site HTML form can only send
// application/x-www-form-urlencoded, multipart/form-data or text/plain, and a cross-site fetch with
// any other type needs a CORS preflight the origin never grants; so no other site can make a
// visitor's browser post here, whatever the cookie policy.
import type { Context, MiddlewareHandler } from 'hono'
import { AnteroomError, type AnteroomErrorOptions, type ErrorCode } from '../core/errors.js'
import { renderError } from '../http/errors.js'

/** The most bytes a request body may have at the booking origin. */
export const MAX_BODY_BYTES = 4096
export const JSON_MEDIA_TYPE = 'application/json'

export type BodyEnv = { Variables: { body: Uint8Array } }

const EMPTY: Uint8Array = new Uint8Array(0)

function refuse(c: Context, code: ErrorCode, message: string, options?: AnteroomErrorOptions): Response {
  // The rest of an unread body is not wanted: the connection is not reused after this answer.
  c.header('connection', 'close')
  return renderError(c, new AnteroomError(code, message, options), { json: true })
}

/** Reads at most limit bytes; undefined as soon as the body turns out to be longer. */
async function readAtMost(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array | undefined> {
  const reader = body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      size += value.byteLength
      // Not cancelled: on Node that would reset the socket before the 413 is written. The server
      // discards the rest, or closes the connection after the answer (connection: close).
      if (size > limit) return undefined
      chunks.push(value)
    }
  } finally {
    reader.releaseLock()
  }
  if (chunks.length === 1) return chunks[0] as Uint8Array
  const out = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk, at)
    at += chunk.byteLength
  }
  return out
}

/**
 * Hono middleware: refuses non-JSON bodies (415 ERR_UNSUPPORTED_MEDIA_TYPE) and bodies over
 * maxBytes (413 ERR_BODY_TOO_LARGE), and leaves the body's bytes in c.get('body').
 */
export function jsonBodies(maxBytes = MAX_BODY_BYTES): MiddlewareHandler<BodyEnv> {
  return async function jsonBodies(c, next) {
    const method = c.req.method
    if (method === 'GET' || method === 'HEAD' || method === 'OPTIONS') return next()
    const type = c.req.header('content-type')
    const isJson = type !== undefined && (type.split(';')[0] ?? '').trim().toLowerCase() === JSON_MEDIA_TYPE
    const chunked = c.req.header('transfer-encoding') !== undefined
    const lengthHeader = chunked ? undefined : c.req.header('content-length')
    if (lengthHeader !== undefined && !/^\d{1,15}$/.test(lengthHeader.trim()))
      return refuse(c, 'ERR_BODY', 'Content-Length must be a number of bytes')
    const declared = lengthHeader === undefined ? undefined : Number(lengthHeader)
    const unsupported = () =>
      refuse(
        c,
        'ERR_UNSUPPORTED_MEDIA_TYPE',
        `The body must be JSON, sent with Content-Type: ${JSON_MEDIA_TYPE}${type === undefined ? '' : `, not ${type.slice(0, 100)}`}`,
        { extra: { accepted: [JSON_MEDIA_TYPE] } },
      )
    // A POST must be JSON even when empty; other methods only when they carry a body.
    if (!isJson && (method === 'POST' || chunked || (declared ?? 0) > 0)) return unsupported()
    const tooLarge = () => refuse(c, 'ERR_BODY_TOO_LARGE', `The body may be at most ${maxBytes} bytes`, { extra: { limit: maxBytes } })
    if (declared !== undefined && declared > maxBytes) return tooLarge()
    let body = EMPTY
    if (declared !== undefined) {
      // A declared length, at most maxBytes: the runtime reads exactly that many bytes (Node's HTTP
      // parser stops at Content-Length), all at once, without a web stream: @hono/node-server reads
      // the socket's chunks straight into one buffer, where c.req.raw.body makes a Request and a
      // ReadableStream first (about a fifth of a doomed claim's CPU). The check after the read only
      // matters in-process, where a Request's body may be longer than its header says.
      if (declared > 0) {
        const read = new Uint8Array(await c.req.raw.arrayBuffer())
        if (read.byteLength > maxBytes) return tooLarge()
        body = read
      }
    } else if (c.req.raw.body !== null) {
      // Chunked, or (in-process only) no length at all: read as it comes, never past maxBytes.
      const read = await readAtMost(c.req.raw.body, maxBytes)
      if (read === undefined) return tooLarge()
      // A body that declared neither a length nor a type (possible only in-process).
      if (!isJson && read.byteLength > 0) return unsupported()
      body = read
    }
    c.set('body', body)
    await next()
  }
}
