// Keeps Node's next-tick objects on V8's fast path for the life of the process.
//
// Node makes an object for every process.nextTick, `{ [asyncId], [triggerAsyncId], callback, args }`
// (internal/process/task_queues.js), several for each HTTP request. V8 finds such an object's shape
// by following transitions from an empty literal's shape, and holds each transition only weakly: a
// full garbage collection that finds no next-tick object alive drops them, and the next object gets a
// new shape. After a few full collections the literal's inline cache has seen too many shapes and gives
// up for good, and from then on every next-tick object is made in V8's runtime: a hello-world and an
// edge that had run for a while spent 5-7% of their CPU in Runtime_DefineKeyedOwnPropertyInLiteral
// and JSObject::MigrateToMap (perf), and a bare nextTick cost 2.7 times as much after twelve
// collections. Which processes it struck, and when, was luck: it is much of why two identical edge
// processes differed by a tenth. One next-tick object kept alive keeps its shape and the transitions to
// it alive (test/tick-shapes.test.ts); it is replaced every second, so that it is always of the shape
// that new objects get.
import { executionAsyncResource } from 'node:async_hooks'

/** The last next-tick object kept: the resource of the callback keep() runs in. */
// biome-ignore lint/correctness/noUnusedVariables: kept alive, never read
let kept: object | undefined

function keep(): void {
  kept = executionAsyncResource()
}

function keepNext(): void {
  process.nextTick(keep)
}

let timer: ReturnType<typeof setInterval> | undefined

/** Whether this process keeps a next-tick object (the Node edge does from buildEdge on). */
export function keepsTickShapes(): boolean {
  return timer !== undefined
}

/** Keeps one next-tick object alive from now on, renewed every second; once per process (later calls change nothing). */
export function keepTickShapes(): void {
  if (timer !== undefined) return
  keepNext()
  timer = setInterval(keepNext, 1000)
  timer.unref()
}
