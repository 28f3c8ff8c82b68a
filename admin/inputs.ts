// What the admin API reads from requests, as values: the sign-in and bulk-end bodies (schema values,
// core/body-schema.ts), visitor ids, account names and audit kinds. routes/*.ts check requests with
// them and the edge's API description (src/http/api-description.ts) shows the same ones.
import type { ObjectNode } from '../src/core/body-schema.js'

/** A visitor id, as the queue token and the admission's `sub` carry it. */
export const VISITOR_ID = /^[A-Za-z0-9_-]{1,64}$/
/** An admin account's name (ANTEROOM_ADMIN_TOKENS). */
export const ACCOUNT_NAME = /^[A-Za-z0-9_.@-]{1,64}$/
/** A room's revision as its ETag (and the If-Match of a settings write): `"rev-N"`. */
export const ETAG = /^"rev-(\d+)"$/
/** GET /api/audit?kind=: one kind of entry only. */
export const AUDIT_KINDS = ['changes', 'actions'] as const
/** A bulk end carries up to MAX_BULK visitor ids of up to 64 characters. */
export const MAX_BULK = 1000

/** POST /admin/login: the token, and optionally the account it must be; other members are ignored. */
export const SIGN_IN_BODY: ObjectNode = {
  type: 'object',
  unknown: { ignored: true },
  wrong: 'The body must be a JSON object',
  properties: {
    name: {
      type: 'string',
      pattern: ACCOUNT_NAME,
      absent: [null, ''],
      wrong: 'not an account name (up to 64 letters, digits and _.@-)',
      description: 'The account the token must be (a name of ANTEROOM_ADMIN_TOKENS; admin for ANTEROOM_ADMIN_TOKEN).',
    },
    // Judged by the sign-in itself: a missing or wrong token is a failed sign-in (401, throttled), not a 400.
    token: { type: 'credential', description: 'An admin token. Without a valid one the answer is 401, and the failure is counted.' },
  },
}

/** POST /api/rooms/:id/sessions/end: the visitors whose sessions end; other members are ignored. */
export const BULK_END_BODY: ObjectNode = {
  type: 'object',
  unknown: { ignored: true },
  wrong: 'The body must be a JSON object',
  required: ['visitors'],
  properties: {
    visitors: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_BULK,
      wrong: `must be a list of 1 to ${MAX_BULK} visitor ids`,
      items: { type: 'string', pattern: VISITOR_ID, wrong: 'not a visitor id' },
      description: 'Visitor ids (a repeated one counts once).',
    },
  },
}

/** The file name of an admin UI module (admin/ui/<name>.js, AdminAssets.modules): lower-case words and dashes. */
export const ADMIN_MODULE = /^[a-z][a-z0-9-]{0,63}\.js$/
