// Run by test/tick-shapes.test.ts in a child process with --expose-gc and --allow-natives-syntax:
// prints the V8 map (shape) of a next-tick object before and after two full collections, three times,
// with the process's next-tick objects kept (src/adapters/node/tick-shapes.ts) or not.
// V8's %DebugPrint writes ' - map: 0x...' lines to stdout; the test compares them.
import { executionAsyncResource } from 'node:async_hooks'
import { keepTickShapes } from '../../src/adapters/node/tick-shapes.js'

const mode = process.argv[2]
if (mode === 'kept') keepTickShapes()

// The natives are not TypeScript: the probe reaches them through a function made at run time.
const debugPrint = new Function('o', '%DebugPrint(o)') as (o: object) => void
const gc = (globalThis as { gc?: () => void }).gc
if (gc === undefined) throw new Error('run with --expose-gc')

let last: object | undefined
function grab(): void {
  last = executionAsyncResource()
}
/** A new next-tick object's map is printed; the object itself is not kept. */
function printFreshTick(): Promise<void> {
  return new Promise((resolve) => {
    process.nextTick(grab)
    setTimeout(() => {
      debugPrint(last as object)
      last = undefined
      resolve()
    }, 5)
  })
}

for (let round = 0; round < 3; round++) {
  await printFreshTick()
  gc()
  gc()
  await printFreshTick()
}
process.exit(0)
