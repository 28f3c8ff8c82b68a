// The records a simulated sale keeps of its visitors and of the store (sim/sale/*.ts fills them), and
// the verdict every check returns. All times are real milliseconds since the start of the run.
//
// A visitor's grant (the store moving them from the line to the active set) happens on somebody's poll,
// not necessarily their own; the visitor learns of it at their next poll. So the grant time is only known
// to lie in (lastQueuedSent, admittedReceived]: after the last poll that still answered "queued" was
// sent, and before the poll that answered "admitted" came back. The verdicts use these intervals so that
// they never report a violation the edge did not commit (they count what is certain).

export interface VisitorRecord {
  id: number
  /** When the first request was sent. */
  arrivedAt: number
  /** The server's arrival (µs on the store's clock), from the queue token; undefined if never queued. */
  serverArrival?: number
  /** Send time of the last poll that answered queued, paused or recovering (undefined if admitted at once). */
  lastQueuedSent?: number
  /**
   * Around a store fault (a loss or a failover, see StoreFault): the send time of the last poll that
   * answered while waiting before the fault began (sent and received before it), and of the last one
   * sent after the store was back. The store's memory before and after are compared apart.
   */
  lastQueuedBeforeFault?: number
  lastQueuedAfterFault?: number
  /** Polls answered recovering (the store forgot the room and admits nobody for a while). */
  recoveringPolls?: number
  /** The arrival in the visitor's queue token moved later while they kept polling (their place was lost). */
  movedBack?: number
  /** The first time it moved: when (ms, the poll's send time), by how much (ms), and how long after the visitor's last answer before it. */
  movedBackFirst?: { at: number; byMs: number; gapMs: number }
  /**
   * Every wait this visitor was shown while queued, flat: [received ms, etaSeconds, range low, range
   * high] per answer, NaN where the answer had none.
   */
  estimates?: number[]
  /**
   * The end of the session as far as it is certain: the send time of the request that brought the
   * admission, or the last renewal of it (a new admission cookie), plus the session length.
   */
  sessionEnd?: number
  /** The send time of the request whose answer ended the session (the origin's end-session after a purchase). */
  sessionEndedAt?: number
  /** Send and receive time of the poll that first answered admitted. */
  admittedSent?: number
  admittedReceived?: number
  /** When the answer to the admitted visitor's last request through the edge came back: a request made
   * after half the session renews it, so the session may run until this plus the session length. */
  lastActivityReceived?: number
  /** The visitor stopped polling while waiting (gave up); lastPollSent is their last poll. */
  abandoned: boolean
  lastPollSent?: number
  /** When the answer to that last poll came back. */
  lastPollReceived?: number
  /** The longest gap between two of this visitor's polls while waiting (event-loop stalls show up here). */
  maxGapMs?: number
  /** Seats this visitor bought, and when. */
  tickets: string[]
  boughtAt?: number
  /**
   * A scheduled sale: the visitor's ticket (their id) as last answered; every ticket answered prequeue
   * (a second one after a drop and a rejoin); when the first such answer's poll was sent; and the
   * [ticket, rank] last shown after the opening.
   */
  ticket?: string
  prequeueTickets?: string[]
  joinedAt?: number
  drawShown?: [string, number]
  /** Proofs of work solved before the join, their hashes and real ms, all together. */
  powSolves?: number
  powHashes?: number
  powMs?: number
  /** Joins refused over the network cap (429). */
  refusedJoins?: number
  /** Polls whose queue token had lapsed when answered (the edge took them for a newcomer). */
  lapsedTokens?: number
  /** A scheduled sale, where a wait runs from the opening (arrivedAt): when the first request was sent. */
  requestedAt?: number
  /** A place a bot took (polled like anyone's; it buys nothing). */
  bot?: boolean
  /**
   * A sale of a room linked to its event (--sold-out): when the first answer that said sold_out came
   * back (the visitor then left), and how many answers said all_held (everything held; they kept polling).
   */
  soldOutToldAt?: number
  heldAnswers?: number
  /** The visitor held seats and let them go instead of paying (--release-share). */
  releasedHold?: boolean
}

/** One store-side sample: the edge's own numbers. */
export interface StoreSample {
  /** Real ms, the midpoint of the stats call. */
  t: number
  waiting: number
  active: number
  admittedLastMinute: number
  /** Slots the store keeps for sessions from before a loss (0 without one; undefined when the store does not say). */
  reserved?: number
}

/**
 * A fault of the store during the run, real ms: `start` when it began (the flush sent, the server or
 * primary killed), `end` when the simulator's own connection saw the store answer again.
 */
export interface StoreFault {
  kind: 'flush' | 'restart' | 'failover'
  start: number
  end: number
  /** When visitors were first and last answered recovering after it (receive times). */
  recovering?: [number, number]
  /** Polls answered busy (503: the store away) while the fault lasted, and after it. */
  busy: number
  /** What the fault took, in words (e.g. the primary's port and the replica promoted). */
  note?: string
  /** Visitors admitted before it whose admission was renewed after it (the edge re-registering a session the store forgot). */
  reregistered: number
  /** Of the visitors admitted before it, those still browsing after it (who could re-register). */
  browsingAfter: number
}

/** What the store recorded of its admissions: their times, real ms, ascending (the store's clock). */
export type AdmissionRecord = number[]

export interface Verdict {
  name: string
  ok: boolean
  /** Informational lines have no pass/fail meaning of their own. */
  info?: boolean
  measured: string
  limit: string
  detail: string
}

/** The interval the grant lies in. */
export function grantInterval(v: VisitorRecord): [number, number] | undefined {
  if (v.admittedReceived === undefined) return undefined
  return [v.lastQueuedSent ?? v.arrivedAt, v.admittedReceived]
}
