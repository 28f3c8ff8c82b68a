// Verdicts of a simulated sale: pure functions over the recorded timelines, so tests can feed them
// synthetic timelines. All times here are real milliseconds since the start of the run; limits are the
// limits the edge was actually given (already scaled by the time compression). They count only what is
// certain (a grant lies between two polls: see sim/verdicts/records.ts).
//
// One module a topic under sim/verdicts/, re-exported here: records (what a sale records, the verdict),
// caps (active sessions, admission rates), fifo (order, places lost, abandoned slots), outcomes (seats,
// waits, ETA), faults (recovery, extra wait), scheduled (the draw, network cap), sold-out.
export * from './verdicts/caps.js'
export * from './verdicts/faults.js'
export * from './verdicts/fifo.js'
export * from './verdicts/outcomes.js'
export * from './verdicts/records.js'
export * from './verdicts/scheduled.js'
export * from './verdicts/sold-out.js'
