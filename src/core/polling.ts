// When a waiting visitor polls next. Visitors who arrive together would otherwise poll together, a
// refresh apart, for as long as they wait: the store's load comes in spikes, and since grants happen
// only on polls and the pace keeps at most a second of credit (core/admission.ts), the line loses the
// pace between the spikes (an opening sale, everybody arriving at once, got 0.77 of its rate this way).
// So each place in line has its own phase within the refresh, from its arrival, and its visitor polls
// at that phase, every refreshSeconds. Arrivals are consecutive µs when many come at once, and the
// phase is a Weyl sequence over them (the fractional part of arrival × the golden ratio), which spreads
// consecutive arrivals evenly over the refresh. The status JSON says when (`nextPollSeconds`), the
// queue page follows it, and the wait shown ends on one of these polls (core/eta.ts).

const GOLDEN = 0.6180339887498949
/** Arrivals are reduced modulo this before the multiplication, so the fraction keeps its precision. */
const PHASE_MODULUS = 2 ** 20

/** The phase of a place in line, a fraction of the refresh in [0, 1). */
export function pollPhase(arrivalUs: number): number {
  const x = (((Math.floor(arrivalUs) % PHASE_MODULUS) + PHASE_MODULUS) % PHASE_MODULUS) * GOLDEN
  return x - Math.floor(x)
}

/**
 * How long until the visitor whose place has this arrival should poll again, ms: the first time at
 * their phase (on the store's clock, `nowMs`) at least half a refresh from now. A visitor who keeps
 * to it polls every refresh; the first poll after joining comes within half a refresh to one and a
 * half, so that everybody's polls are spread over the refresh from the start.
 */
export function nextPollMs(arrivalUs: number, nowMs: number, refreshMs: number): number {
  const offset = pollPhase(arrivalUs) * refreshMs
  const earliest = nowMs + refreshMs / 2
  const k = Math.ceil((earliest - offset) / refreshMs)
  return Math.round(offset + k * refreshMs - nowMs)
}

/**
 * The end of a wait of `ms` for a visitor whose next poll is `nextMs` away: they learn of their grant
 * at the first of their polls at or after it, one refresh apart.
 */
export function onPoll(ms: number, nextMs: number, refreshMs: number): number {
  if (ms <= nextMs) return nextMs
  return nextMs + Math.ceil((ms - nextMs) / refreshMs - 1e-9) * refreshMs
}
