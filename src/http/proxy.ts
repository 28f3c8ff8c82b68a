// Forwarding to the origin: the canonical path and query, the headers the edge owns set by the edge,
// the body streamed up to the limit; the origin's answer with the visitor's cookies and cache rules,
// after the edge carried out what the origin told it (origin-command.ts).
import type { Context } from 'hono'
import { AnteroomError } from '../core/errors.js'
import type { RoomSettings } from '../core/settings.js'
import type { OriginResponse } from '../ports/origin.js'
import type { Admitted } from './admission.js'
import { limitedBody } from './body.js'
import type { EdgeContext } from './edge-context.js'
import { COMMAND_HEADER, requestHeadersForOrigin, responseHeadersForVisitor } from './forward-headers.js'
import { carryOutCommands } from './origin-command.js'
import type { Incoming } from './request.js'
import { edgeError } from './responses.js'

function tooLarge(edge: EdgeContext): AnteroomError {
  return new AnteroomError('ERR_BODY_TOO_LARGE', `The request body is larger than ${edge.maxBodyBytes} bytes.`)
}

/**
 * Sends the request to the origin, with the visitor's admission when a room protects the path
 * (`room` and `admitted` are undefined when none does).
 */
export async function forward(
  edge: EdgeContext,
  c: Context,
  req: Incoming,
  room: RoomSettings | undefined,
  admitted: Admitted | undefined,
): Promise<Response> {
  const body = limitedBody(c.req.raw, edge.maxBodyBytes)
  if (body.tooLarge) throw tooLarge(edge)
  const headers = requestHeadersForOrigin(c.req.raw.headers, {
    clientIp: edge.deps.clientIp?.(c),
    proto: req.proto,
    host: req.authority,
    admissionToken: admitted?.token,
  })
  let res: OriginResponse
  try {
    res = await edge.deps.origin.forward({ method: c.req.method, path: req.originPath, headers, body: body.stream, signal: body.signal })
  } catch (err) {
    // A visitor admitted on this very request keeps their admission even if the origin failed.
    const out = edgeError(edge, c, body.overflowed() ? tooLarge(edge) : err)
    for (const cookie of admitted?.cookies ?? []) out.headers.append('set-cookie', cookie)
    return out
  }
  // Statuses a Response cannot carry (1xx) are the origin misbehaving: report it as unreachable.
  if (res.status < 200 || res.status > 599) {
    return edgeError(edge, c, new AnteroomError('ERR_ORIGIN_UNREACHABLE', `The origin answered with status ${res.status}`))
  }
  // Most responses carry no command: their cookies are the admission's (carryOutCommands answers the same).
  const cookies =
    res.headers[COMMAND_HEADER] === undefined ? (admitted?.cookies ?? []) : await carryOutCommands(edge, res.headers, room, admitted, req)
  return new Response(res.body, { status: res.status, headers: responseHeadersForVisitor(res.headers, cookies, room !== undefined) })
}
