// Undoes a side effect of loading ioredis that slows every string method call in the process.
//
// ioredis 6 defines `class VerbatimString extends String` (built/resp/verbatim-string.js) when it is
// loaded. In V8 that leaves String.prototype with dictionary-mode ("slow") properties, and optimized
// code then finds `slice`, `charCodeAt`, `indexOf` ... through the generic property-load stub rather
// than an inline cache. In a profile of an edge serving queued polls that stub was the largest single
// symbol (5.5% of the samples), called from the cookie MAC, the queue-token check and the poll's answer.
// Loading a method through an object whose prototype is String.prototype, often enough, makes V8 turn
// the prototype back to fast properties (seen with %HasFastProperties; test/fast-strings.test.ts).

/** Loads a String method through String.prototype's heirs until V8 gives the prototype fast properties again. */
export function keepStringMethodsFast(): void {
  let sink = 0
  for (let i = 0; i < 100; i++) sink += typeof Object.create(String.prototype).slice === 'function' ? 1 : 0
  if (sink !== 100) throw new Error('String.prototype.slice is missing')
}
