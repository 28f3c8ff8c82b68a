// What an origin may tell the edge in its response: `Anteroom-Command: end-session` ends the
// visitor's session the moment the origin is done with them (a confirmed purchase), as Cloudflare's
// revoke command does. The header never reaches the visitor (forward-headers.ts drops it); a room
// acts on it only with originCommands: 'end-session'. The session ends in the store (finishSession:
// the slot frees at once, every edge refuses the token within a second), this edge refuses the
// token at once, and the response carries the visitor's cookies away. The visitor is not kept out:
// coming back, they join the line at the back.
import { type Lane, lineOf } from '../core/access.js'
import { isAnteroomError } from '../core/errors.js'
import type { RoomSettings } from '../core/settings.js'
import type { OriginResponse } from '../ports/origin.js'
import type { Admitted } from './admission.js'
import { admissionCookieName, queueCookieName, serializeCookie } from './cookies.js'
import type { EdgeContext } from './edge-context.js'
import { COMMAND_HEADER } from './forward-headers.js'
import { meteredCall } from './metrics.js'
import type { Incoming } from './request.js'

/** The commands an origin may send (each is also a value of the room's originCommands); anything else is logged and ignored. */
export const ORIGIN_COMMAND_NAMES: readonly string[] = ['end-session']

/** After the end, tokens from before may still be valid for a session; a minute more for clocks. */
const KEEP_EXTRA_MS = 60_000

/** The commands in the origin's response, lower-case, in order (the header may be a list or repeated). */
export function commandsIn(headers: OriginResponse['headers']): string[] {
  const value = headers[COMMAND_HEADER]
  if (value === undefined) return []
  return (Array.isArray(value) ? value.join(',') : value)
    .split(',')
    .map((c) => c.trim().toLowerCase())
    .filter((c) => c.length > 0)
}

/** A command as it may appear in the log: a plain word, or only its length (the origin may send anything). */
function printable(command: string): string {
  return /^[a-z0-9_-]{1,40}$/.test(command) ? command : `(${command.length} characters)`
}

/**
 * Carries out the origin's commands for one response; returns the cookies the response sets: the
 * admission's own (a new or renewed one), or, once the session ended, the ones that clear it.
 */
export async function carryOutCommands(
  edge: EdgeContext,
  headers: OriginResponse['headers'],
  room: RoomSettings | undefined,
  admitted: Admitted | undefined,
  req: Incoming,
): Promise<readonly string[]> {
  const cookies = admitted?.cookies ?? []
  const requestId = edge.requestId(req.context)
  const commands = commandsIn(headers)
  if (commands.length === 0) return cookies
  let end = false
  for (const command of commands) {
    if (!ORIGIN_COMMAND_NAMES.includes(command)) {
      edge.log('origin_command_unknown', { room: room?.id ?? null, requestId, command: printable(command) })
    } else if (room === undefined || admitted === undefined) {
      edge.log('origin_command_ignored', { room: room?.id ?? null, requestId, command, reason: 'no admission on this path' })
    } else if (room.originCommands !== command) {
      edge.log('origin_command_ignored', {
        room: room.id,
        requestId,
        command,
        reason: `the room's originCommands is ${room.originCommands}`,
      })
    } else end = true
  }
  if (!end || room === undefined || admitted === undefined) return cookies
  await endSession(edge, room, admitted.visitor, requestId, admitted.lane)
  const clear = (name: string) => serializeCookie(name, '', { maxAgeSeconds: 0, secure: req.secure })
  return [clear(admissionCookieName(room.id)), clear(queueCookieName(room.id))]
}

/**
 * Ends the session in the store and on this edge (a separate lane's in the lane's line, core/access.ts);
 * a store away does not keep the response from the visitor.
 */
async function endSession(edge: EdgeContext, room: RoomSettings, visitor: string, requestId: string, lane?: Lane): Promise<void> {
  let at = edge.now()
  const line = lineOf(room, lane)
  try {
    const ended = await meteredCall(edge.deps.meters, 'finish', () =>
      edge.deps.queue.finishSession({
        room: line.id,
        visitor,
        keepMs: room.sessionDurationSeconds * 1000 + KEEP_EXTRA_MS,
        now: edge.storeNow(),
      }),
    )
    at = ended.at
    edge.log('origin_command', { room: room.id, requestId, command: 'end-session', active: ended.active })
  } catch (err) {
    // The origin has done its part (a purchase): the visitor gets its answer whatever the store says.
    // The session then runs out on its own; this edge still refuses the token, the cookies still go.
    edge.log('origin_command_failed', {
      room: room.id,
      requestId,
      command: 'end-session',
      error: isAnteroomError(err) ? err.code : 'unexpected',
    })
  }
  edge.deps.rooms.noteEnded(line.id, visitor, at)
}
