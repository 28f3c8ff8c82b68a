// The cap on new places per client network per minute (room setting joinsPerNetworkPerMinute; 0, the
// default, is off). Only a join that would take a new place counts: a visitor with a valid queue
// token, or an admitted one, never reaches it, so polls of the line cost nothing more. A join costs
// one store call more (DefenceStore.countJoin), shared by every edge. Beyond the cap the join is
// refused with 429 and Retry-After, nobody's place is touched, and the refusal is counted
// (refusals.ts). The address is the runtime's (EdgeDeps.clientIp: the socket on Node,
// cf-connecting-ip on Cloudflare), never a header the client wrote.
import { AnteroomError, isAnteroomError } from '../core/errors.js'
import { networkOf } from '../core/network.js'
import type { RoomSettings } from '../core/settings.js'
import type { EdgeContext } from './edge-context.js'
import { meteredCall } from './metrics.js'
import type { Incoming } from './request.js'

/** Whether the room caps new places: it has a cap, and its line gives places (a closed room asks nothing; pass-through has no line). */
export function capsJoins(room: RoomSettings): boolean {
  return room.joinsPerNetworkPerMinute > 0 && (room.mode === 'fifo' || room.mode === 'paused')
}

function describeSeconds(s: number): string {
  return s === 1 ? '1 second' : `${s} seconds`
}

/**
 * Counts a new place against the visitor's network, or throws ERR_TOO_MANY_JOINS. An address the
 * runtime did not give, or a store that does not answer, is not capped: the poll that follows
 * meets the same store, and the room's onStoreError applies there.
 */
export async function admitNetwork(edge: EdgeContext, room: RoomSettings, req: Incoming): Promise<void> {
  const network = networkOf(req.client, { v4: room.networkPrefixIPv4, v6: room.networkPrefixIPv6 })
  if (network === undefined) return
  let result: Awaited<ReturnType<EdgeContext['deps']['defence']['countJoin']>>
  try {
    result = await meteredCall(edge.deps.meters, 'join', () =>
      edge.deps.defence.countJoin({ room: room.id, network, limit: room.joinsPerNetworkPerMinute, now: edge.storeNow() }),
    )
  } catch (err) {
    if (!isAnteroomError(err, 'ERR_STORE_UNAVAILABLE')) throw err
    return
  }
  if (result.allowed) return
  edge.deps.refusals.note(room.id, 'network')
  const seconds = Math.max(1, Math.ceil(result.retryAfterMs / 1000))
  throw new AnteroomError(
    'ERR_TOO_MANY_JOINS',
    `Too many people from your network joined this line this minute, so no new place is given to it for now. Please try again in ${describeSeconds(seconds)}.`,
    { retryAfterSeconds: seconds, extra: { retryAfterSeconds: seconds } },
  )
}
