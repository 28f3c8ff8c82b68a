// Request bodies as schema values: one definition both checks a parsed JSON body (checkBody, readBody:
// the first problem, in the words and with the `field` the apps have always answered) and becomes the
// JSON Schema (2020-12) that the OpenAPI documents show (jsonSchemaOf; core/openapi.ts). A body's
// rules are therefore written once; test/openapi-schemas.test.ts runs both readings over the same bodies.
//
// A problem is told as "<field>: <text>", field being where it is in the body (`items[1].quantity`).
// The few rules JSON Schema cannot say (an item named twice, units summed over a hold) are checked
// here all the same and described in words in the document.
import { AnteroomError, type ErrorCode } from './errors.js'

/** A JSON Schema (2020-12), as plain JSON. */
export type JsonSchema = { [keyword: string]: unknown }

interface Described {
  /** What the document says of the value beyond its type and bounds. */
  description?: string
}

/** A string, of a form when `pattern` is given; anything else is told `wrong`. */
export interface StringNode extends Described {
  type: 'string'
  pattern?: RegExp
  wrong: string
  /** Values read as if the member were left out (the sign-in's name: null or ''). */
  absent?: readonly (string | null)[]
}

/** A whole number from `minimum` (to `maximum`, when given); anything else is told `wrong`. */
export interface IntegerNode extends Described {
  type: 'integer'
  minimum: number
  maximum?: number
  wrong: string
}

export interface ArrayNode extends Described {
  type: 'array'
  items: BodyNode
  /** Not a list, or shorter than minItems, or longer than maxItems when `tooLong` is not given. */
  wrong: string
  minItems?: number
  maxItems?: number
  tooLong?: (max: number, got: number) => string
  /** Two equal elements (strings or numbers), checked once every element passed: the text. */
  unique?: string
  /** Two elements whose member `key` is the same, checked element by element: the text, given that value. */
  uniqueBy?: { key: string; text: (value: string) => string }
}

/** What a rule or a wrong value says: a text for the node itself, or for one of its members. */
export type Said = string | { field: string; text: string }

export interface ObjectNode extends Described {
  type: 'object'
  /** The members, in the order they are checked. */
  properties: Readonly<Record<string, BodyNode>>
  /** Members that must be there; a missing one is told its own `wrong`. */
  required?: readonly string[]
  /** A member not in `properties`: refused with this text, or let through and ignored. */
  unknown: string | { ignored: true }
  /** A value that is not an object. */
  wrong: Said
  /** Rules across members, checked in order once every member passed. */
  rules?: readonly ObjectRule[]
}

/**
 * At least one of the lists `keys` is there and not empty. None there: `missing`; each one there empty:
 * the last of them is told its `empty` text.
 */
export interface SomeRule {
  rule: 'some'
  keys: readonly string[]
  missing: Said
  empty: Readonly<Record<string, string>>
}

/**
 * The lists' lengths (or, with `sum`, a member of their elements added up) come to at most `max`;
 * otherwise the member `field` is told `text(max, total)`. JSON Schema cannot say it: `description` does.
 */
export interface TotalRule {
  rule: 'total'
  max: number
  of: readonly { key: string; sum?: string }[]
  field: string
  text: (max: number, total: number) => string
  description: string
}

export type ObjectRule = SomeRule | TotalRule

/** Described, never refused here: the handler judges it (a sign-in's token: a wrong one is a failed sign-in, 401). */
export interface CredentialNode extends Described {
  type: 'credential'
}

export type BodyNode = StringNode | IntegerNode | ArrayNode | ObjectNode | CredentialNode

/** The first problem of a body: its message, and where it is. */
export interface BodyProblem {
  message: string
  field?: string
}

// --- checking ---------------------------------------------------------------------------------

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)
const member = (path: string, key: string) => (path === '' ? key : `${path}.${key}`)
const tell = (path: string, text: string): BodyProblem => (path === '' ? { message: text } : { message: `${path}: ${text}`, field: path })
const told = (said: Said, path: string): BodyProblem =>
  typeof said === 'string' ? tell(path, said) : tell(member(path, said.field), said.text)
const present = (o: Record<string, unknown>, key: string) => Object.hasOwn(o, key) && o[key] !== undefined

/** What a missing required member is told: the node's own `wrong`. */
function wrongOf(node: BodyNode): Said {
  return node.type === 'credential' ? 'is required' : node.wrong
}

/** The first problem of `value` against `node`, or undefined if it passes; `path` names where the value is. */
export function checkBody(node: BodyNode, value: unknown, path = ''): BodyProblem | undefined {
  switch (node.type) {
    case 'credential':
      return undefined
    case 'string':
      if (node.absent?.includes(value as string | null)) return undefined
      if (typeof value !== 'string' || (node.pattern !== undefined && !node.pattern.test(value))) return tell(path, node.wrong)
      return undefined
    case 'integer':
      if (
        typeof value !== 'number' ||
        !Number.isInteger(value) ||
        value < node.minimum ||
        (node.maximum !== undefined && value > node.maximum)
      )
        return tell(path, node.wrong)
      return undefined
    case 'array':
      return checkArray(node, value, path)
    case 'object':
      return checkObject(node, value, path)
  }
}

function checkArray(node: ArrayNode, value: unknown, path: string): BodyProblem | undefined {
  if (!Array.isArray(value) || (node.minItems !== undefined && value.length < node.minItems)) return tell(path, node.wrong)
  if (node.maxItems !== undefined && value.length > node.maxItems)
    return tell(path, node.tooLong?.(node.maxItems, value.length) ?? node.wrong)
  const seen = new Set<unknown>()
  for (const [i, element] of value.entries()) {
    const problem = checkBody(node.items, element, `${path}[${i}]`)
    if (problem !== undefined) return problem
    if (node.uniqueBy !== undefined) {
      const key = (element as Record<string, unknown>)[node.uniqueBy.key]
      if (seen.has(key)) return tell(path, node.uniqueBy.text(String(key)))
      seen.add(key)
    }
  }
  if (node.unique !== undefined && new Set(value).size !== value.length) return tell(path, node.unique)
  return undefined
}

function checkObject(node: ObjectNode, value: unknown, path: string): BodyProblem | undefined {
  if (!isObject(value)) return told(node.wrong, path)
  if (typeof node.unknown === 'string') {
    for (const key of Object.keys(value)) if (!Object.hasOwn(node.properties, key)) return tell(member(path, key), node.unknown)
  }
  for (const [key, child] of Object.entries(node.properties)) {
    if (!present(value, key)) {
      if (node.required?.includes(key)) return told(wrongOf(child), member(path, key))
      continue
    }
    const problem = checkBody(child, value[key], member(path, key))
    if (problem !== undefined) return problem
  }
  for (const rule of node.rules ?? []) {
    const problem = rule.rule === 'some' ? checkSome(rule, value, path) : checkTotal(rule, value, path)
    if (problem !== undefined) return problem
  }
  return undefined
}

function checkSome(rule: SomeRule, value: Record<string, unknown>, path: string): BodyProblem | undefined {
  const there = rule.keys.filter((key) => present(value, key))
  const last = there.at(-1)
  if (last === undefined) return told(rule.missing, path)
  if (there.every((key) => (value[key] as unknown[]).length === 0)) return tell(member(path, last), rule.empty[last] ?? 'must not be empty')
  return undefined
}

function checkTotal(rule: TotalRule, value: Record<string, unknown>, path: string): BodyProblem | undefined {
  let total = 0
  for (const { key, sum } of rule.of) {
    const list = present(value, key) ? (value[key] as unknown[]) : []
    total += sum === undefined ? list.length : list.reduce<number>((n, e) => n + ((e as Record<string, number>)[sum] ?? 0), 0)
  }
  return total > rule.max ? tell(member(path, rule.field), rule.text(rule.max, total)) : undefined
}

/**
 * The body as `node` describes it, or an AnteroomError with `code` (ERR_BODY, ERR_BAD_REQUEST: each
 * route's own) naming the first problem and its field. T is the caller's type for what passed.
 */
export function readBody<T>(node: ObjectNode, value: unknown, code: ErrorCode): T {
  const problem = checkBody(node, value)
  if (problem !== undefined) throw new AnteroomError(code, problem.message, { field: problem.field })
  return value as T
}

// --- as JSON Schema ---------------------------------------------------------------------------

/** A RegExp as a JSON Schema pattern (ECMA-262, the same syntax); a flag would change its meaning, so none is allowed. */
export function patternOf(re: RegExp): string {
  if (re.flags !== '') throw new TypeError(`a pattern for JSON Schema cannot have flags: /${re.source}/${re.flags}`)
  return re.source
}

function withDescription(schema: JsonSchema, ...parts: (string | undefined)[]): JsonSchema {
  const text = parts.filter((p) => p !== undefined && p !== '').join(' ')
  return text === '' ? schema : { ...schema, description: text }
}

/** The JSON Schema of a body node: what checkBody accepts, with what JSON Schema cannot say in words. */
export function jsonSchemaOf(node: BodyNode): JsonSchema {
  switch (node.type) {
    case 'credential':
      return withDescription({ type: 'string' }, node.description)
    case 'string': {
      const schema: JsonSchema = { type: 'string', ...(node.pattern === undefined ? {} : { pattern: patternOf(node.pattern) }) }
      if (node.absent === undefined) return withDescription(schema, node.description)
      const absent = `Read as left out: ${node.absent.map((v) => JSON.stringify(v)).join(', ')}.`
      return withDescription({ anyOf: [schema, { enum: [...node.absent] }] }, node.description, absent)
    }
    case 'integer':
      return withDescription(
        { type: 'integer', minimum: node.minimum, ...(node.maximum === undefined ? {} : { maximum: node.maximum }) },
        node.description,
      )
    case 'array':
      return withDescription(
        {
          type: 'array',
          items: jsonSchemaOf(node.items),
          ...(node.minItems === undefined ? {} : { minItems: node.minItems }),
          ...(node.maxItems === undefined ? {} : { maxItems: node.maxItems }),
          ...(node.unique === undefined ? {} : { uniqueItems: true }),
        },
        node.description,
        node.uniqueBy === undefined ? undefined : `No two elements have the same ${node.uniqueBy.key}.`,
      )
    case 'object':
      return objectSchema(node)
  }
}

function objectSchema(node: ObjectNode): JsonSchema {
  const some = (node.rules ?? []).filter((r): r is SomeRule => r.rule === 'some')
  const totals = (node.rules ?? []).filter((r): r is TotalRule => r.rule === 'total')
  const schema: JsonSchema = {
    type: 'object',
    properties: Object.fromEntries(Object.entries(node.properties).map(([key, child]) => [key, jsonSchemaOf(child)])),
    ...(node.required === undefined || node.required.length === 0 ? {} : { required: [...node.required] }),
    ...(typeof node.unknown === 'string' ? { additionalProperties: false } : {}),
  }
  // One rule "some" is an anyOf; more would each need one, in an allOf (none needs it yet).
  if (some.length > 1) throw new TypeError('one "some" rule per object')
  const rule = some[0]
  if (rule !== undefined)
    schema.anyOf = rule.keys.map((key) => ({ required: [key], properties: { [key]: { type: 'array', minItems: 1 } } }))
  return withDescription(schema, node.description, ...totals.map((t) => t.description))
}
